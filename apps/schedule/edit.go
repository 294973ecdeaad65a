package schedule

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/loomkit/loom/graph"
)

// This file is the edits a person asks for by hand ("把高数复习#1挪到周五
// 上午", "move 英语阅读#2 to friday evening"), read without a model: a task
// named in the message, and the day (with a part of it or a range of
// slots) it goes to. An edit that is understood becomes a one-step plan
// whose move is confirmed on a tool card; one that is not is answered
// plainly, saying what was not understood.

// editMark starts the step of a manual edit.
const editMark = "手动调整："

// reEditVerb finds a request to move a task somewhere.
var reEditVerb = regexp.MustCompile(`(挪|移|换|放|调|改|排|安排|搬)(到|去|至|在)|\bmove\b|\bput\b|\breschedule\b|\bshift\b`)

// reEditStep reads the move back from an edit step's done-when text.
var reEditStep = regexp.MustCompile(`(move|place) task_id=(\d+) day=(\d+) start=(\d+)`)

// reClassStep reads a class's new excluded days back from an edit step.
var reClassStep = regexp.MustCompile(`upsert_task_class class_id=(\d+) excluded=([\d,]+)`)

// classEdit reads a request to keep one class of tasks off some days
// ("周四别排物理", "no physics on thursday"): a word of not wanting, days,
// and a class named by its name or subject. It becomes a plan of two
// steps: the class's excluded days, changed on a tool card (its tasks on
// those days go back to pending), and a rough schedule that places them
// again. It reports false when the message asks for no such thing.
func (a *Agent) classEdit(ctx context.Context, s *State, sch *Schedule, avoid []Avoid) bool {
	l := strings.ToLower(s.Message)
	if !containsAny(l, busyWords) && !containsAny(" "+l+" ", busyWordsEN) {
		return false
	}
	days := parseDays(s.Message)
	if len(days) == 0 {
		return false
	}
	var c *TaskClass
	for i, cl := range sch.Classes {
		subj := strings.ToLower(cl.Profile.Subject)
		if strings.Contains(l, strings.ToLower(cl.Name)) || (subj != "" && strings.Contains(l, subj)) || (englishSubject[subj] != "" && strings.Contains(l, englishSubject[subj])) {
			c = &sch.Classes[i]
			break
		}
	}
	if c == nil {
		return false
	}
	excluded := slices.Clone(c.ExcludedDays)
	for _, d := range days {
		if !slices.Contains(excluded, d) {
			excluded = append(excluded, d)
		}
	}
	slices.Sort(excluded)
	s.Notes, s.Avoid, s.Pending = nil, avoid, nil
	if slices.Equal(excluded, c.ExcludedDays) {
		s.Phase = phaseChatting
		s.Reply = fmt.Sprintf("%s 本来就不排在 %s，日程不用改。", c.Name, dayList(days))
		a.say(ctx, s.Reply)
		return true
	}
	list := make([]string, len(excluded))
	for i, d := range excluded {
		list[i] = strconv.Itoa(d)
	}
	steps := []Step{{Content: fmt.Sprintf("%s%s 以后不排在 %s", editMark, c.Name, dayList(days)),
		DoneWhen: fmt.Sprintf("确认后完成（upsert_task_class class_id=%d excluded=%s）", c.ID, strings.Join(list, ","))}}
	moved := 0
	for _, it := range sch.Items {
		if it.Class == c.ID && it.Placed() && slices.Contains(days, sch.Window.Day(it.Day).DayOfWeek) {
			moved++
		}
	}
	if moved > 0 {
		steps = append(steps, Step{Content: fmt.Sprintf("%s把 %d 个移出 %s 的 %s 重新放进日程", roughMark, moved, dayList(days), c.Name),
			DoneWhen: "每个待安排任务都有了位置，或者确认已没有可行的位置"})
	}
	s.Plan = Plan{Goal: strings.TrimSpace(s.Message), Complexity: "simple", Steps: steps}
	s.Phase, s.RoundBase, s.MsgBase = phaseExecuting, s.Exec.Rounds, len(s.Exec.Messages)
	s.HealthAt = round1(Measure(sch).Health())
	s.Exec.Tools = defaultView()
	s.Exec.Tools.Add(domainTaskClass)
	graph.Emit(ctx, graph.KindStatus, "这是一次手动调整："+clipRunes(steps[0].Content, 40))
	return true
}

