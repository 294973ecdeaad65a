package schedule

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Candidate operations.
const (
	opPlace = "place"
	opMove  = "move"
	opSwap  = "swap"
)

// Candidate is a change the optimiser proposes: place the pending items,
// move one item, or swap two. Gain is what it adds to the health score (with
// the scan's penalty for avoided days).
type Candidate struct {
	Index   int     `json:"index"`
	Op      string  `json:"op"`
	Summary string  `json:"summary"`
	Gain    float64 `json:"gain"`
	// Moves are the new positions: every item placed, the item moved, or
	// both items swapped.
	Moves []Placement `json:"-"`
}

// Apply makes the change on s, all or nothing.
func (c Candidate) Apply(s *Schedule) error {
	switch {
	case c.Op == opPlace:
		return s.Place(c.Moves...)
	case c.Op == opMove && len(c.Moves) == 1:
		return s.Move(c.Moves[0])
	case c.Op == opSwap && len(c.Moves) == 2:
		return s.Swap(c.Moves[0].Task, c.Moves[1].Task)
	}
	return fmt.Errorf("apply candidate %d: malformed %s", c.Index, c.Op)
}

// RoughOptions configure RoughSchedule.
type RoughOptions struct {
	// Strategy, when set, replaces every class's own strategy.
	Strategy string
	// Avoid lists days of the week (1 = Monday) to keep free.
	Avoid []int
	// Times lists parts of days to keep free ("周三晚上").
	Times []Avoid
}

// RoughSchedule places the pending items of s by local rules and returns
// the placements, in the order made. It never breaks a lock, an excluded
// day or an overlap; it keeps to the daily maximum where it can, and
// prefers for each item its target day (steady: evenly spread over the
// days its class may use; rapid: the first), a day without another item
// of its class, its subject's period, a light day, and no long run of busy
// slots. Items with no legal position stay pending.
func RoughSchedule(s *Schedule, opt RoughOptions) []Placement {
	return rough(newBoard(s), newScoring(opt.Strategy, joinAvoids(opt.Avoid, opt.Times)))
}

func rough(b *board, sc scoring) []Placement {
	s := b.s
	ev := newEvaluator(b, sc)
	var pending []int
	byClass := map[int][]int{}
	for i := range s.Items {
		if !s.Items[i].Placed() {
			pending = append(pending, i)
			byClass[b.classIndex[i]] = append(byClass[b.classIndex[i]], i)
		}
	}
	allowedOf := func(ci int) []int {
		var days []int
		for d := range b.days {
			if (ci < 0 || slices.Contains(ev.allowed[ci], d)) && !sc.wholeDay(s.Window, d) {
				days = append(days, d)
			}
		}
		return days
	}
	target := make(map[int]int, len(pending))
	allowedDays := map[int]int{} // per class index: how many days it may use
	for ci, list := range byClass {
		a := allowedOf(ci)
		allowedDays[ci] = len(a)
		if len(a) == 0 {
			continue
		}
		var c *TaskClass
		if ci >= 0 {
			c = &s.Classes[ci]
		}
		for k, i := range list {
			target[i] = a[0]
			if sc.strategyOf(c) == strategySteady {
				target[i] = a[(2*k+1)*len(a)/(2*len(list))]
			}
		}
	}
	slices.SortStableFunc(pending, func(x, y int) int {
		return cmp.Or(cmp.Compare(s.Items[y].Slots, s.Items[x].Slots),
			cmp.Compare(allowedDays[b.classIndex[x]], allowedDays[b.classIndex[y]]),
			cmp.Compare(s.Items[x].Class, s.Items[y].Class), cmp.Compare(s.Items[x].ID, s.Items[y].ID))
	})

	loads := make([]int, b.days)
	classDay := map[[2]int]int{}
	for i := range s.Items {
		if it := &s.Items[i]; it.Placed() {
			loads[it.Day] += it.Slots
			classDay[[2]int{b.classIndex[i], it.Day}]++
		}
	}
	var out []Placement
	for _, i := range pending {
		it := &s.Items[i]
		c := b.class(i)
		tgt, hasTarget := target[i]
		bestDay, bestStart, best := -1, -1, math.Inf(1)
		for pass := 0; pass < 2 && bestDay < 0; pass++ {
			for d := range b.days {
				if sc.wholeDay(s.Window, d) {
					continue
				}
				if pass == 0 && s.Window.DailyMax > 0 && loads[d]+it.Slots > s.Window.DailyMax {
					continue
				}
				for st := range SlotsPerDay {
					if !b.canItem(i, d, st) || sc.blocks(s.Window, d, st, it.Slots) {
						continue
					}
					score := 0.3*float64(loads[d]) + float64(runExcess(b, d, st, it.Slots)) + 2*float64(classDay[[2]int{b.classIndex[i], d}])
					if hasTarget {
						score += 3 * float64(abs(d-tgt))
					}
					if c != nil {
						score += 3 * (1 - periodFit(c.Profile.Prefer, st))
					}
					if score < best {
						bestDay, bestStart, best = d, st, score
					}
				}
			}
		}
		if bestDay < 0 {
			continue
		}
		b.setItem(i, bestDay, bestStart)
		loads[bestDay] += it.Slots
		classDay[[2]int{b.classIndex[i], bestDay}]++
		out = append(out, Placement{Task: it.ID, Day: bestDay, Start: bestStart})
	}
	return out
}

