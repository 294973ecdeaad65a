package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
)

// TestBudgetLoweredForARun: a run that lowers fixGraph's tries from 5 to
// 2 gives up after two fixes, also when a question in the middle ends
// the run and another compiled graph (a restarted process) resumes it;
// the next new run on the thread has the declared 5 again, and the spec
// still shows 5.
func TestBudgetLoweredForARun(t *testing.T) {
	eachSaver(t, func(t *testing.T, s checkpoint.Saver) {
		ctx := t.Context()
		first := must(fixGraph().Compile(graph.WithSaver(s)))(t)
		res, err := first.Run(ctx, "t", graph.Input[fixState]{Update: func(f *fixState) { f.AskAt = 2 }, Budgets: map[string]int{"tries": 2}})
		if err != nil || res.Status != graph.StatusInterrupted {
			t.Fatalf("%+v, %v; want a question at the second fix", res, err)
		}
		head, err := s.Get(ctx, "t", "")
		if err != nil {
			t.Fatal(err)
		}
		if head.Counters["tries"] != 1 {
			t.Errorf("checkpointed counters %v, want tries 1", head.Counters)
		}

		second := must(fixGraph().Compile(graph.WithSaver(s)))(t)
		res, err = second.Resume(ctx, "t", true)
		if err != nil {
			t.Fatal(err)
		}
		st := res.State
		if st.Fixes != 2 || st.Log[len(st.Log)-1] != "give_up" || st.Left != 0 {
			t.Errorf("after the resume: %d fixes, log %v, %d left; want 2 fixes, give_up, 0 left", st.Fixes, st.Log, st.Left)
		}

		res, err = second.Invoke(ctx, "t", func(f *fixState) { f.Fixes, f.AskAt = 0, 0 })
		if err != nil {
			t.Fatal(err)
		}
		if res.State.Fixes != 5 {
			t.Errorf("the next run made %d fixes, want the declared 5", res.State.Fixes)
		}
		if b := second.Spec().Budgets; len(b) != 1 || b[0].Max != 5 {
			t.Errorf("spec budgets %+v, want tries of 5", b)
		}
	})
}

// TestBudgetLoweredByJSON: JSONInput's budgets lower the bound as
// Input.Budgets does, and a continue after the step limit keeps it.
func TestBudgetLoweredByJSON(t *testing.T) {
	s := checkpoint.NewMemory()
	c := must(fixGraph().Compile(graph.WithSaver(s), graph.WithStepLimit(3)))(t)
	var in graph.JSONInput
	if err := json.Unmarshal([]byte(`{"update": {}, "budgets": {"tries": 3}}`), &in); err != nil {
		t.Fatal(err)
	}
	var err error
	for _, err = range c.StreamJSON(t.Context(), "j", in) {
	}
	if !errors.Is(err, graph.ErrStepLimit) {
		t.Fatalf("first run: %v, want the step limit", err)
	}
	for range 5 {
		res, err := c.Continue(t.Context(), "j")
		if errors.Is(err, graph.ErrStepLimit) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if res.State.Fixes != 3 || res.State.Log[len(res.State.Log)-1] != "give_up" {
			t.Errorf("%d fixes, log %v; want 3 and give_up", res.State.Fixes, res.State.Log)
		}
		return
	}
	t.Fatal("the run did not end in five continues")
}

// TestBudgetLoweredRefused: an unknown budget, a bound below zero or above
// the declared max, or budgets without an update refuse the run, naming
// what is wrong, and nothing is written.
func TestBudgetLoweredRefused(t *testing.T) {
	s := checkpoint.NewMemory()
	c := must(fixGraph().Compile(graph.WithSaver(s)))(t)
	for _, tt := range []struct {
		name string
		in   graph.Input[fixState]
		want string
	}{
		{"unknown", graph.Input[fixState]{Update: func(*fixState) {}, Budgets: map[string]int{"rounds": 1}}, `"rounds": no such budget (the graph's: tries)`},
		{"negative", graph.Input[fixState]{Update: func(*fixState) {}, Budgets: map[string]int{"tries": -1}}, "bound -1 is not between 0 and the declared 5"},
		{"above", graph.Input[fixState]{Update: func(*fixState) {}, Budgets: map[string]int{"tries": 6}}, "bound 6 is not between 0 and the declared 5"},
		{"no update", graph.Input[fixState]{Budgets: map[string]int{"tries": 1}}, "budgets without an update"},
	} {
		_, err := c.Run(t.Context(), tt.name, tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error saying %q", tt.name, err, tt.want)
		}
		if _, err := s.Get(t.Context(), tt.name, ""); !errors.Is(err, checkpoint.ErrNotFound) {
			t.Errorf("%s: thread read %v, want nothing written", tt.name, err)
		}
	}
}

// TestBudgetLoweredSurvivesRename: a bound a run lowered follows its
// budget when a later version renames it.
func TestBudgetLoweredSurvivesRename(t *testing.T) {
	s := checkpoint.NewMemory()
	one := must(fixGraph().Compile(graph.WithSaver(s)))(t)
	res, err := one.Run(t.Context(), "r", graph.Input[fixState]{Update: func(f *fixState) { f.AskAt = 2 }, Budgets: map[string]int{"tries": 2}})
	if err != nil || res.Status != graph.StatusInterrupted {
		t.Fatalf("%+v, %v; want a question at the second fix", res, err)
	}
	g := graph.New[fixState]("fix").Version(2).Migrate(1, graph.RenameBudget("tries", "attempts")).
		Node("fix", func(ctx context.Context, f fixState) (fixState, error) {
			if f.Fixes+1 == f.AskAt {
				if _, err := graph.Ask[bool](ctx, "go on?"); err != nil {
					return f, err
				}
			}
			f.Fixes++
			return f, nil
		}).
		Node("check", func(_ context.Context, f fixState) (fixState, error) { return f, nil }).
		Node("give_up", func(ctx context.Context, f fixState) (fixState, error) {
			f.Left, _ = graph.Bound(ctx, "attempts")
			return f, nil
		}).
		Edge(graph.Start, "check").Edge("check", "fix").Edge("fix", "check").Edge("give_up", graph.End)
	g.Budget("attempts", 5, "give_up").Count("check", "fix", 0).Count("fix", "check", 1)
	two := must(g.Compile(graph.WithSaver(s)))(t)
	res, err = two.Resume(t.Context(), "r", true)
	if err != nil {
		t.Fatal(err)
	}
	if res.State.Fixes != 2 || res.State.Left != 2 {
		t.Errorf("after the rename: %d fixes, bound %d; want 2 fixes under the bound 2", res.State.Fixes, res.State.Left)
	}
}