// englishSubject names the sample's subjects in English.
var englishSubject = map[string]string{"数学": "math", "物理": "physics", "英语": "english"}

// editRequest is what a message asks to move, and where, as understood.
type editRequest struct {
	op    string // toolMove or toolPlace
	task  int
	name  string
	slots int
	to    Placement
	// problem, when set, says plainly what was not understood or cannot
	// be done; the request is not carried out.
	problem string
}

// manualEdit reads a manual edit in s.Message. It reports false when the
// message asks for none. An edit it understands becomes a one-step plan
// that starts executing at once (the move waits on its tool card); one it
// does not is answered with what was not understood.
func (a *Agent) manualEdit(ctx context.Context, s *State, sch *Schedule, avoid []Avoid) bool {
	if a.classEdit(ctx, s, sch, avoid) {
		return true
	}
	req, ok := parseEdit(s.Message, sch)
	if !ok {
		return false
	}
	if req.problem != "" {
		s.Phase, s.Reply = phaseChatting, req.problem
		a.say(ctx, req.problem)
		return true
	}
	where := sch.Where(req.to.Day, req.to.Start, req.slots)
	content := fmt.Sprintf("%s把 %s 移到 %s", editMark, req.name, where)
	if req.op == toolPlace {
		content = fmt.Sprintf("%s把 %s 放到 %s", editMark, req.name, where)
	}
	doneWhen := fmt.Sprintf("确认后完成（%s task_id=%d day=%d start=%d）", req.op, req.task, req.to.Day+1, req.to.Start+1)
	s.Plan = Plan{Goal: strings.TrimSpace(s.Message), Complexity: "simple", Steps: []Step{{Content: content, DoneWhen: doneWhen}}}
	s.Notes, s.Avoid, s.Pending = nil, avoid, nil
	s.Phase, s.RoundBase, s.MsgBase = phaseExecuting, s.Exec.Rounds, len(s.Exec.Messages)
	s.HealthAt = round1(Measure(sch).Health())
	s.Exec.Tools = defaultView()
	s.Exec.Tools.Add(domainSchedule, packEdit)
	graph.Emit(ctx, graph.KindStatus, "这是一次手动调整："+clipRunes(content, 40))
	return true
}

