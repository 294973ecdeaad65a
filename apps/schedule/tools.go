package schedule

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/tool"
)

// Tool domains and packs (工具域与二级包). The model sees the
// schedule domain's read tools and the optimize pack by default; it adds
// the edit pack or the taskclass domain with context_tools_add when the
// person asks for a change by hand.
const (
	domainSchedule  = "schedule"
	domainTaskClass = "taskclass"
	packOptimize    = "optimize"
	packEdit        = "edit"
)

// Tool names.
const (
	toolOverview       = "get_overview"
	toolQueryRange     = "query_range"
	toolFindFree       = "find_free"
	toolListTasks      = "list_tasks"
	toolTaskInfo       = "get_task_info"
	toolPlace          = "place"
	toolMove           = "move"
	toolSwap           = "swap"
	toolBatchMove      = "batch_move"
	toolUnplace        = "unplace"
	toolUpsertClass    = "upsert_task_class"
	toolAnalyzeHealth  = "analyze_health"
	toolApplyCandidate = "apply_candidate"
	toolAskUser        = "ask_user"
)

// defaultView is what the model sees when a plan starts executing.
func defaultView() tool.View {
	var v tool.View
	v.Add(domainSchedule, packOptimize)
	return v
}

// Arguments of the tools. Days and slots count from 1, as people say them
// (第1节); the domain counts from 0.
type (
	noArgs    struct{}
	rangeArgs struct {
		Day  int `json:"day" jsonschema:"minimum=1,description=day of the window from 1"`
		From int `json:"from,omitempty" jsonschema:"minimum=1,maximum=12,description=first slot (default 1)"`
		To   int `json:"to,omitempty" jsonschema:"minimum=1,maximum=12,description=last slot (default 12)"`
	}
	freeArgs struct {
		Slots  int `json:"slots" jsonschema:"minimum=1,maximum=12,description=how many consecutive slots"`
		Day    int `json:"day,omitempty" jsonschema:"minimum=1,description=only this day"`
		TaskID int `json:"task_id,omitempty" jsonschema:"description=for this task: keeps off the days its class excludes"`
	}
	listArgs struct {
		Status  string `json:"status,omitempty" jsonschema:"enum=pending,enum=placed"`
		ClassID int    `json:"class_id,omitempty"`
		Day     int    `json:"day,omitempty" jsonschema:"minimum=1"`
	}
	taskArgs struct {
		TaskID int `json:"task_id"`
	}
	posArgs struct {
		TaskID int `json:"task_id"`
		Day    int `json:"day" jsonschema:"minimum=1,description=day of the window from 1"`
		Start  int `json:"start" jsonschema:"minimum=1,maximum=12,description=first slot from 1"`
	}
	placeArgs struct {
		Items []posArgs `json:"items" jsonschema:"minItems=1"`
	}
	swapArgs struct {
		A int `json:"task_a"`
		B int `json:"task_b"`
	}
	batchArgs struct {
		Moves []posArgs `json:"moves" jsonschema:"minItems=1"`
	}
	newItems struct {
		Count int    `json:"count" jsonschema:"minimum=1,maximum=20"`
		Slots int    `json:"slots" jsonschema:"minimum=1,maximum=12"`
		Name  string `json:"name,omitempty" jsonschema:"description=item name prefix (default: the class name)"`
	}
	classArgs struct {
		ID           int       `json:"id,omitempty" jsonschema:"description=the class to change; omit to create one"`
		Name         string    `json:"name"`
		Subject      string    `json:"subject,omitempty"`
		Difficulty   int       `json:"difficulty,omitempty" jsonschema:"minimum=1,maximum=3"`
		Prefer       string    `json:"prefer,omitempty" jsonschema:"enum=morning,enum=afternoon,enum=evening,enum=any"`
		ExcludedDays []int     `json:"excluded_days_of_week,omitempty" jsonschema:"description=days of the week to keep free: 1 Monday to 7 Sunday"`
		Strategy     string    `json:"strategy,omitempty" jsonschema:"enum=steady,enum=rapid"`
		AddItems     *newItems `json:"add_items,omitempty"`
	}
	healthArgs struct {
		Avoid []int   `json:"avoid_days_of_week,omitempty" jsonschema:"description=days of the week (1 Monday to 7 Sunday) the person wants kept free"`
		Times []Avoid `json:"avoid_times,omitempty" jsonschema:"description=parts of days the person wants kept free: day_of_week with from_slot and to_slot (1 to 12)"`
	}
	applyArgs struct {
		Index    int     `json:"index" jsonschema:"minimum=0,description=the candidate's index in analyze_health's list"`
		Revision int64   `json:"revision" jsonschema:"description=the revision analyze_health reported"`
		Avoid    []int   `json:"avoid_days_of_week,omitempty" jsonschema:"description=the same avoid_days_of_week given to analyze_health"`
		Times    []Avoid `json:"avoid_times,omitempty" jsonschema:"description=the same avoid_times given to analyze_health"`
	}
	askArgs struct {
		Question string `json:"question"`
	}
)

