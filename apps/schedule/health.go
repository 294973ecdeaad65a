package schedule

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Metrics are the four measures of a week, each from 0 (bad) to 1 (good).
type Metrics struct {
	// Rhythm penalises runs of more than maxRun busy slots in a row
	// (courses and tasks) without a break.
	Rhythm float64 `json:"rhythm"`
	// Tightness penalises task slots over the daily maximum and an uneven
	// load across the days.
	Tightness float64 `json:"tightness"`
	// Profile scores each task against its class: its subject's preferred
	// period, and its strategy (steady: near its even-spread target day
	// and not beside another item of its class on one day; rapid: early).
	Profile float64 `json:"profile"`
	// Feasibility is the share of task slots that have a place.
	Feasibility float64 `json:"feasibility"`
}

// Weights of the metrics in the health score.
const (
	wFeasibility = 0.35
	wTightness   = 0.25
	wRhythm      = 0.20
	wProfile     = 0.20
)

// maxRun is how many busy slots in a row a day may have before a break is
// due.
const maxRun = 4

// minGain is the smallest health gain that counts as an improvement; when
// no candidate reaches it, the optimiser has stagnated.
const minGain = 0.05

// avoidPenalty is what each task on a time the person asked to keep free
// costs the objective of a scan.
const avoidPenalty = 5.0

// Health is the weighted score of the metrics, from 0 to 100.
func (m Metrics) Health() float64 {
	return 100 * (wFeasibility*m.Feasibility + wTightness*m.Tightness + wRhythm*m.Rhythm + wProfile*m.Profile)
}

// scoring holds what the metrics need beyond the board: the strategy that
// overrides the classes' own (for an alternative candidate) and the times
// of the week to keep free.
type scoring struct {
	strategy string    // "" for each class's own
	avoid    [8]uint16 // by day of week: the slots to keep free, as bits
	anyAvoid bool
}

func newScoring(strategy string, avoid []Avoid) scoring {
	sc := scoring{strategy: strategy, avoid: avoidMasks(avoid)}
	for _, m := range sc.avoid {
		sc.anyAvoid = sc.anyAvoid || m != 0
	}
	return sc
}

// blocks reports whether a task of slots slots at (day, start) of the
// window would take a slot the person wants kept free.
func (sc *scoring) blocks(w Window, day, start, slots int) bool {
	if !sc.anyAvoid {
		return false
	}
	m := sc.avoid[w.Day(day).DayOfWeek]
	for k := start; k < start+slots && k < SlotsPerDay; k++ {
		if m&(1<<k) != 0 {
			return true
		}
	}
	return false
}

// wholeDay reports whether every slot of window day d is to be kept free.
func (sc *scoring) wholeDay(w Window, d int) bool {
	return sc.avoid[w.Day(d).DayOfWeek] == 1<<SlotsPerDay-1
}

func (sc *scoring) strategyOf(c *TaskClass) string {
	switch {
	case sc.strategy != "":
		return sc.strategy
	case c != nil && c.Strategy == strategyRapid:
		return strategyRapid
	}
	return strategySteady
}

// evaluator computes metrics on a board without allocating, for the
// optimiser's scans.
type evaluator struct {
	b       *board
	sc      scoring
	loads   []int
	order   []int   // placed items, by class, day and start
	allowed [][]int // per class index: the window days it may use
}

func newEvaluator(b *board, sc scoring) *evaluator {
	e := &evaluator{b: b, sc: sc, loads: make([]int, b.days), order: make([]int, 0, len(b.s.Items))}
	e.allowed = make([][]int, len(b.s.Classes))
	for ci := range b.s.Classes {
		for d := range b.days {
			if !b.s.Classes[ci].Excludes(b.s.Window.Day(d).DayOfWeek) {
				e.allowed[ci] = append(e.allowed[ci], d)
			}
		}
	}
	return e
}

// objective is the health with the scan's penalty for tasks on avoided
// days.
func (e *evaluator) objective() float64 {
	h := e.metrics().Health()
	if e.sc.anyAvoid {
		for i := range e.b.s.Items {
			it := &e.b.s.Items[i]
			if it.Placed() && e.sc.blocks(e.b.s.Window, it.Day, it.Start, it.Slots) {
				h -= avoidPenalty
			}
		}
	}
	return h
}