// runExcess is how far a task at (day, start) would stretch the run of busy
// slots around it past maxRun.
func runExcess(b *board, day, start, slots int) int {
	run := slots
	for s := start - 1; s >= 0 && b.busy(day*SlotsPerDay+s); s-- {
		run++
	}
	for s := start + slots; s < SlotsPerDay && b.busy(day*SlotsPerDay+s); s++ {
		run++
	}
	return max(0, run-maxRun)
}

// change is a move (j < 0: item i to day, start) or a swap (items i, j).
type change struct {
	i, j       int
	day, start int
}

// scanChanges calls visit with every legal move and swap of the items
// movable allows, and its gain over base. No change puts a task on a time
// the person wants kept free. The board is as it was after.
func scanChanges(ev *evaluator, movable func(i int) bool, base float64, visit func(c change, gain float64)) {
	b := ev.b
	items := b.s.Items
	w := b.s.Window
	for i := range items {
		it := &items[i]
		if !it.Placed() || !movable(i) {
			continue
		}
		d0, s0 := it.Day, it.Start
		for d := range b.days {
			for st := range SlotsPerDay {
				if (d == d0 && st == s0) || !b.canItem(i, d, st) || ev.sc.blocks(w, d, st, it.Slots) {
					continue
				}
				b.setItem(i, d, st)
				visit(change{i: i, j: -1, day: d, start: st}, ev.objective()-base)
				b.setItem(i, d0, s0)
			}
		}
	}
	for i := range items {
		a := &items[i]
		if !a.Placed() || !movable(i) {
			continue
		}
		for j := i + 1; j < len(items); j++ {
			c := &items[j]
			if !c.Placed() || !movable(j) || c.Slots != a.Slots || b.classIndex[i] == b.classIndex[j] ||
				ev.sc.blocks(w, c.Day, c.Start, a.Slots) || ev.sc.blocks(w, a.Day, a.Start, c.Slots) {
				continue
			}
			ad, as, cd, cs := a.Day, a.Start, c.Day, c.Start
			b.clearItem(i)
			b.clearItem(j)
			if b.canItem(i, cd, cs) {
				b.setItem(i, cd, cs)
				if b.canItem(j, ad, as) {
					b.setItem(j, ad, as)
					visit(change{i: i, j: j}, ev.objective()-base)
					b.clearItem(j)
				}
				b.clearItem(i)
			}
			b.setItem(i, ad, as)
			b.setItem(j, cd, cs)
		}
	}
}

// candidate describes change c as it would be made on s.
func (c change) candidate(s *Schedule) Candidate {
	if c.j < 0 {
		it := &s.Items[c.i]
		return Candidate{Op: opMove, Moves: []Placement{{Task: it.ID, Day: c.day, Start: c.start}},
			Summary: fmt.Sprintf("把 %s 从 %s 移到 %s", it.Name, s.Where(it.Day, it.Start, it.Slots), s.Where(c.day, c.start, it.Slots))}
	}
	a, o := &s.Items[c.i], &s.Items[c.j]
	return Candidate{Op: opSwap, Moves: []Placement{{Task: a.ID, Day: o.Day, Start: o.Start}, {Task: o.ID, Day: a.Day, Start: a.Start}},
		Summary: fmt.Sprintf("交换 %s（%s）与 %s（%s）", a.Name, s.Where(a.Day, a.Start, a.Slots), o.Name, s.Where(o.Day, o.Start, o.Slots))}
}

// apply makes change c on the board.
func (c change) apply(b *board) {
	if c.j < 0 {
		b.setItem(c.i, c.day, c.start)
		return
	}
	a, o := &b.s.Items[c.i], &b.s.Items[c.j]
	ad, as, od, os := a.Day, a.Start, o.Day, o.Start
	b.clearItem(c.i)
	b.clearItem(c.j)
	b.setItem(c.i, od, os)
	b.setItem(c.j, ad, as)
}

