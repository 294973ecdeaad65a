// Package schedule is Loom's scheduling agent: a student's week
// of courses and study tasks, arranged by a graph that plans, asks for
// confirmation, and executes through tools, with a backend optimiser that
// proposes moves and swaps for the model (or, without a model, a
// heuristic) to choose from.
//
// The domain is a window of days × 12 slots. Events (courses) hold slots;
// a locked event never moves, and an event that can embed may host one task
// in each of its slots. Task classes carry a subject profile, days of the
// week they must avoid and a strategy; task items of a class take a number
// of slots and are pending until placed. The state lives in Loom's database
// (Store), and every write is a diff committed in one transaction.
//
// Scheduling runs in two stages, as in the seed: RoughSchedule places every
// pending item by local rules (locks, excluded days, daily load, spread),
// then Analyze scores the week (rhythm, tightness, profile, feasibility)
// and scans move and swap candidates, and Optimize applies the best ones
// until no candidate improves the score. In the agent the model only
// chooses among the scanned candidates, by index.
package schedule

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// SlotsPerDay is the number of class periods (节) in a day.
const SlotsPerDay = 12

// Task item statuses.
const (
	statusPending = "pending"
	statusPlaced  = "placed"
)

// Strategies of a task class.
const (
	// strategySteady spreads a class's items evenly over the window.
	strategySteady = "steady"
	// strategyRapid gets a class's items done as early as possible.
	strategyRapid = "rapid"
)

// Preferred periods of a subject profile.
const (
	periodMorning   = "morning"   // slots 1–4
	periodAfternoon = "afternoon" // slots 5–8
	periodEvening   = "evening"   // slots 9–12
	periodAny       = "any"
)

// Sentinel errors that callers branch on. Operations wrap them with the
// task and position concerned.
var (
	// ErrNotFound: no task, event or class has that id.
	ErrNotFound = errors.New("schedule: not found")
	// ErrLocked: the event is locked and never moves.
	ErrLocked = errors.New("schedule: locked")
	// ErrOverlap: the slots are taken by another task, or by an event that
	// cannot host one.
	ErrOverlap = errors.New("schedule: slots taken")
	// ErrExcludedDay: the task's class excludes that day of the week.
	ErrExcludedDay = errors.New("schedule: day excluded for this task class")
	// ErrOutOfRange: the position is outside the window.
	ErrOutOfRange = errors.New("schedule: outside the window")
	// ErrStatus: the task is not in the status the operation needs
	// (placing a placed task, moving a pending one).
	ErrStatus = errors.New("schedule: wrong task status")
	// ErrConflict: the schedule changed in the store since it was loaded.
	ErrConflict = errors.New("schedule: changed concurrently")
)

// Window is the span of days being scheduled. Day index i of the window is
// a calendar day (week, day of week); see Day and Index.
type Window struct {
	// StartWeek is the week (of the term) of day 0, from 1.
	StartWeek int `json:"start_week"`
	// StartDay is the day of week of day 0: 1 = Monday … 7 = Sunday.
	StartDay int `json:"start_day"`
	// Days is the number of days, each of SlotsPerDay slots.
	Days int `json:"days"`
	// DailyMax is the most task slots the student wants on one day.
	DailyMax int `json:"daily_max"`
}

// DayRef is a calendar day: a week of the term and a day of the week.
type DayRef struct {
	Week      int `json:"week"`
	DayOfWeek int `json:"day_of_week"`
}

// Day returns the calendar day of window day i.
func (w Window) Day(i int) DayRef {
	abs := (w.StartWeek-1)*7 + (w.StartDay - 1) + i
	return DayRef{Week: abs/7 + 1, DayOfWeek: abs%7 + 1}
}

// Index returns the window day of a calendar day, and whether it is in
// the window.
func (w Window) Index(d DayRef) (int, bool) {
	i := (d.Week-1)*7 + (d.DayOfWeek - 1) - ((w.StartWeek-1)*7 + (w.StartDay - 1))
	return i, i >= 0 && i < w.Days
}

// Event is a fixed entry of the timetable, such as a course.
type Event struct {
	ID    int    `json:"id"`
	Name  string `json:"name"`
	Day   int    `json:"day"`
	Start int    `json:"start"`
	Slots int    `json:"slots"`
	// Locked events never move.
	Locked bool `json:"locked"`
	// CanEmbed events may host a task item in their slots (a lecture
	// where the student can also study).
	CanEmbed bool `json:"can_embed"`
}

// Profile describes a class's subject, as the profile metric scores it.
type Profile struct {
	Subject string `json:"subject"`
	// Difficulty is 1 (light) to 3 (hard).
	Difficulty int `json:"difficulty"`
	// Prefer is the period the subject goes best in: morning, afternoon,
	// evening or any.
	Prefer string `json:"prefer"`
}