func (p posArgs) placement() Placement {
	return Placement{Task: p.TaskID, Day: p.Day - 1, Start: p.Start - 1}
}

// newTools builds the agent's registry.
func (a *Agent) newTools() (*tool.Registry, error) {
	reg := tool.NewRegistry()
	reads := []tool.Tool{
		tool.New(toolOverview, "Overview of the schedule window: each day's courses, tasks and free slots, the task classes, the pending items and the health score.", tool.Read, a.overview),
		tool.New(toolQueryRange, "What holds each slot of one day (courses, tasks, free).", tool.Read, a.queryRange),
		tool.New(toolFindFree, "Find free runs of consecutive slots where a task of that length fits.", tool.Read, a.findFree),
		tool.New(toolListTasks, "List task items, filtered by status, class or day.", tool.Read, a.listTasks),
		tool.New(toolTaskInfo, "Details of one task item or event: class, position, and the event it is embedded in.", tool.Read, a.taskInfo),
	}
	optimize := []tool.Tool{
		tool.New(toolAnalyzeHealth, "Diagnose the schedule: health score, rhythm/tightness/profile/feasibility metrics, issues, and the candidate changes (placements of pending items, moves, swaps) ranked by gain, with the stagnation signal and the forced-imperfection verdict. Call it before choosing a candidate.", tool.Read, a.analyzeHealth),
		tool.New(toolApplyCandidate, "Apply one candidate of analyze_health's latest list, by index, with the revision it reported. This is how changes are chosen: the backend proposes, you choose.", tool.Write, a.applyCandidate,
			tool.WithSummary(a.describeCandidate)),
	}
	edit := []tool.Tool{
		tool.New(toolPlace, "Place pending items at positions, all or none.", tool.Write, a.place, tool.WithSummary(a.describePlace)),
		tool.New(toolMove, "Move a placed item or an unlocked event to a new position.", tool.Write, a.move, tool.WithSummary(a.describeMove)),
		tool.New(toolSwap, "Swap the positions of two placed tasks of equal length.", tool.Write, a.swap, tool.WithSummary(a.describeSwap)),
		tool.New(toolBatchMove, "Move several tasks at once, all or none; they may take each other's slots.", tool.Write, a.batchMove, tool.WithSummary(a.describeBatch)),
		tool.New(toolUnplace, "Take a placed item off the schedule, back to pending.", tool.Write, a.unplace, tool.WithSummary(a.describeUnplace)),
	}
	classes := []tool.Tool{
		tool.New(toolUpsertClass, "Create or change a task class (profile, excluded days, strategy) and optionally add pending items to it.", tool.Write, a.upsertClass,
			tool.WithSummary(func(_ context.Context, c classArgs) string { return describeClass(c) })),
	}
	core := []tool.Tool{
		tool.New(toolAskUser, "Ask the person a question and wait for the answer.", tool.Read, a.askUser),
	}
	for _, r := range []struct {
		domain, pack string
		tools        []tool.Tool
	}{
		{domainSchedule, "", reads}, {domainSchedule, packOptimize, optimize}, {domainSchedule, packEdit, edit},
		{domainTaskClass, "", classes}, {"", "", core},
	} {
		if err := reg.Register(r.domain, r.pack, r.tools...); err != nil {
			return nil, err
		}
	}
	if err := reg.RegisterContextTools(); err != nil {
		return nil, err
	}
	return reg, nil
}

// owner is whose schedule a run works on: the API key behind the run in
// Loom's server when it has keys (server.Caller), else Config.Owner.
func (a *Agent) owner(ctx context.Context) string {
	if o := server.Caller(ctx); o != "" {
		return o
	}
	return a.cfg.Owner
}