// improve applies the best move or swap of the movable items again and
// again until none gains minGain or steps run out, and returns what it
// applied.
func improve(ev *evaluator, movable func(i int) bool, steps int) []Candidate {
	var done []Candidate
	for range steps {
		base := ev.objective()
		best, bestGain := change{}, minGain
		found := false
		scanChanges(ev, movable, base, func(c change, gain float64) {
			if gain > bestGain+1e-9 {
				best, bestGain, found = c, gain, true
			}
		})
		if !found {
			break
		}
		cand := best.candidate(ev.b.s)
		cand.Gain = bestGain
		best.apply(ev.b)
		done = append(done, cand)
	}
	return done
}

// Optimize improves s by its best move or swap, again and again, until no
// candidate gains minGain or maxSteps are taken, and returns the changes
// made, in order.
func Optimize(s *Schedule, maxSteps int) []Candidate {
	ev := newEvaluator(newBoard(s), scoring{})
	return improve(ev, func(int) bool { return true }, maxSteps)
}

// optimizeStep scans every move and swap of s once and applies the best,
// if it gains minGain. It reports whether it changed s.
func optimizeStep(s *Schedule) (Candidate, bool) {
	done := Optimize(s, 1)
	if len(done) == 0 {
		return Candidate{}, false
	}
	return done[0], true
}

// ScanOptions configure Analyze.
type ScanOptions struct {
	// Avoid lists days of the week (1 = Monday) the person wants free:
	// placements keep off them and moves off them gain.
	Avoid []int `json:"avoid_days_of_week,omitempty"`
	// Times lists parts of days the person wants free ("周三晚上"), with
	// the same effect on those slots alone.
	Times []Avoid `json:"avoid_times,omitempty"`
	// Limit caps the candidates listed (default 6).
	Limit int `json:"-"`
}

// Report is a diagnosis of a schedule: analyze_health's answer.
type Report struct {
	Revision int64    `json:"revision"`
	Health   float64  `json:"health"`
	Metrics  Metrics  `json:"metrics"`
	Pending  int      `json:"pending"`
	Issues   []string `json:"issues,omitempty"`
	// Candidates are the changes worth making, best first.
	Candidates []Candidate `json:"candidates"`
	// Stagnation: no candidate gains minGain.
	Stagnation bool `json:"stagnation"`
	// ForcedImperfection: the optimiser stagnated while issues remain,
	// which no single move or swap can fix.
	ForcedImperfection bool   `json:"forced_imperfection"`
	Verdict            string `json:"verdict"`
}

// Analyze measures s and scans the candidate changes. With pending items
// the candidates are whole placements of them: the rough schedule refined
// by moves and swaps of the new items, for the classes' own strategies
// and for the other strategy. Without, they are the best moves and swaps
// of the placed items. Analyze is deterministic: the same schedule and
// options give the same candidates in the same order.
func Analyze(s *Schedule, opt ScanOptions) Report {
	limit := opt.Limit
	if limit <= 0 {
		limit = 6
	}
	m := Measure(s)
	r := Report{Revision: s.Revision, Health: round1(m.Health()), Metrics: roundMetrics(m), Pending: len(s.Pending()), Issues: issues(s, 8)}
	avoid := joinAvoids(opt.Avoid, opt.Times)
	base := newEvaluator(newBoard(s.Clone()), newScoring("", avoid))
	for _, it := range s.Items {
		if it.Placed() && base.sc.blocks(s.Window, it.Day, it.Start, it.Slots) {
			r.Issues = append(r.Issues, fmt.Sprintf("%s 在你要空出的时间（%s）", it.Name, s.Where(it.Day, it.Start, it.Slots)))
		}
	}
	baseObj := base.objective()
	if r.Pending > 0 {
		r.Candidates = placeCandidates(s, avoid, baseObj)
	} else {
		r.Candidates = changeCandidates(base, baseObj, limit)
	}
	r.Candidates = slices.DeleteFunc(r.Candidates, func(c Candidate) bool { return c.Gain < minGain })
	if len(r.Candidates) > limit {
		r.Candidates = r.Candidates[:limit]
	}
	for i := range r.Candidates {
		r.Candidates[i].Index = i
		r.Candidates[i].Gain = round2(r.Candidates[i].Gain)
	}
	r.Stagnation = len(r.Candidates) == 0
	r.ForcedImperfection = r.Stagnation && len(r.Issues) > 0
	switch {
	case !r.Stagnation:
		r.Verdict = fmt.Sprintf("有 %d 个候选可以提升健康度，最好的 +%.2f：%s", len(r.Candidates), r.Candidates[0].Gain, r.Candidates[0].Summary)
	case r.ForcedImperfection:
		r.Verdict = fmt.Sprintf("已停滞：没有哪一步移动或交换能再提升健康度（%.1f）；剩下的 %d 个问题在现有约束下无法解决，需要放宽约束", r.Health, len(r.Issues))
	default:
		r.Verdict = fmt.Sprintf("已收敛：健康度 %.1f，没有需要处理的问题", r.Health)
	}
	return r
}

