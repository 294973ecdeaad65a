package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/quick"
	"unicode/utf8"
)

// randomOp makes a random operation on s, often an invalid one: unknown
// ids, positions outside the window, locked events, overlaps.
func randomOp(r *rand.Rand, s *Schedule) (name string, moves []Placement, op func(*Schedule) error) {
	ids := []int{-1, 9999}
	for _, e := range s.Events {
		ids = append(ids, e.ID)
	}
	for _, it := range s.Items {
		ids = append(ids, it.ID, it.ID)
	}
	id := func() int { return ids[r.IntN(len(ids))] }
	pos := func() Placement {
		return Placement{Task: id(), Day: r.IntN(s.Window.Days+2) - 1, Start: r.IntN(SlotsPerDay+2) - 1}
	}
	switch r.IntN(5) {
	case 0:
		ps := []Placement{pos()}
		for r.IntN(2) == 0 {
			ps = append(ps, pos())
		}
		return "place", ps, func(s *Schedule) error { return s.Place(ps...) }
	case 1:
		p := pos()
		return "move", []Placement{p}, func(s *Schedule) error { return s.Move(p) }
	case 2:
		a, b := id(), id()
		return "swap", nil, func(s *Schedule) error { return s.Swap(a, b) }
	case 3:
		ps := []Placement{pos(), pos()}
		for r.IntN(2) == 0 {
			ps = append(ps, pos())
		}
		// Half the time, two placed items trade places: valid when their
		// lengths and classes allow it.
		if a, b := s.Items[r.IntN(len(s.Items))], s.Items[r.IntN(len(s.Items))]; r.IntN(2) == 0 && a.Placed() && b.Placed() && a.ID != b.ID {
			ps = []Placement{{Task: a.ID, Day: b.Day, Start: b.Start}, {Task: b.ID, Day: a.Day, Start: a.Start}}
		}
		return "batch_move", ps, func(s *Schedule) error { return s.BatchMove(ps...) }
	}
	t := id()
	return "unplace", nil, func(s *Schedule) error { return s.Unplace(t) }
}

func lockedPositions(s *Schedule) map[int]Placement {
	out := map[int]Placement{}
	for _, e := range s.Events {
		if e.Locked {
			out[e.ID] = Placement{Task: e.ID, Day: e.Day, Start: e.Start}
		}
	}
	return out
}

// Every operation keeps the invariants: no two tasks in one slot except an
// item on a hosting event, no item on an excluded day, locked events where
// they were; and an operation that fails changes nothing (batch_move is
// all or nothing).
func TestOperationsKeepInvariants(t *testing.T) {
	okOps := map[string]int{}
	for seed := uint64(1); seed <= 40; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		s := Generate(seed)
		RoughSchedule(s, RoughOptions{})
		locked := lockedPositions(s)
		for step := range 200 {
			before := s.Clone()
			name, moves, op := randomOp(r, s)
			err := op(s)
			if err != nil {
				if !reflect.DeepEqual(before, s) {
					t.Fatalf("seed %d step %d: %s failed (%v) but changed the schedule", seed, step, name, err)
				}
				continue
			}
			okOps[name]++
			if err := s.Check(); err != nil {
				t.Fatalf("seed %d step %d: after %s: %v", seed, step, name, err)
			}
			if got := lockedPositions(s); !reflect.DeepEqual(got, locked) {
				t.Fatalf("seed %d step %d: %s moved a locked event", seed, step, name)
			}
			if name == "batch_move" || name == "place" {
				for _, m := range moves {
					got, _, _ := s.position(m.Task)
					if got != m {
						t.Fatalf("seed %d step %d: %s succeeded but task %d is at %+v, not %+v", seed, step, name, m.Task, got, m)
					}
				}
			}
		}
	}
	for _, name := range []string{"place", "move", "swap", "batch_move", "unplace"} {
		if okOps[name] == 0 {
			t.Errorf("no %s ever succeeded: the generator tests failures only (%v)", name, okOps)
		}
	}
}

// The rough schedule and the optimiser keep the invariants, and the
// optimiser never lowers the health.
func TestOptimizerKeepsInvariants(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		s := Generate(seed)
		locked := lockedPositions(s)
		RoughSchedule(s, RoughOptions{Avoid: []int{int(seed%7) + 1}})
		if err := s.Check(); err != nil {
			t.Fatalf("seed %d: rough: %v", seed, err)
		}
		before := Measure(s).Health()
		for _, c := range Optimize(s, 100) {
			if c.Gain < minGain {
				t.Errorf("seed %d: applied %s with gain %.3f", seed, c.Summary, c.Gain)
			}
		}
		if err := s.Check(); err != nil {
			t.Fatalf("seed %d: optimised: %v", seed, err)
		}
		if after := Measure(s).Health(); after < before-1e-9 {
			t.Errorf("seed %d: health %.2f → %.2f", seed, before, after)
		}
		if !reflect.DeepEqual(lockedPositions(s), locked) {
			t.Errorf("seed %d: a locked event moved", seed)
		}
	}
}

