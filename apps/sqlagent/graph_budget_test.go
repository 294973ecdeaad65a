package sqlagent_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/apps/sqlagent"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/internal/budgettest"
	"github.com/loomkit/loom/llm/llmtest"
)

// TestBudgetsTakeTheirDrawnExits: the agent's budgets are the ReAct
// loop's, rounds and corrections; for each, a turn that spends it steps
// from an edge the budget counts to the exit the drawing shows (the
// pause): three malformed answers in a row (GiveUp then answers), and
// the round budget spent on tool calls (the pause asks whether to go on).
// A budget declared without a run here fails the test.
func TestBudgetsTakeTheirDrawnExits(t *testing.T) {
	runs := []struct {
		budget  string
		cfg     sqlagent.Config
		replies []llmtest.Reply
		check   func(t *testing.T, res *graph.Result[sqlagent.State])
	}{{
		budget:  agent.Corrections,
		replies: []llmtest.Reply{llmtest.Text("one"), llmtest.Text("two"), llmtest.Text("three")},
		check: func(t *testing.T, res *graph.Result[sqlagent.State]) {
			if res.Status != graph.StatusDone || res.State.Answer == nil || !strings.Contains(res.State.Answer.Text, "usable answer") {
				t.Errorf("%s %+v, want GiveUp's answer", res.Status, res.State.Answer)
			}
		},
	}, {
		budget: agent.Rounds,
		cfg:    sqlagent.Config{Budget: 2},
		replies: []llmtest.Reply{
			decide(`{"action":"call_tool","tool":"list_tables","args":{}}`),
			decide(`{"action":"call_tool","tool":"list_tables","args":{}}`),
			llmtest.Text("Listed the tables twice."),
		},
		check: func(t *testing.T, res *graph.Result[sqlagent.State]) {
			if res.Status != graph.StatusInterrupted || res.Interrupt == nil || res.Interrupt.Node != agent.Pause {
				t.Errorf("%s at %+v, want a question at the pause", res.Status, res.Interrupt)
			}
		},
	}}
	tested := map[string]bool{}
	for _, r := range runs {
		t.Run(r.budget, func(t *testing.T) {
			tested[r.budget] = true
			model := llmtest.New(t, r.replies...)
			c := newGraph(t, model, r.cfg)
			var exit string
			var from []string
			for _, b := range c.Spec().Budgets {
				if b.Name == r.budget {
					exit = b.Exit
					for _, u := range b.Counts {
						from = append(from, u.From)
						drawn := slices.ContainsFunc(c.Spec().Edges, func(e graph.Edge) bool {
							return e.Exit && e.Budget == b.Name && e.From == u.From && e.To == b.Exit
						})
						if !drawn {
							t.Errorf("no exit of %s drawn from %s", b.Name, u.From)
						}
					}
				}
			}
			if exit == "" {
				t.Fatalf("no budget %s declared: %+v", r.budget, c.Spec().Budgets)
			}
			var path []string
			var res *graph.Result[sqlagent.State]
			for ev, err := range c.Stream(context.Background(), "t", graph.Input[sqlagent.State]{Update: ask("How many tables?")}) {
				if err != nil {
					t.Fatal(err)
				}
				switch ev.Kind {
				case graph.KindNodeStart:
					path = append(path, ev.Node)
				case graph.KindRunEnd:
					res = ev.Data.(*graph.Result[sqlagent.State])
				}
			}
			took := false
			for i := 1; i < len(path); i++ {
				took = took || path[i] == exit && slices.Contains(from, path[i-1])
			}
			if !took || res == nil {
				t.Fatalf("no step from %v to the exit %s: %s", from, exit, strings.Join(path, " → "))
			}
			r.check(t, res)
			if model.Pending() != 0 {
				t.Errorf("%d replies left", model.Pending())
			}
		})
	}
	budgettest.UnspentBudgets(t, newGraph(t, nil, sqlagent.Config{}).Spec(), tested)
}

// TestNoStateCountsABudget: no int field of the agent's state (its ReAct
// state included) counts tries, retries, corrections in a row or the
// stretch of rounds the budgets count.
func TestNoStateCountsABudget(t *testing.T) {
	budgettest.NoCounters(t, reflect.TypeFor[sqlagent.State](), budgettest.Counter("Corrections"))
}