// load reads the schedule of the run's owner; an API key's first run
// starts it with the sample schedule, as DefaultOwner starts.
func (a *Agent) load(ctx context.Context) (*Schedule, error) {
	if a.cfg.Store == nil {
		return nil, errors.New("schedule: the agent has no store")
	}
	owner := a.owner(ctx)
	s, err := a.cfg.Store.Load(ctx, owner)
	if errors.Is(err, ErrNoSchedule) && owner != a.cfg.Owner {
		if _, err := a.cfg.Store.EnsureSample(ctx, owner); err != nil {
			return nil, err
		}
		return a.cfg.Store.Load(ctx, owner)
	}
	return s, err
}

// write loads the schedule, lets change edit a copy and commits the
// difference in one transaction. A graph step that runs again (after a
// crash before its checkpoint) gets the result of its first commit, found
// by graph.StepKey, instead of changing the schedule twice. A commit that
// loses a race with another writer is tried again on the new revision.
func (a *Agent) write(ctx context.Context, change func(s *Schedule) (string, error)) (string, error) {
	if a.cfg.Store == nil {
		return "", errors.New("schedule: the agent has no store")
	}
	key := graph.StepKey(ctx)
	if key != "" {
		if res, ok, err := a.cfg.Store.committed(ctx, a.owner(ctx), key); err != nil || ok {
			return res, err
		}
	}
	for attempt := 1; ; attempt++ {
		before, err := a.load(ctx)
		if err != nil {
			return "", err
		}
		after := before.Clone()
		result, err := change(after)
		if err != nil {
			return "", err
		}
		h0, h1 := Measure(before).Health(), Measure(after).Health()
		result += fmt.Sprintf("（健康度 %.1f → %.1f，修订 %d）", h0, h1, before.Revision+1)
		err = a.cfg.Store.commit(ctx, before, after, key, result)
		if errors.Is(err, ErrConflict) && attempt < 3 {
			continue
		}
		if err != nil {
			return "", err
		}
		return result, nil
	}
}

// describe loads the run owner's schedule to describe a call for a
// confirm card.
func (a *Agent) describe(ctx context.Context, f func(s *Schedule) string) string {
	s, err := a.load(ctx)
	if err != nil {
		return "（无法读取日程：" + err.Error() + "）"
	}
	return f(s)
}

type dayView struct {
	Day        int    `json:"day"`
	Name       string `json:"name"`
	Courses    int    `json:"course_slots"`
	Tasks      int    `json:"task_slots"`
	Free       int    `json:"free_slots"`
	Embeddable int    `json:"embeddable_slots"`
}

type itemView struct {
	ID     int    `json:"task_id"`
	Name   string `json:"name"`
	Class  int    `json:"class_id"`
	Slots  int    `json:"slots"`
	Status string `json:"status"`
	Where  string `json:"where,omitempty"`
}

func itemOf(s *Schedule, it *Item) itemView {
	v := itemView{ID: it.ID, Name: it.Name, Class: it.Class, Slots: it.Slots, Status: it.Status}
	if it.Placed() {
		v.Where = s.Where(it.Day, it.Start, it.Slots)
	}
	return v
}

func (a *Agent) overview(ctx context.Context, _ noArgs) (any, error) {
	s, err := a.load(ctx)
	if err != nil {
		return nil, err
	}
	b := newBoard(s)
	days := make([]dayView, s.Window.Days)
	for d := range days {
		dv := dayView{Day: d + 1, Name: s.DayName(d)}
		for sl := range SlotsPerDay {
			c := d*SlotsPerDay + sl
			switch {
			case b.event[c] != 0 || b.host[c] != 0:
				dv.Courses++
			case b.item[c] == 0:
				dv.Free++
			}
			if b.item[c] != 0 {
				dv.Tasks++
			}
			if b.host[c] != 0 && b.item[c] == 0 {
				dv.Embeddable++
			}
		}
		days[d] = dv
	}
	var pending []itemView
	for i := range s.Items {
		if !s.Items[i].Placed() {
			pending = append(pending, itemOf(s, &s.Items[i]))
		}
	}
	return map[string]any{
		"revision": s.Revision, "window": s.Window, "days": days, "classes": s.Classes,
		"pending": pending, "placed": len(s.Items) - len(pending), "health": round1(Measure(s).Health()),
	}, nil
}

