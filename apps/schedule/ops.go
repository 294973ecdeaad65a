package schedule

import (
	"fmt"
)

// Placement puts a task (an item, or an unlocked event) at a position:
// a day of the window and a start slot, both from 0.
type Placement struct {
	Task  int `json:"task_id"`
	Day   int `json:"day"`
	Start int `json:"start"`
}

// Place gives pending items their positions, all or none: if one does not
// fit (among the others placed with it), nothing changes.
func (s *Schedule) Place(ps ...Placement) error { return s.relocate(ps, true) }

// Move moves a placed item or an unlocked event.
func (s *Schedule) Move(p Placement) error { return s.relocate([]Placement{p}, false) }

// BatchMove moves placed items and unlocked events together, all or none.
// The tasks leave their old slots first, so they may take each other's.
func (s *Schedule) BatchMove(ps ...Placement) error { return s.relocate(ps, false) }

// Swap exchanges the positions of two placed tasks of equal length.
func (s *Schedule) Swap(a, b int) error {
	pa, la, err := s.position(a)
	if err != nil {
		return fmt.Errorf("swap: %w", err)
	}
	pb, lb, err := s.position(b)
	if err != nil {
		return fmt.Errorf("swap: %w", err)
	}
	if la != lb {
		return fmt.Errorf("swap %s (%d slots) and %s (%d slots): lengths differ: %w", s.label(a), la, s.label(b), lb, ErrOverlap)
	}
	return s.relocate([]Placement{{Task: a, Day: pb.Day, Start: pb.Start}, {Task: b, Day: pa.Day, Start: pa.Start}}, false)
}

// Unplace takes a placed item off the schedule, back to pending.
func (s *Schedule) Unplace(id int) error {
	it := s.Item(id)
	switch {
	case it == nil && s.Event(id) != nil:
		return fmt.Errorf("unplace %s: events cannot be unplaced: %w", s.label(id), ErrStatus)
	case it == nil:
		return fmt.Errorf("unplace task %d: %w", id, ErrNotFound)
	case !it.Placed():
		return fmt.Errorf("unplace %s: it is pending: %w", it.Name, ErrStatus)
	}
	it.Status, it.Day, it.Start = statusPending, 0, 0
	return nil
}

// position returns where a placed task is and its length.
func (s *Schedule) position(id int) (Placement, int, error) {
	if it := s.Item(id); it != nil {
		if !it.Placed() {
			return Placement{}, 0, fmt.Errorf("%s is pending: %w", it.Name, ErrStatus)
		}
		return Placement{Task: id, Day: it.Day, Start: it.Start}, it.Slots, nil
	}
	if e := s.Event(id); e != nil {
		return Placement{Task: id, Day: e.Day, Start: e.Start}, e.Slots, nil
	}
	return Placement{}, 0, fmt.Errorf("task %d: %w", id, ErrNotFound)
}

// relocate puts every task of ps at its position, on a copy of s that
// replaces s only when all of them fit: the all-or-nothing rule of place
// and batch_move.
func (s *Schedule) relocate(ps []Placement, placing bool) error {
	verb := "move"
	if placing {
		verb = "place"
	}
	if len(ps) == 0 {
		return fmt.Errorf("%s: no tasks given: %w", verb, ErrNotFound)
	}
	t := s.Clone()
	b := newBoard(t)
	type target struct {
		item  int // index in t.Items, or -1
		event int // index in t.Events, or -1
		p     Placement
	}
	targets := make([]target, 0, len(ps))
	seen := map[int]bool{}
	for _, p := range ps {
		if seen[p.Task] {
			return fmt.Errorf("%s: task %d given twice: %w", verb, p.Task, ErrOverlap)
		}
		seen[p.Task] = true
		tg := target{item: -1, event: -1, p: p}
		if i, ok := b.itemIndex[p.Task]; ok {
			it := &t.Items[i]
			if placing && it.Placed() {
				return fmt.Errorf("place %s: already placed at %s; use move: %w", it.Name, t.Where(it.Day, it.Start, it.Slots), ErrStatus)
			}
			if !placing && !it.Placed() {
				return fmt.Errorf("move %s: it is pending; use place: %w", it.Name, ErrStatus)
			}
			tg.item = i
		} else {
			ei := -1
			for j := range t.Events {
				if t.Events[j].ID == p.Task {
					ei = j
				}
			}
			switch {
			case ei < 0:
				return fmt.Errorf("%s task %d: %w", verb, p.Task, ErrNotFound)
			case placing:
				return fmt.Errorf("place %s: it is an event, not a pending task: %w", t.Events[ei].Name, ErrStatus)
			case t.Events[ei].Locked:
				return fmt.Errorf("move %s: %w", t.Events[ei].Name, ErrLocked)
			}
			tg.event = ei
		}
		targets = append(targets, tg)
	}
	// Everything moving leaves its slots first.
	for _, tg := range targets {
		if tg.item >= 0 {
			b.clearItem(tg.item)
		} else {
			b.markEvent(tg.event, 0)
			t.Events[tg.event].Day = -1
		}
	}
	for _, tg := range targets {
		if tg.item >= 0 {
			if err := b.fitsItem(tg.item, tg.p.Day, tg.p.Start); err != nil {
				return fmt.Errorf("%s: %w", verb, err)
			}
			b.setItem(tg.item, tg.p.Day, tg.p.Start)
			continue
		}
		if err := b.fitsEvent(tg.event, tg.p.Day, tg.p.Start); err != nil {
			return fmt.Errorf("%s: %w", verb, err)
		}
		b.setEvent(tg.event, tg.p.Day, tg.p.Start)
	}
	*s = *t
	return nil
}

// Check verifies the invariants of a schedule: every position inside the
// window, no two tasks in one slot except an item on a hosting event, no
// item on a day its class excludes.
func (s *Schedule) Check() error {
	n := s.Window.Days * SlotsPerDay
	holder := make([]string, n)
	hosted := make([]bool, n)
	claim := func(name string, day, start, slots int, host, item bool) error {
		if day < 0 || day >= s.Window.Days || start < 0 || start+slots > SlotsPerDay || slots < 1 {
			return fmt.Errorf("%s at day %d slot %d (%d slots): %w", name, day, start, slots, ErrOutOfRange)
		}
		for k := range slots {
			c := day*SlotsPerDay + start + k
			switch {
			case holder[c] == "":
				holder[c], hosted[c] = name, host
			case item && hosted[c]:
				hosted[c] = false // the host takes one item
			default:
				return fmt.Errorf("%s and %s share %s: %w", name, holder[c], s.Where(day, start+k, 1), ErrOverlap)
			}
		}
		return nil
	}
	for _, e := range s.Events {
		if err := claim(e.Name, e.Day, e.Start, e.Slots, e.CanEmbed, false); err != nil {
			return err
		}
	}
	for _, it := range s.Items {
		if !it.Placed() {
			continue
		}
		if c := s.Class(it.Class); c != nil && c.Excludes(s.Window.Day(it.Day).DayOfWeek) {
			return fmt.Errorf("%s on %s: %w", it.Name, s.DayName(it.Day), ErrExcludedDay)
		}
		if err := claim(it.Name, it.Day, it.Start, it.Slots, false, true); err != nil {
			return err
		}
	}
	return nil
}