// parseEdit reads a request to move one task: its name (an item, or an
// event that is not locked) and where to ("周五上午", "周五第3-4节",
// "friday evening"). It reports false when text asks for no move.
func parseEdit(text string, sch *Schedule) (editRequest, bool) {
	low := strings.ToLower(text)
	loc := reEditVerb.FindStringIndex(low)
	if loc == nil {
		return editRequest{}, false
	}
	norm := func(s string) string {
		s = strings.ToLower(strings.NewReplacer(" ", "", "＃", "#", "号", "").Replace(s))
		return s
	}
	before, after := norm(low[:loc[0]]), low[loc[1]:]
	if strings.HasPrefix(strings.TrimSpace(low), "move") || strings.HasPrefix(strings.TrimSpace(low), "put") || strings.HasPrefix(strings.TrimSpace(low), "reschedule") || strings.HasPrefix(strings.TrimSpace(low), "shift") {
		// English: the task comes after the verb, the place after "to"/"on".
		rest := low[loc[1]:]
		if i := regexp.MustCompile(`\b(to|on|into)\b`).FindStringIndex(rest); i != nil {
			before, after = norm(rest[:i[0]]), rest[i[1]:]
		}
	}
	req := editRequest{}
	best := 0
	for _, it := range sch.Items {
		for _, n := range []string{norm(it.Name), norm(strings.Replace(it.Name, "#", "", 1))} {
			if len(n) > best && containsName(before, n) {
				best, req.op, req.task, req.name, req.slots = len(n), toolMove, it.ID, it.Name, it.Slots
				if !it.Placed() {
					req.op = toolPlace
				}
			}
		}
	}
	var locked *Event
	for i, e := range sch.Events {
		if n := norm(e.Name); len(n) > best && strings.Contains(before, n) {
			if e.Locked {
				locked = &sch.Events[i]
				continue
			}
			best, req.op, req.task, req.name, req.slots = len(n), toolMove, e.ID, e.Name, e.Slots
		}
	}
	if best == 0 {
		english := before != norm(low[:loc[0]])
		if locked == nil && !english && !strings.Contains(before, "把") {
			return editRequest{}, false // "帮我安排到周末前": a request, not an edit of one task
		}
		switch {
		case locked != nil:
			req.problem = fmt.Sprintf("%s 是锁定的课程，不能移动。可以移动的是待办任务（比如 %s）和没有锁定的活动。", locked.Name, exampleItem(sch))
		default:
			req.problem = "没看懂要移动哪个任务。" + classHint(sch, before) + "请写出任务的名字，比如「把 " + exampleItem(sch) + " 挪到周五上午」。"
		}
		return req, true
	}
	target := parseAvoids(after)
	if len(target) == 0 {
		req.problem = fmt.Sprintf("没看懂要把 %s 挪到哪里。请说星期几，可以加上午、下午、晚上或第几节，比如「把 %s 挪到周五上午」。", req.name, req.name)
		return req, true
	}
	dow := target[0].Day
	var span [2]int
	span[0], span[1] = 0, SlotsPerDay
	for _, t := range target {
		if t.Day == dow {
			f, e := t.span()
			span = [2]int{f, e}
			break
		}
	}
	day := -1
	for d := range sch.Window.Days {
		if sch.Window.Day(d).DayOfWeek == dow {
			day = d
			break
		}
	}
	want := Avoid{Day: dow, From: span[0] + 1, To: span[1]}.String()
	if day < 0 {
		req.problem = fmt.Sprintf("%s 不在这次安排的时间范围里（%s 到 %s）。", weekdayName(dow), sch.DayName(0), sch.DayName(sch.Window.Days-1))
		return req, true
	}
	if d, st, ok := placedAt(sch, req.task); ok && d == day && st >= span[0] && st+req.slots <= span[1] {
		req.problem = fmt.Sprintf("%s 已经在 %s，不用挪。日程没有改动。", req.name, sch.Where(d, st, req.slots))
		return req, true
	}
	start, why := fitIn(sch, req, day, span[0], span[1])
	if start < 0 {
		req.problem = fmt.Sprintf("%s 放不下 %s（%d 节）：%s。日程没有改动；可以换个时间再说一次。", want, req.name, req.slots, why)
		return req, true
	}
	req.to = Placement{Task: req.task, Day: day, Start: start}
	return req, true
}

// placedAt returns where the task (an item or an event) is, and false
// for an item not placed.
func placedAt(sch *Schedule, task int) (day, start int, ok bool) {
	if it := sch.Item(task); it != nil {
		return it.Day, it.Start, it.Placed()
	}
	for _, e := range sch.Events {
		if e.ID == task {
			return e.Day, e.Start, true
		}
	}
	return 0, 0, false
}

// containsName reports whether text names the task n, and not a longer
// number ("高数复习#1" is not in "高数复习#12").
func containsName(text, n string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], n)
		if j < 0 {
			return false
		}
		end := i + j + len(n)
		if end >= len(text) || text[end] < '0' || text[end] > '9' {
			return true
		}
		i = end
	}
}

