package schedule

import "fmt"

// board is a schedule's occupancy grid: what holds each slot of each day.
// The operations and the optimiser check and change positions through it;
// it changes the items and events of the schedule it was built on.
type board struct {
	s    *Schedule
	days int
	// Per cell (day*SlotsPerDay + slot), 1 + the index of what holds it,
	// 0 for nothing: a task item, an event that cannot host, and an event
	// that can.
	item, event, host []int32
	itemIndex         map[int]int
	classIndex        []int // per item: index in s.Classes, -1 for none
}

func newBoard(s *Schedule) *board {
	n := s.Window.Days * SlotsPerDay
	b := &board{s: s, days: s.Window.Days, item: make([]int32, n), event: make([]int32, n), host: make([]int32, n),
		itemIndex: make(map[int]int, len(s.Items)), classIndex: make([]int, len(s.Items))}
	classes := make(map[int]int, len(s.Classes))
	for i, c := range s.Classes {
		classes[c.ID] = i
	}
	for i, it := range s.Items {
		b.itemIndex[it.ID] = i
		ci, ok := classes[it.Class]
		if !ok {
			ci = -1
		}
		b.classIndex[i] = ci
	}
	for i := range s.Events {
		b.markEvent(i, int32(i+1))
	}
	for i := range s.Items {
		if s.Items[i].Placed() {
			b.markItem(i, int32(i+1))
		}
	}
	return b
}

func (b *board) inRange(day, start, slots int) bool {
	return day >= 0 && day < b.days && start >= 0 && slots >= 1 && start+slots <= SlotsPerDay
}

func (b *board) markItem(i int, v int32) {
	it := &b.s.Items[i]
	if !b.inRange(it.Day, it.Start, it.Slots) {
		return
	}
	base := it.Day*SlotsPerDay + it.Start
	for k := range it.Slots {
		b.item[base+k] = v
	}
}

func (b *board) markEvent(i int, v int32) {
	e := &b.s.Events[i]
	if !b.inRange(e.Day, e.Start, e.Slots) {
		return
	}
	cells := b.event
	if e.CanEmbed {
		cells = b.host
	}
	base := e.Day*SlotsPerDay + e.Start
	for k := range e.Slots {
		cells[base+k] = v
	}
}

func (b *board) class(i int) *TaskClass {
	if ci := b.classIndex[i]; ci >= 0 {
		return &b.s.Classes[ci]
	}
	return nil
}

// fitsItem reports why item i cannot start at (day, start), or nil. The
// item's own slots count as free.
func (b *board) fitsItem(i, day, start int) error {
	it := &b.s.Items[i]
	if !b.inRange(day, start, it.Slots) {
		return fmt.Errorf("%s at day %d slot %d: %w", it.Name, day+1, start+1, ErrOutOfRange)
	}
	if c := b.class(i); c != nil && c.Excludes(b.s.Window.Day(day).DayOfWeek) {
		return fmt.Errorf("%s on %s: %w", it.Name, b.s.DayName(day), ErrExcludedDay)
	}
	self := int32(i + 1)
	base := day*SlotsPerDay + start
	for k := range it.Slots {
		c := base + k
		if o := b.item[c]; o != 0 && o != self {
			return fmt.Errorf("%s at %s: slot %d holds %s: %w", it.Name, b.s.Where(day, start, it.Slots), start+k+1, b.s.Items[o-1].Name, ErrOverlap)
		}
		if o := b.event[c]; o != 0 {
			return fmt.Errorf("%s at %s: slot %d holds %s, which cannot host a task: %w", it.Name, b.s.Where(day, start, it.Slots), start+k+1, b.s.Events[o-1].Name, ErrOverlap)
		}
	}
	return nil
}

// canItem is fitsItem without the error text, for the optimiser's scans.
func (b *board) canItem(i, day, start int) bool {
	it := &b.s.Items[i]
	if !b.inRange(day, start, it.Slots) {
		return false
	}
	if c := b.class(i); c != nil && len(c.ExcludedDays) > 0 && c.Excludes(b.s.Window.Day(day).DayOfWeek) {
		return false
	}
	self := int32(i + 1)
	base := day*SlotsPerDay + start
	for k := range it.Slots {
		if o := b.item[base+k]; (o != 0 && o != self) || b.event[base+k] != 0 {
			return false
		}
	}
	return true
}

// fitsEvent reports why event i cannot start at (day, start), or nil.
func (b *board) fitsEvent(i, day, start int) error {
	e := &b.s.Events[i]
	if !b.inRange(day, start, e.Slots) {
		return fmt.Errorf("%s at day %d slot %d: %w", e.Name, day+1, start+1, ErrOutOfRange)
	}
	self := int32(i + 1)
	base := day*SlotsPerDay + start
	for k := range e.Slots {
		c := base + k
		if o := b.item[c]; o != 0 {
			return fmt.Errorf("%s at %s: slot %d holds %s: %w", e.Name, b.s.Where(day, start, e.Slots), start+k+1, b.s.Items[o-1].Name, ErrOverlap)
		}
		for _, o := range []int32{b.event[c], b.host[c]} {
			if o != 0 && o != self {
				return fmt.Errorf("%s at %s: slot %d holds %s: %w", e.Name, b.s.Where(day, start, e.Slots), start+k+1, b.s.Events[o-1].Name, ErrOverlap)
			}
		}
	}
	return nil
}

// setItem places item i at (day, start); the caller checked that it fits.
func (b *board) setItem(i, day, start int) {
	it := &b.s.Items[i]
	if it.Placed() {
		b.markItem(i, 0)
	}
	it.Status, it.Day, it.Start = statusPlaced, day, start
	b.markItem(i, int32(i+1))
}

// clearItem takes item i off the board, back to pending.
func (b *board) clearItem(i int) {
	it := &b.s.Items[i]
	if it.Placed() {
		b.markItem(i, 0)
	}
	it.Status, it.Day, it.Start = statusPending, 0, 0
}

func (b *board) setEvent(i, day, start int) {
	b.markEvent(i, 0)
	b.s.Events[i].Day, b.s.Events[i].Start = day, start
	b.markEvent(i, int32(i+1))
}

// busy reports whether the student is occupied in a cell: a course or a
// task.
func (b *board) busy(c int) bool { return b.item[c] != 0 || b.event[c] != 0 || b.host[c] != 0 }

// embedded returns the event hosting item i, or nil.
func (b *board) embedded(i int) *Event {
	it := &b.s.Items[i]
	if !it.Placed() || !b.inRange(it.Day, it.Start, it.Slots) {
		return nil
	}
	base := it.Day*SlotsPerDay + it.Start
	for k := range it.Slots {
		if h := b.host[base+k]; h != 0 {
			return &b.s.Events[h-1]
		}
	}
	return nil
}