func (e *evaluator) metrics() Metrics {
	b := e.b
	items := b.s.Items
	total, placed := 0, 0
	clear(e.loads)
	e.order = e.order[:0]
	for i := range items {
		total += items[i].Slots
		if items[i].Placed() {
			placed += items[i].Slots
			e.loads[items[i].Day] += items[i].Slots
			e.order = append(e.order, i)
		}
	}
	var m Metrics
	m.Feasibility = 1
	if total > 0 {
		m.Feasibility = float64(placed) / float64(total)
	}

	m.Tightness = 1
	if placed > 0 {
		over, dev := 0, 0.0
		mean := float64(placed) / float64(b.days)
		for _, l := range e.loads {
			if limit := b.s.Window.DailyMax; limit > 0 && l > limit {
				over += l - limit
			}
			dev += math.Abs(float64(l) - mean)
		}
		m.Tightness = 1 - min(1, float64(over)/float64(placed)+0.5*dev/float64(2*placed))
	}

	excess, busy := 0, 0
	for d := range b.days {
		run := 0
		for s := range SlotsPerDay {
			if b.busy(d*SlotsPerDay + s) {
				busy++
				run++
				if run > maxRun {
					excess++
				}
			} else {
				run = 0
			}
		}
	}
	m.Rhythm = 1
	if busy > 0 {
		m.Rhythm = 1 - min(1, 2*float64(excess)/float64(busy))
	}

	m.Profile = 1
	if len(e.order) > 0 {
		slices.SortFunc(e.order, func(x, y int) int {
			a, c := &items[x], &items[y]
			return cmp.Or(cmp.Compare(b.classIndex[x], b.classIndex[y]), cmp.Compare(a.Day, c.Day), cmp.Compare(a.Start, c.Start))
		})
		sum := 0.0
		for k := 0; k < len(e.order); {
			ci := b.classIndex[e.order[k]]
			n := 1
			for k+n < len(e.order) && b.classIndex[e.order[k+n]] == ci {
				n++
			}
			for j := range n {
				sum += e.itemProfile(e.order[k+j], j, n, j > 0 && items[e.order[k+j-1]].Day == items[e.order[k+j]].Day)
			}
			k += n
		}
		m.Profile = sum / float64(len(e.order))
	}
	return m
}

// itemProfile scores placed item i, the j-th of the n placed items of its
// class in day order; crowded says an earlier one is on the same day.
func (e *evaluator) itemProfile(i, j, n int, crowded bool) float64 {
	b := e.b
	it := &b.s.Items[i]
	c := b.class(i)
	period := 1.0
	if c != nil {
		period = periodFit(c.Profile.Prefer, it.Start)
	}
	days := float64(b.days)
	var fit float64
	if e.sc.strategyOf(c) == strategyRapid {
		fit = 1 - float64(it.Day)/days
	} else {
		target := it.Day
		if ci := b.classIndex[i]; ci >= 0 && len(e.allowed[ci]) > 0 {
			a := e.allowed[ci]
			target = a[min(len(a)-1, (2*j+1)*len(a)/(2*n))]
		}
		fit = 1 - math.Abs(float64(it.Day-target))/days
		if crowded {
			fit = max(0, fit-0.5)
		}
	}
	return (period + fit) / 2
}

// periodFit scores a start slot against a preferred period: 1 in it, 0.5
// in the next period over, 0 across the day.
func periodFit(prefer string, slot int) float64 {
	want := periodIndex(prefer)
	if want < 0 {
		return 1
	}
	switch abs(periodIndex(periodOf(slot)) - want) {
	case 0:
		return 1
	case 1:
		return 0.5
	}
	return 0
}

func periodIndex(p string) int {
	switch p {
	case periodMorning:
		return 0
	case periodAfternoon:
		return 1
	case periodEvening:
		return 2
	}
	return -1
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// Measure returns the metrics of a schedule.
func Measure(s *Schedule) Metrics {
	return newEvaluator(newBoard(s.Clone()), scoring{}).metrics()
}

// issues lists what keeps a schedule from full health, for people and
// for the model, at most limit of them.
func issues(s *Schedule, limit int) []string {
	b := newBoard(s.Clone())
	var out []string
	add := func(format string, args ...any) {
		if len(out) < limit {
			out = append(out, fmt.Sprintf(format, args...))
		}
	}
	for i := range b.s.Items {
		it := &b.s.Items[i]
		if it.Placed() {
			continue
		}
		if !anyFit(b, i) {
			add("%s（%d节）没有可行位置：空余时间不足或被屏蔽日限制", it.Name, it.Slots)
		} else {
			add("%s（%d节）还未安排", it.Name, it.Slots)
		}
	}
	loads := make([]int, b.days)
	for _, it := range b.s.Items {
		if it.Placed() {
			loads[it.Day] += it.Slots
		}
	}
	for d, l := range loads {
		if s.Window.DailyMax > 0 && l > s.Window.DailyMax {
			add("%s 任务 %d 节，超过每日上限 %d 节", s.DayName(d), l, s.Window.DailyMax)
		}
	}
	for d := range b.days {
		run := 0
		for sl := 0; sl <= SlotsPerDay; sl++ {
			if sl < SlotsPerDay && b.busy(d*SlotsPerDay+sl) {
				run++
				continue
			}
			if run > maxRun {
				add("%s 连续 %d 节没有休息（第%d-%d节）", s.DayName(d), run, sl-run+1, sl)
			}
			run = 0
		}
	}
	names := map[string]string{periodMorning: "上午", periodAfternoon: "下午", periodEvening: "晚上"}
	for i := range b.s.Items {
		it := &b.s.Items[i]
		if c := b.class(i); it.Placed() && c != nil && periodFit(c.Profile.Prefer, it.Start) < 1 {
			add("%s 不在偏好时段（%s）", it.Name, names[c.Profile.Prefer])
		}
	}
	return out
}

// anyFit reports whether item i fits anywhere on the board.
func anyFit(b *board, i int) bool {
	for d := range b.days {
		for st := range SlotsPerDay {
			if b.canItem(i, d, st) {
				return true
			}
		}
	}
	return false
}