func (a *Agent) queryRange(ctx context.Context, args rangeArgs) (string, error) {
	s, err := a.load(ctx)
	if err != nil {
		return "", err
	}
	d := args.Day - 1
	if d < 0 || d >= s.Window.Days {
		return "", fmt.Errorf("day %d: the window has days 1 to %d: %w", args.Day, s.Window.Days, ErrOutOfRange)
	}
	from, to := max(1, args.From), args.To
	if to == 0 || to > SlotsPerDay {
		to = SlotsPerDay
	}
	b := newBoard(s)
	var lines []string
	for sl := from - 1; sl < to; sl++ {
		c := d*SlotsPerDay + sl
		var what []string
		if e := b.event[c]; e != 0 {
			ev := s.Events[e-1]
			what = append(what, fmt.Sprintf("%s（课程 #%d%s）", ev.Name, ev.ID, lockedText(ev.Locked)))
		}
		if e := b.host[c]; e != 0 {
			ev := s.Events[e-1]
			what = append(what, fmt.Sprintf("%s（课程 #%d%s，可嵌入）", ev.Name, ev.ID, lockedText(ev.Locked)))
		}
		if i := b.item[c]; i != 0 {
			it := s.Items[i-1]
			what = append(what, fmt.Sprintf("%s（任务 #%d）", it.Name, it.ID))
		}
		if len(what) == 0 {
			what = []string{"空闲"}
		}
		lines = append(lines, fmt.Sprintf("第%d节 %s", sl+1, strings.Join(what, " + ")))
	}
	return s.DayName(d) + "\n" + strings.Join(lines, "\n"), nil
}

func lockedText(locked bool) string {
	if locked {
		return "，锁定"
	}
	return ""
}

func (a *Agent) findFree(ctx context.Context, args freeArgs) (any, error) {
	s, err := a.load(ctx)
	if err != nil {
		return nil, err
	}
	// A probe item of the asked length, of the task's class if one is given.
	probe := Item{ID: -1, Name: "probe", Slots: args.Slots, Status: statusPending}
	if args.TaskID != 0 {
		it := s.Item(args.TaskID)
		if it == nil {
			return nil, fmt.Errorf("task %d: %w", args.TaskID, ErrNotFound)
		}
		probe.Class = it.Class
	}
	t := s.Clone()
	t.Items = append(t.Items, probe)
	b := newBoard(t)
	i := len(t.Items) - 1
	var out []string
	for d := range t.Window.Days {
		if args.Day != 0 && d != args.Day-1 {
			continue
		}
		for st := range SlotsPerDay {
			if b.canItem(i, d, st) && len(out) < 30 {
				out = append(out, fmt.Sprintf("day %d start %d: %s", d+1, st+1, t.Where(d, st, args.Slots)))
			}
		}
	}
	return map[string]any{"slots": args.Slots, "fits": out, "count": len(out)}, nil
}

func (a *Agent) listTasks(ctx context.Context, args listArgs) (any, error) {
	s, err := a.load(ctx)
	if err != nil {
		return nil, err
	}
	var out []itemView
	for i := range s.Items {
		it := &s.Items[i]
		if (args.Status != "" && it.Status != args.Status) || (args.ClassID != 0 && it.Class != args.ClassID) ||
			(args.Day != 0 && (!it.Placed() || it.Day != args.Day-1)) {
			continue
		}
		out = append(out, itemOf(s, it))
	}
	return map[string]any{"tasks": out, "count": len(out)}, nil
}

func (a *Agent) taskInfo(ctx context.Context, args taskArgs) (any, error) {
	s, err := a.load(ctx)
	if err != nil {
		return nil, err
	}
	if e := s.Event(args.TaskID); e != nil {
		return map[string]any{"event": e, "where": s.Where(e.Day, e.Start, e.Slots)}, nil
	}
	it := s.Item(args.TaskID)
	if it == nil {
		return nil, fmt.Errorf("task %d: %w", args.TaskID, ErrNotFound)
	}
	out := map[string]any{"task": itemOf(s, it), "class": s.Class(it.Class)}
	b := newBoard(s)
	if host := b.embedded(b.itemIndex[it.ID]); host != nil {
		out["embedded_in"] = fmt.Sprintf("%s（课程 #%d）", host.Name, host.ID)
	}
	return out, nil
}

func (a *Agent) analyzeHealth(ctx context.Context, args healthArgs) (Report, error) {
	s, err := a.load(ctx)
	if err != nil {
		return Report{}, err
	}
	return Analyze(s, ScanOptions{Avoid: args.Avoid, Times: args.Times}), nil
}