// canonical encodes a schedule for comparison.
func canonical(s *Schedule) string {
	c := s.Clone()
	c.sortAll()
	b, _ := json.Marshal(c)
	return string(b)
}

// After every commit the database holds exactly the in-memory schedule;
// a commit from a stale revision fails and writes nothing.
func TestCommitMatchesMemory(t *testing.T) {
	ctx := context.Background()
	st := NewStore(openDB(t, filepath.Join(t.TempDir(), "s.db")))
	for seed := uint64(1); seed <= 12; seed++ {
		r := rand.New(rand.NewPCG(seed, 11))
		g := Generate(seed)
		if _, err := st.create(ctx, g, false); err != nil {
			t.Fatal(err)
		}
		for round := range 8 {
			before, err := st.Load(ctx, g.Owner)
			if err != nil {
				t.Fatal(err)
			}
			if canonical(before) != canonical(g) {
				t.Fatalf("seed %d round %d: loaded schedule differs from the one committed", seed, round)
			}
			after := before.Clone()
			switch round {
			case 0:
				RoughSchedule(after, RoughOptions{})
			case 5: // a new class with items, as upsert_task_class makes
				after.Classes = append(after.Classes, TaskClass{ID: after.nextID(), Name: "新课", ExcludedDays: []int{2, 6}, Strategy: strategyRapid,
					Profile: Profile{Subject: "化学", Difficulty: 2, Prefer: periodEvening}})
				after.Items = append(after.Items, Item{ID: after.nextID(), Class: after.Classes[len(after.Classes)-1].ID, Name: "新课#1", Slots: 2, Status: statusPending})
			default:
				for range 10 {
					_, _, op := randomOp(r, after)
					_ = op(after)
				}
			}
			if err := st.commit(ctx, before, after, "", ""); err != nil {
				t.Fatalf("seed %d round %d: %v", seed, round, err)
			}
			g = after
			// before is now stale: its commit must fail and change nothing.
			stale := before.Clone()
			RoughSchedule(stale, RoughOptions{})
			stale.Items = append(stale.Items, Item{ID: 99999, Name: "x", Slots: 1, Status: statusPending})
			if err := st.commit(ctx, before, stale, "", ""); !errors.Is(err, ErrConflict) {
				t.Fatalf("seed %d round %d: stale commit: %v, want ErrConflict", seed, round, err)
			}
		}
	}
}

// Pseudo-stream chunks join to the text, are at most maxLen characters,
// and all but the last at least minLen.
func TestSplitPseudoStreamProperties(t *testing.T) {
	prop := func(text string, a, b uint8) bool {
		minLen, maxLen := int(a%30)+1, int(b%30)+1
		if minLen > maxLen {
			minLen, maxLen = maxLen, minLen
		}
		chunks := splitPseudoStream(text, minLen, maxLen)
		if strings.Join(chunks, "") != text {
			return false
		}
		for i, c := range chunks {
			n := utf8.RuneCountInString(c)
			if n > maxLen || n == 0 || (i < len(chunks)-1 && n < minLen) {
				return false
			}
		}
		return true
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 2000}); err != nil {
		t.Error(err)
	}
}

func TestSplitPseudoStream(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"", nil},
		{"好的", []string{"好的"}},
		{"已完成：帮我安排下周的复习。健康度 65.0 → 96.4，没有遗留问题。", []string{"已完成：帮我安排下周的复习。", "健康度 65.0 → 96.4，没有遗留问题。"}},
		{strings.Repeat("排", 30), []string{strings.Repeat("排", 24), strings.Repeat("排", 6)}},
		{"一二三四五六七八,九十", []string{"一二三四五六七八,九十"}},
		{"第一句话说完了。第二句话也说完了。第三句话还在继续说下去", []string{"第一句话说完了。第二句话也说完了。", "第三句话还在继续说下去"}},
		{"step one is done. step two is running now", []string{"step one is done.", " step two is running now"}},
	} {
		got := splitPseudoStream(tc.text, chunkMin, chunkMax)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("splitPseudoStream(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}
