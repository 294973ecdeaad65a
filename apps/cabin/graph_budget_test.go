package cabin

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/internal/budgettest"
)

// TestLoopsTakeTheirDrawnExits: each loop the cabin graph declares is
// spent by a run here, and the run then goes where the drawing says:
// questions answered with small talk maxAnswers+1 times in a row (a slot
// question, a confirmation: the run ends and the session still waits),
// and workflows longer than the planners make (tool calls, steps whose
// condition does not hold: the reply comes after maxSteps of them). A
// declared loop or budget without a run here fails the test.
func TestLoopsTakeTheirDrawnExits(t *testing.T) {
	ctx := context.Background()
	a := newApp(t, Options{})
	sp := a.graph.Spec()
	exits := map[string]string{} // a loop's exit, by the node it leaves
	for _, e := range sp.Edges {
		if e.Exit && e.Budget == "" {
			exits[e.From] = e.To
		}
	}
	run := func(t *testing.T, thread string, ins ...graph.Input[State]) ([]string, *graph.Result[State]) {
		var path []string
		var res *graph.Result[State]
		for _, in := range ins {
			for ev, err := range a.graph.Stream(ctx, thread, in) {
				if err != nil {
					t.Fatal(err)
				}
				switch ev.Kind {
				case graph.KindNodeStart:
					path = append(path, ev.Node)
				case graph.KindRunEnd:
					res = ev.Data.(*graph.Result[State])
				}
			}
		}
		return path, res
	}
	say := func(text string) graph.Input[State] {
		return graph.Input[State]{Update: func(s *State) { s.Text, s.Channel = text, "api" }}
	}
	smallTalk := slices.Repeat([]graph.Input[State]{{Resume: Answer{Text: "thanks"}}}, maxAnswers+1)

	// A workflow of n copies of the step "open the windows" made.
	steps := func(t *testing.T, n int, cond *Condition) *Workflow {
		_, res := run(t, "windows", say("open the windows"))
		wf := res.State.Session.Workflow
		if wf == nil || len(wf.Steps) != 1 || wf.Steps[0].Status != stepDone {
			t.Fatalf("open the windows: workflow %+v", wf)
		}
		out := &Workflow{Kind: workflowSequence, Source: "test"}
		for i := range n {
			st := wf.Steps[0]
			st.ID, st.Status, st.Result, st.Condition = fmt.Sprintf("s%d", i+1), stepPending, nil, cond
			out.Steps = append(out.Steps, st)
		}
		return out
	}
	startAt := func(wf *Workflow) graph.Input[State] {
		return graph.Input[State]{Goto: nodeNextStep, Update: func(s *State) {
			s.Text, s.Channel, s.Session.Workflow, s.Session.Intent = "open the windows", "api", wf, wf.Steps[0].Intent
		}}
	}
	last := func(path []string, from, to string) bool {
		if to == graph.End {
			return len(path) > 0 && path[len(path)-1] == from
		}
		for i := 1; i < len(path); i++ {
			if path[i-1] == from && path[i] == to {
				return true
			}
		}
		return false
	}
	cases := []struct {
		from  string
		ins   func(t *testing.T) []graph.Input[State]
		check func(t *testing.T, path []string, res *graph.Result[State])
	}{{
		from: nodeFillSlots,
		ins: func(*testing.T) []graph.Input[State] {
			return append([]graph.Input[State]{say("navigate")}, smallTalk...)
		},
		check: func(t *testing.T, _ []string, res *graph.Result[State]) {
			if res.Status != graph.StatusDone || res.State.Session.Status != statusWaitingSlot {
				t.Errorf("%s, session %s: want the run ended, the slot still asked", res.Status, res.State.Session.Status)
			}
		},
	}, {
		from: nodeConfirm,
		ins: func(*testing.T) []graph.Input[State] {
			return append([]graph.Input[State]{say("unlock the doors")}, smallTalk...)
		},
		check: func(t *testing.T, _ []string, res *graph.Result[State]) {
			if res.Status != graph.StatusDone || res.State.Session.Status != statusWaitingConfirmation {
				t.Errorf("%s, session %s: want the run ended, the yes still asked", res.Status, res.State.Session.Status)
			}
		},
	}, {
		from: nodeCallTool,
		ins: func(t *testing.T) []graph.Input[State] {
			return []graph.Input[State]{startAt(steps(t, maxSteps+2, nil))}
		},
		check: func(t *testing.T, path []string, res *graph.Result[State]) {
			if n := strings.Count(strings.Join(path, " "), nodeCallTool); n != maxSteps+1 {
				t.Errorf("%d tool calls, want %d", n, maxSteps+1)
			}
			if wf := res.State.Session.Workflow; wf.Steps[maxSteps+1].Status != stepPending {
				t.Errorf("the last step is %s, want it left pending", wf.Steps[maxSteps+1].Status)
			}
		},
	}, {
		from: nodeCondition,
		ins: func(t *testing.T) []graph.Input[State] {
			never := &Condition{Step: "nowhere", Field: "status", Operator: opEquals, Value: []string{"x"}}
			return []graph.Input[State]{startAt(steps(t, maxSteps+2, never))}
		},
		check: func(t *testing.T, path []string, res *graph.Result[State]) {
			if n := strings.Count(strings.Join(path, " "), nodeCondition); n != maxSteps+1 {
				t.Errorf("%d conditions, want %d", n, maxSteps+1)
			}
		},
	}}
	tested := map[string]bool{}
	for _, c := range cases {
		t.Run(c.from, func(t *testing.T) {
			tested[c.from] = true
			to, ok := exits[c.from]
			if !ok {
				t.Fatalf("no loop exit drawn from %s:\n%s", c.from, a.graph.Mermaid())
			}
			path, res := run(t, "t-"+c.from, c.ins(t)...)
			if res == nil || !last(path, c.from, to) {
				t.Fatalf("no step %s → %s: %s", c.from, to, strings.Join(path[max(len(path)-6, 0):], " → "))
			}
			c.check(t, path, res)
		})
	}
	budgettest.Unspent(t, sp, tested)
}

// TestNoStateCountsABudget: no int field of the cabin's state counts
// tries, retries, repairs or rejections, or the answers and steps its
// loops count.
func TestNoStateCountsABudget(t *testing.T) {
	budgettest.NoCounters(t, reflect.TypeFor[State](), budgettest.Counter("Answers", "Steps"))
}