// candidate finds the candidate a call of apply_candidate names, checking
// that the schedule is still at the revision it was proposed for.
func candidate(s *Schedule, args applyArgs) (Candidate, error) {
	if s.Revision != args.Revision {
		return Candidate{}, fmt.Errorf("the schedule is at revision %d, not %d: call analyze_health again for fresh candidates: %w", s.Revision, args.Revision, ErrConflict)
	}
	r := Analyze(s, ScanOptions{Avoid: args.Avoid, Times: args.Times})
	if args.Index < 0 || args.Index >= len(r.Candidates) {
		return Candidate{}, fmt.Errorf("candidate %d: analyze_health lists %d candidates: %w", args.Index, len(r.Candidates), ErrNotFound)
	}
	return r.Candidates[args.Index], nil
}

func (a *Agent) applyCandidate(ctx context.Context, args applyArgs) (string, error) {
	return a.write(ctx, func(s *Schedule) (string, error) {
		c, err := candidate(s, args)
		if err != nil {
			return "", err
		}
		if err := c.Apply(s); err != nil {
			return "", err
		}
		return fmt.Sprintf("已应用候选 #%d：%s", c.Index, c.Summary), nil
	})
}

func (a *Agent) describeCandidate(ctx context.Context, args applyArgs) string {
	return a.describe(ctx, func(s *Schedule) string {
		c, err := candidate(s, args)
		if err != nil {
			return fmt.Sprintf("应用候选 #%d（%v）", args.Index, err)
		}
		// The card says what the write will report: the health before
		// and after, which leaves out the scan's cost of a task on a
		// time kept free, so a move off such a time says so instead of
		// showing a gain the week's health will not have.
		after := s.Clone()
		if err := c.Apply(after); err != nil {
			return fmt.Sprintf("应用候选 #%d（%v）", args.Index, err)
		}
		avoid := joinAvoids(args.Avoid, args.Times)
		freed := ""
		if n := len(blocked(s, avoid)) - len(blocked(after, avoid)); n > 0 {
			freed = fmt.Sprintf("，%d 个任务离开你要空出的时间", n)
		}
		return fmt.Sprintf("%s（健康度 %.1f → %.1f%s）", c.Summary, Measure(s).Health(), Measure(after).Health(), freed)
	})
}

func (a *Agent) place(ctx context.Context, args placeArgs) (string, error) {
	return a.write(ctx, func(s *Schedule) (string, error) {
		ps := make([]Placement, len(args.Items))
		for i, p := range args.Items {
			ps[i] = p.placement()
		}
		if err := s.Place(ps...); err != nil {
			return "", err
		}
		return "已放置：" + placementsText(s, ps), nil
	})
}

func placementsText(s *Schedule, ps []Placement) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		slots := 1
		if it := s.Item(p.Task); it != nil {
			slots = it.Slots
		} else if e := s.Event(p.Task); e != nil {
			slots = e.Slots
		}
		parts[i] = s.label(p.Task) + " → " + s.Where(p.Day, p.Start, slots)
	}
	return strings.Join(parts, "；")
}

func (a *Agent) describePlace(ctx context.Context, args placeArgs) string {
	return a.describe(ctx, func(s *Schedule) string {
		ps := make([]Placement, len(args.Items))
		for i, p := range args.Items {
			ps[i] = p.placement()
		}
		return "放置 " + placementsText(s, ps)
	})
}

func (a *Agent) move(ctx context.Context, args posArgs) (string, error) {
	return a.write(ctx, func(s *Schedule) (string, error) {
		if err := s.Move(args.placement()); err != nil {
			return "", err
		}
		return "已移动：" + placementsText(s, []Placement{args.placement()}), nil
	})
}

func (a *Agent) describeMove(ctx context.Context, args posArgs) string {
	return a.describe(ctx, func(s *Schedule) string { return "移动 " + placementsText(s, []Placement{args.placement()}) })
}

func (a *Agent) swap(ctx context.Context, args swapArgs) (string, error) {
	return a.write(ctx, func(s *Schedule) (string, error) {
		if err := s.Swap(args.A, args.B); err != nil {
			return "", err
		}
		return fmt.Sprintf("已交换 %s 与 %s", s.label(args.A), s.label(args.B)), nil
	})
}

func (a *Agent) describeSwap(ctx context.Context, args swapArgs) string {
	return a.describe(ctx, func(s *Schedule) string {
		return fmt.Sprintf("交换 %s 与 %s 的时段", s.label(args.A), s.label(args.B))
	})
}

func (a *Agent) batchMove(ctx context.Context, args batchArgs) (string, error) {
	return a.write(ctx, func(s *Schedule) (string, error) {
		ps := make([]Placement, len(args.Moves))
		for i, p := range args.Moves {
			ps[i] = p.placement()
		}
		if err := s.BatchMove(ps...); err != nil {
			return "", err
		}
		return "已批量移动：" + placementsText(s, ps), nil
	})
}

