package agent_test

import (
	"context"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/llm/llmtest"
)

// TestLoopsTakeTheirDrawnExits: besides its budgets (taken by
// TestFourMalformedAnswersTakeTheDrawnExit and
// TestBudgetPausesAndContinues), the ReAct loop declares one loop, which
// every agent built with AddTo has: pause → think, once per "go on" in a
// run (1000). A run that spends it takes the drawn exit. A bound declared
// without a run in this package fails the test.
func TestLoopsTakeTheirDrawnExits(t *testing.T) {
	ctx := context.Background()
	loops := map[string]graph.Edge{} // a loop's exit, by the node it leaves
	spec := newFixture(t, true, 1).graph.Spec()
	for _, e := range spec.Edges {
		if e.Exit && e.Budget == "" {
			loops[e.From] = e
		}
	}
	tested := map[string]bool{agent.Rounds: true, agent.Corrections: true} // the tests named above
	path := func(t *testing.T, c *graph.Compiled[agent.State], ins ...graph.Input[agent.State]) ([]string, *graph.Result[agent.State]) {
		var nodes []string
		var res *graph.Result[agent.State]
		for _, in := range ins {
			for ev, err := range c.Stream(ctx, "t", in) {
				if err != nil {
					t.Fatal(err)
				}
				switch ev.Kind {
				case graph.KindNodeStart:
					nodes = append(nodes, ev.Node)
				case graph.KindRunEnd:
					res = ev.Data.(*graph.Result[agent.State])
				}
			}
		}
		return nodes, res
	}

	t.Run("pause>think", func(t *testing.T) {
		tested[agent.Pause] = true
		if testing.Short() {
			t.Skip("a thousand pauses, each answered (half a minute)")
		}
		exit := loops[agent.Pause]
		// A round budget of 1: every round pauses, and every pause is
		// answered "go on".
		f := newFixture(t, false, 1)
		f.srv.Handle(func(req llmtest.Request) llmtest.Reply {
			if strings.Contains(lastUser(req), "step budget") {
				return llmtest.Text("Checked the weather.")
			}
			return decide(`{"action":"call_tool","tool":"weather","args":{"city":"Rome"}}`)
		})
		ins := []graph.Input[agent.State]{{Update: agent.Say("Keep checking the weather")}}
		for range exit.Max + 1 {
			ins = append(ins, graph.Input[agent.State]{Resume: agent.PauseAnswer{Continue: true}})
		}
		nodes, res := path(t, f.graph, ins...)
		// New's exit is End: the run ends at the pause that was answered
		// "go on" once more than the loop allows.
		if exit.To != graph.End || nodes[len(nodes)-1] != agent.Pause {
			t.Errorf("drawn exit %+v; path ends %s", exit, strings.Join(nodes[max(len(nodes)-4, 0):], " → "))
		}
		if res == nil || res.Status != graph.StatusDone || res.State.Rounds != exit.Max+1 {
			t.Fatalf("result %+v, want done after %d rounds", res, exit.Max+1)
		}
	})

	for from, e := range loops {
		if !tested[from] {
			t.Errorf("loop out of %s (exit %s): no run spends it here", from, e.To)
		}
	}
	for _, b := range spec.Budgets {
		if !tested[b.Name] {
			t.Errorf("budget %s: no run spends it here", b.Name)
		}
	}
}

// TestNoStateCountsABudget: no int field of the ReAct state counts what
// the budgets count (malformed answers in a row, the rounds since the
// last message or pause); Rounds counts the thread's rounds for the
// status line, which no budget does.
func TestNoStateCountsABudget(t *testing.T) {
	counter := regexp.MustCompile(`(Tries|Retry|Retries|Repairs|Rejections|Attempts|Stretch|Corrections)$`)
	typ := reflect.TypeFor[agent.State]()
	for f := range typ.Fields() {
		if k := f.Type.Kind(); k >= reflect.Int && k <= reflect.Uint64 && counter.MatchString(f.Name) {
			t.Errorf("State.%s counts what a budget counts", f.Name)
		}
	}
}