// placeCandidates places the pending items of s for the classes' own
// strategies and for the other one, each refined by moves and swaps of the
// new items.
func placeCandidates(s *Schedule, avoid []Avoid, baseObj float64) []Candidate {
	alt := strategySteady
	for _, c := range s.Classes {
		if c.Strategy != strategyRapid {
			alt = strategyRapid
		}
	}
	var out []Candidate
	for _, strategy := range []string{"", alt} {
		t := s.Clone()
		b := newBoard(t)
		sc := newScoring(strategy, avoid)
		placed := rough(b, sc)
		if len(placed) == 0 {
			continue
		}
		fresh := map[int]bool{}
		for _, p := range placed {
			fresh[b.itemIndex[p.Task]] = true
		}
		// Refined for the classes' own strategies, so that no single move
		// improves an accepted placement right away.
		improve(newEvaluator(b, newScoring("", avoid)), func(i int) bool { return fresh[i] }, 40)
		c := Candidate{Op: opPlace}
		for _, p := range placed {
			it := t.Item(p.Task)
			c.Moves = append(c.Moves, Placement{Task: it.ID, Day: it.Day, Start: it.Start})
		}
		slices.SortFunc(c.Moves, func(a, b Placement) int { return cmp.Compare(a.Task, b.Task) })
		if slices.ContainsFunc(out, func(o Candidate) bool { return slices.Equal(o.Moves, c.Moves) }) {
			continue
		}
		c.Gain = newEvaluator(newBoard(t), newScoring("", avoid)).objective() - baseObj
		c.Summary = placeSummary(t, c.Moves, strategy)
		out = append(out, c)
	}
	return out
}

// strategyName says a placement strategy in Chinese.
func strategyName(s string) string {
	if n, ok := map[string]string{strategySteady: "均匀分散", strategyRapid: "集中前置"}[s]; ok {
		return n
	}
	return s
}

func placeSummary(t *Schedule, moves []Placement, strategy string) string {
	var b strings.Builder
	how := "按任务类策略"
	if strategy != "" {
		how = strategyName(strategy)
	}
	fmt.Fprintf(&b, "%s放置 %d 项：", how, len(moves))
	for k, p := range moves {
		if k == 4 {
			fmt.Fprintf(&b, " 等（共 %d 项）", len(moves))
			break
		}
		if k > 0 {
			b.WriteString("；")
		}
		it := t.Item(p.Task)
		fmt.Fprintf(&b, "%s → %s", it.Name, t.Where(p.Day, p.Start, it.Slots))
	}
	return b.String()
}

// changeCandidates lists the best moves and swaps of ev's board: the best
// move of each item, and the swaps, by gain.
func changeCandidates(ev *evaluator, baseObj float64, limit int) []Candidate {
	type scored struct {
		c    change
		gain float64
	}
	bestMove := map[int]scored{}
	var swaps []scored
	scanChanges(ev, func(int) bool { return true }, baseObj, func(c change, gain float64) {
		if gain < minGain {
			return
		}
		if c.j >= 0 {
			swaps = append(swaps, scored{c, gain})
			return
		}
		if old, ok := bestMove[c.i]; !ok || gain > old.gain+1e-9 {
			bestMove[c.i] = scored{c, gain}
		}
	})
	all := swaps
	for _, sc := range bestMove {
		all = append(all, sc)
	}
	slices.SortFunc(all, func(x, y scored) int {
		return cmp.Or(cmp.Compare(y.gain, x.gain), cmp.Compare(x.c.i, y.c.i), cmp.Compare(x.c.j, y.c.j),
			cmp.Compare(x.c.day, y.c.day), cmp.Compare(x.c.start, y.c.start))
	})
	if len(all) > limit {
		all = all[:limit]
	}
	out := make([]Candidate, 0, len(all))
	for _, sc := range all {
		c := sc.c.candidate(ev.b.s)
		c.Gain = sc.gain
		out = append(out, c)
	}
	return out
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }
func round2(x float64) float64 { return math.Round(x*100) / 100 }

func roundMetrics(m Metrics) Metrics {
	return Metrics{Rhythm: round2(m.Rhythm), Tightness: round2(m.Tightness), Profile: round2(m.Profile), Feasibility: round2(m.Feasibility)}
}