func (a *Agent) describeBatch(ctx context.Context, args batchArgs) string {
	return a.describe(ctx, func(s *Schedule) string {
		ps := make([]Placement, len(args.Moves))
		for i, p := range args.Moves {
			ps[i] = p.placement()
		}
		return "批量移动（全部成功或全部不变）" + placementsText(s, ps)
	})
}

func (a *Agent) unplace(ctx context.Context, args taskArgs) (string, error) {
	return a.write(ctx, func(s *Schedule) (string, error) {
		if err := s.Unplace(args.TaskID); err != nil {
			return "", err
		}
		return "已取消放置 " + s.label(args.TaskID) + "，它回到待安排", nil
	})
}

func (a *Agent) describeUnplace(ctx context.Context, args taskArgs) string {
	return a.describe(ctx, func(s *Schedule) string { return "取消放置 " + s.label(args.TaskID) })
}

func (a *Agent) upsertClass(ctx context.Context, args classArgs) (string, error) {
	return a.write(ctx, func(s *Schedule) (string, error) {
		c := s.Class(args.ID)
		if args.ID == 0 {
			s.Classes = append(s.Classes, TaskClass{ID: s.nextID(), Strategy: strategySteady, Profile: Profile{Difficulty: 2, Prefer: periodAny}})
			c = &s.Classes[len(s.Classes)-1]
		} else if c == nil {
			return "", fmt.Errorf("task class %d: %w", args.ID, ErrNotFound)
		}
		c.Name = args.Name
		if args.Subject != "" {
			c.Profile.Subject = args.Subject
		}
		if args.Difficulty != 0 {
			c.Profile.Difficulty = args.Difficulty
		}
		if args.Prefer != "" {
			c.Profile.Prefer = args.Prefer
		}
		if args.Strategy != "" {
			c.Strategy = args.Strategy
		}
		if args.ExcludedDays != nil {
			c.ExcludedDays = slices.Clone(args.ExcludedDays)
			slices.Sort(c.ExcludedDays)
			c.ExcludedDays = slices.Compact(c.ExcludedDays)
		}
		class := *c
		added := 0
		if n := args.AddItems; n != nil {
			prefix := cmp.Or(strings.TrimSpace(n.Name), class.Name)
			existing := 0
			for _, it := range s.Items {
				if it.Class == class.ID {
					existing++
				}
			}
			for k := range n.Count {
				s.Items = append(s.Items, Item{ID: s.nextID(), Class: class.ID, Name: fmt.Sprintf("%s#%d", prefix, existing+k+1), Slots: n.Slots, Status: statusPending})
				added++
			}
		}
		// Items already placed on a newly excluded day go back to pending.
		moved := 0
		for i := range s.Items {
			if it := &s.Items[i]; it.Class == class.ID && it.Placed() && class.Excludes(s.Window.Day(it.Day).DayOfWeek) {
				it.Status, it.Day, it.Start = statusPending, 0, 0
				moved++
			}
		}
		out := "已保存任务类 " + class.Name
		if added > 0 {
			out += fmt.Sprintf("，新增 %d 个待安排任务", added)
		}
		if moved > 0 {
			out += fmt.Sprintf("，%d 个任务因屏蔽日回到待安排", moved)
		}
		return out, nil
	})
}

func describeClass(c classArgs) string {
	verb := "新建"
	if c.ID != 0 {
		verb = "修改"
	}
	out := fmt.Sprintf("%s任务类 %s", verb, c.Name)
	if len(c.ExcludedDays) > 0 {
		out += "，屏蔽 " + dayList(c.ExcludedDays)
	}
	if c.Strategy != "" {
		out += "，策略 " + strategyName(c.Strategy)
	}
	if c.AddItems != nil {
		out += fmt.Sprintf("，新增 %d 个 %d 节的任务", c.AddItems.Count, c.AddItems.Slots)
	}
	return out
}

// askUser asks the person through an interrupt; on resume it returns the
// answer for the model.
func (a *Agent) askUser(ctx context.Context, args askArgs) (string, error) {
	ans, err := graph.Ask[Answer](ctx, Interaction{Kind: kindAskUser, Text: args.Question})
	if err != nil {
		return "", err
	}
	return answerText(ans), nil
}

// answerText is how the model reads an answer to ask_user.
func answerText(ans Answer) string {
	return "用户回答：" + strings.TrimSpace(ans.Text)
}