// fitIn finds the first start in slots [from, to) of day where the task
// fits, or -1 and why not.
func fitIn(sch *Schedule, req editRequest, day, from, to int) (int, string) {
	t := sch.Clone()
	b := newBoard(t)
	var why string
	for st := from; st+req.slots <= to; st++ {
		var err error
		if i, ok := b.itemIndex[req.task]; ok {
			err = b.fitsItem(i, day, st)
		} else {
			for ei := range t.Events {
				if t.Events[ei].ID == req.task {
					if t.Events[ei].Day == day && t.Events[ei].Start == st {
						err = fmt.Errorf("it is there already: %w", ErrOverlap)
						break
					}
					b.markEvent(ei, 0)
					err = b.fitsEvent(ei, day, st)
					b.markEvent(ei, int32(ei+1))
				}
			}
		}
		if err == nil {
			return st, ""
		}
		if why == "" {
			why = reasonFor(sch, req, day, st, err)
		}
	}
	if why == "" {
		why = fmt.Sprintf("这段时间只有 %d 节", to-from)
	}
	return -1, why
}

// reasonFor says in words why a task does not fit at (day, start).
func reasonFor(sch *Schedule, req editRequest, day, start int, err error) string {
	if it := sch.Item(req.task); it != nil {
		if c := sch.Class(it.Class); c != nil && c.Excludes(sch.Window.Day(day).DayOfWeek) {
			return fmt.Sprintf("%s 这类任务设定了 %s 不排", c.Name, dayList(c.ExcludedDays))
		}
	}
	b := newBoard(sch)
	var held []string
	for k := range req.slots {
		c := day*SlotsPerDay + start + k
		if start+k >= SlotsPerDay {
			break
		}
		if o := b.event[c]; o != 0 {
			held = append(held, fmt.Sprintf("第%d节是 %s", start+k+1, sch.Events[o-1].Name))
		} else if o := b.item[c]; o != 0 && sch.Items[o-1].ID != req.task {
			held = append(held, fmt.Sprintf("第%d节有 %s", start+k+1, sch.Items[o-1].Name))
		}
	}
	if len(held) > 0 {
		return strings.Join(held, "，")
	}
	return "那里已被占用"
}

// exampleItem names a task for a hint.
func exampleItem(sch *Schedule) string {
	if len(sch.Items) > 0 {
		return sch.Items[0].Name
	}
	return "高数复习#1"
}

// classHint lists the tasks of a class the text names without saying
// which one ("把高数复习挪到周五").
func classHint(sch *Schedule, text string) string {
	for _, c := range sch.Classes {
		if !strings.Contains(text, strings.ToLower(c.Name)) {
			continue
		}
		var names []string
		for _, it := range sch.Items {
			if it.Class == c.ID {
				names = append(names, it.Name)
			}
		}
		if len(names) > 0 {
			return fmt.Sprintf("%s 有 %d 个：%s，要挪哪一个？", c.Name, len(names), strings.Join(names, "、"))
		}
	}
	return ""
}

// editCall reads the change of an edit step's instruction: the tool and
// its arguments.
func editCall(instruction string, sch *Schedule) (string, any, bool) {
	if m := reClassStep.FindStringSubmatch(instruction); m != nil {
		id, _ := strconv.Atoi(m[1])
		c := sch.Class(id)
		if c == nil {
			return "", nil, false
		}
		var days []int
		for _, f := range strings.Split(m[2], ",") {
			if d, err := strconv.Atoi(f); err == nil {
				days = append(days, d)
			}
		}
		return toolUpsertClass, classArgs{ID: id, Name: c.Name, ExcludedDays: days}, true
	}
	m := reEditStep.FindStringSubmatch(instruction)
	if m == nil {
		return "", nil, false
	}
	id, _ := strconv.Atoi(m[2])
	day, _ := strconv.Atoi(m[3])
	start, _ := strconv.Atoi(m[4])
	pos := posArgs{TaskID: id, Day: day, Start: start}
	if m[1] == toolPlace {
		return toolPlace, placeArgs{Items: []posArgs{pos}}, true
	}
	return toolMove, pos, true
}