// TaskClass groups task items of one kind (高数复习, 英语阅读).
type TaskClass struct {
	ID      int     `json:"id"`
	Name    string  `json:"name"`
	Profile Profile `json:"profile"`
	// ExcludedDays are days of the week (1 = Monday … 7 = Sunday) its
	// items must not be on.
	ExcludedDays []int `json:"excluded_days_of_week,omitempty"`
	// Strategy is steady or rapid.
	Strategy string `json:"strategy"`
}

// Excludes reports whether the class keeps off that day of the week.
func (c *TaskClass) Excludes(dayOfWeek int) bool { return slices.Contains(c.ExcludedDays, dayOfWeek) }

// Item is a task to schedule: Slots consecutive slots of one day.
type Item struct {
	ID    int    `json:"id"`
	Class int    `json:"class"`
	Name  string `json:"name"`
	Slots int    `json:"slots"`
	// Status is pending or placed; Day and Start hold only when placed.
	Status string `json:"status"`
	Day    int    `json:"day"`
	Start  int    `json:"start"`
}

// Placed reports whether the item has a position.
func (it *Item) Placed() bool { return it.Status == statusPlaced }

// Schedule is one owner's window with its events, classes and items: the
// state the tools work on. It round-trips through JSON.
type Schedule struct {
	Owner string `json:"owner"`
	// Revision counts the commits to the store; a commit must start from
	// the revision it loaded.
	Revision int64       `json:"revision"`
	Window   Window      `json:"window"`
	Events   []Event     `json:"events"`
	Classes  []TaskClass `json:"classes"`
	Items    []Item      `json:"items"`
}

// Clone returns a deep copy.
func (s *Schedule) Clone() *Schedule {
	c := *s
	c.Events = slices.Clone(s.Events)
	c.Items = slices.Clone(s.Items)
	c.Classes = make([]TaskClass, len(s.Classes))
	for i, cl := range s.Classes {
		cl.ExcludedDays = slices.Clone(cl.ExcludedDays)
		c.Classes[i] = cl
	}
	return &c
}

// Item returns the item with id, or nil.
func (s *Schedule) Item(id int) *Item {
	for i := range s.Items {
		if s.Items[i].ID == id {
			return &s.Items[i]
		}
	}
	return nil
}

// Event returns the event with id, or nil.
func (s *Schedule) Event(id int) *Event {
	for i := range s.Events {
		if s.Events[i].ID == id {
			return &s.Events[i]
		}
	}
	return nil
}

// Class returns the class with id, or nil.
func (s *Schedule) Class(id int) *TaskClass {
	for i := range s.Classes {
		if s.Classes[i].ID == id {
			return &s.Classes[i]
		}
	}
	return nil
}

// Pending returns the items waiting for a position, by id.
func (s *Schedule) Pending() []Item {
	var out []Item
	for _, it := range s.Items {
		if !it.Placed() {
			out = append(out, it)
		}
	}
	return out
}

// nextID returns an id not used by any event, class or item.
func (s *Schedule) nextID() int {
	n := 0
	for _, e := range s.Events {
		n = max(n, e.ID)
	}
	for _, c := range s.Classes {
		n = max(n, c.ID)
	}
	for _, it := range s.Items {
		n = max(n, it.ID)
	}
	return n + 1
}

// sortAll orders events, classes and items by id, so that equal schedules
// compare and encode equal.
func (s *Schedule) sortAll() {
	slices.SortFunc(s.Events, func(a, b Event) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(s.Classes, func(a, b TaskClass) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(s.Items, func(a, b Item) int { return cmp.Compare(a.ID, b.ID) })
}

var weekdayNames = [...]string{"", "周一", "周二", "周三", "周四", "周五", "周六", "周日"}

// DayName names window day i for people: "周三(第2周)".
func (s *Schedule) DayName(i int) string {
	if i < 0 || i >= s.Window.Days {
		return fmt.Sprintf("第%d天", i+1)
	}
	d := s.Window.Day(i)
	return fmt.Sprintf("%s（第%d周）", weekdayNames[d.DayOfWeek], d.Week)
}

// Where names a position for people: "周三(第2周) 第3-4节".
func (s *Schedule) Where(day, start, slots int) string {
	if slots <= 1 {
		return fmt.Sprintf("%s 第%d节", s.DayName(day), start+1)
	}
	return fmt.Sprintf("%s 第%d-%d节", s.DayName(day), start+1, start+slots)
}

// label names a task or event for people: "高数复习#2".
func (s *Schedule) label(id int) string {
	if it := s.Item(id); it != nil {
		return it.Name
	}
	if e := s.Event(id); e != nil {
		return e.Name
	}
	return fmt.Sprintf("#%d", id)
}

// periodOf returns the period of a slot.
func periodOf(slot int) string {
	switch {
	case slot < 4:
		return periodMorning
	case slot < 8:
		return periodAfternoon
	}
	return periodEvening
}

// dayList names days of the week for people: "周三、周日".
func dayList(days []int) string {
	names := make([]string, 0, len(days))
	for _, d := range days {
		if d >= 1 && d <= 7 {
			names = append(names, weekdayNames[d])
		}
	}
	return strings.Join(names, "、")
}
