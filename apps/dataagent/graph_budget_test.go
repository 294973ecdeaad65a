package dataagent_test

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/dataagent"
	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/datasource"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/internal/budgettest"
	"github.com/loomkit/loom/llm/openai"
)

// tablesNamed is a schema recaller that names tables, whatever the source
// holds.
type tablesNamed []string

func (t tablesNamed) Recall(context.Context, string, []string, int) ([]datasource.Table, string, error) {
	var out []datasource.Table
	for _, n := range t {
		out = append(out, datasource.Table{Name: n})
	}
	return out, "", nil
}

// failingPython is a sandbox in which every script fails.
type failingPython struct{}

func (failingPython) Run(context.Context, string, map[string][]byte) (*dataagent.PythonOutput, error) {
	return nil, &dataagent.PythonError{Message: "ValueError: boom"}
}

// budgetRun is a run of the analyst that spends one budget: how the
// agent is configured, what the model answers, and the runs' inputs.
type budgetRun struct {
	budget string
	config func(t *testing.T, cfg *dataagent.Config, m *fakeModel)
	// inputs are the runs, in order, on one thread.
	inputs []graph.Input[dataagent.State]
	// answer, when set, is what the turn's answer must say.
	answer string
}

func ask(q string, review bool) graph.Input[dataagent.State] {
	return graph.Input[dataagent.State]{Update: func(s *dataagent.State) { s.Question, s.HumanReview = q, review }}
}

// TestBudgetsTakeTheirDrawnExits: for every budget the analyst's graph
// declares, a run that spends it goes from an edge the budget counts to
// the exit the drawing shows, and the turn says why. A budget declared
// without a run here fails the test.
func TestBudgetsTakeTheirDrawnExits(t *testing.T) {
	src := dealer(t)
	good := plan("sql", "total sale price by salesperson, highest first")
	reject := graph.Input[dataagent.State]{Resume: dataagent.Feedback{Note: "group by region instead"}}
	pythonSteps := func(cfg *dataagent.Config, m *fakeModel) {
		cfg.Python = failingPython{}
		front(m, "How are sale prices spread across salespersons?")
		m.decide(callPlanner, plan("sql", "total sale price by salesperson", "python", "the spread of the totals")).
			decide(callSQL, map[string]any{"sql": topSalesSQL}).
			decide(callConsistency, map[string]any{"consistent": true})
		for range dataagent.DefaultPythonTries {
			m.add(callPython, "```python\nraise ValueError('boom')\n```")
		}
	}
	runs := []budgetRun{{
		budget: "relation_retries",
		config: func(t *testing.T, cfg *dataagent.Config, m *fakeModel) {
			closed, err := datasource.Open(context.Background(), src.URL, datasource.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			closed.Close()
			cfg.Sources, cfg.Model, cfg.Schema = []dataagent.Source{{Name: "dealer", Source: closed}}, nil, tablesNamed{"sales"}
		},
		inputs: []graph.Input[dataagent.State]{ask("Who sold the most?", false)},
		answer: "could not read the tables' structure",
	}, {
		budget: "plan_repairs",
		config: func(_ *testing.T, _ *dataagent.Config, m *fakeModel) {
			front(m, "Who sold the most?")
			bad := plan("python", "rank the salespersons")
			m.decide(callPlanner, bad).decide(callPlanner, bad).decide(callPlanner, bad)
		},
		inputs: []graph.Input[dataagent.State]{ask("Who sold the most?", false)},
		answer: "could not make a valid plan",
	}, {
		budget: "plan_rejections",
		config: func(_ *testing.T, _ *dataagent.Config, m *fakeModel) {
			front(m, "Who sold the most?")
			for range dataagent.MaxRejections + 1 {
				m.decide(callPlanner, good)
			}
		},
		inputs: append([]graph.Input[dataagent.State]{ask("Who sold the most?", true)},
			slices.Repeat([]graph.Input[dataagent.State]{reject}, dataagent.MaxRejections+1)...),
		answer: fmt.Sprintf("rejected %d times", dataagent.MaxRejections+1),
	}, {
		budget: "sql_tries",
		config: func(_ *testing.T, _ *dataagent.Config, m *fakeModel) {
			front(m, "Who sold the most?")
			m.decide(callPlanner, good)
			for i := range dataagent.SQLTries {
				m.decide(callSQL, map[string]any{"sql": fmt.Sprintf("SELECT no_such_column_%d FROM sales", i)}).
					decide(callConsistency, map[string]any{"consistent": true})
			}
		},
		inputs: []graph.Input[dataagent.State]{ask("Who sold the most?", false)},
		answer: fmt.Sprintf("in %d tries", dataagent.SQLTries),
	}, {
		budget: "python_tries",
		config: func(_ *testing.T, cfg *dataagent.Config, m *fakeModel) {
			pythonSteps(cfg, m)
			m.add(callAnalyze, "The totals range widely.").add(callReport, "# Spread\n\nThe totals range widely.")
		},
		inputs: []graph.Input[dataagent.State]{ask("How spread out are the sales?", false)},
	}, {
		budget: "python_tries", // with StrictPython the exit ends the turn
		config: func(_ *testing.T, cfg *dataagent.Config, m *fakeModel) {
			pythonSteps(cfg, m)
			cfg.StrictPython = true
		},
		inputs: []graph.Input[dataagent.State]{ask("How spread out are the sales?", false)},
		answer: fmt.Sprintf("failed %d times", dataagent.DefaultPythonTries),
	}, {
		// A valid plan has at most MaxSteps steps: this one is started at
		// plan_executor as if it had passed, and runs without a model
		// from a stored example.
		budget: "plan_steps",
		config: func(_ *testing.T, cfg *dataagent.Config, _ *fakeModel) { cfg.Model = nil },
		inputs: []graph.Input[dataagent.State]{{Goto: dataagent.NodeExecutor, Update: func(s *dataagent.State) {
			s.Query = "How many sales?"
			s.Intent = &dataagent.IntentDecision{Kind: "analysis"}
			s.Enhanced = &dataagent.EnhancedQuery{Canonical: s.Query}
			s.Example = &dataagent.Evidence{Kind: "example", Title: "How many sales?", SQL: "SELECT count(*) AS n FROM sales", Match: 1}
			s.Plan = &dataagent.Plan{Steps: slices.Repeat([]dataagent.Step{{Tool: "sql", Instruction: "count the sales"}}, dataagent.MaxSteps+2)}
			s.PlanChecked, s.PlanValid = true, true
		}}},
	}}

	tested := map[string]bool{}
	for _, r := range runs {
		t.Run(r.budget, func(t *testing.T) {
			tested[r.budget] = true
			m := newModel(t)
			model, err := openai.New(openai.Config{BaseURL: m.srv.BaseURL(), APIKey: "test", Model: "fake", MaxRetries: 0})
			if err != nil {
				t.Fatal(err)
			}
			s, err := datasource.Open(context.Background(), src.URL, datasource.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			cfg := dataagent.Config{Sources: []dataagent.Source{{Name: "dealer", Source: s}}, Model: model, Logger: slog.New(slog.DiscardHandler)}
			r.config(t, &cfg, m)
			c, err := dataagent.New(cfg).Graph().Compile(graph.WithSaver(checkpoint.NewMemory()))
			if err != nil {
				t.Fatal(err)
			}
			bs, from := budgetSpec(t, c.Spec(), r.budget)
			var path []string
			var last *graph.Result[dataagent.State]
			for _, in := range r.inputs {
				for ev, err := range c.Stream(context.Background(), "t", in) {
					if err != nil {
						t.Fatal(err)
					}
					switch ev.Kind {
					case graph.KindNodeStart:
						path = append(path, ev.Node)
					case graph.KindRunEnd:
						last = ev.Data.(*graph.Result[dataagent.State])
					}
				}
			}
			if last == nil || last.Status != graph.StatusDone {
				t.Fatalf("the run did not end: %+v", last)
			}
			if !tookExit(path, from, bs.Exit) {
				t.Errorf("no step from %v to the exit %s; path %s", from, bs.Exit, strings.Join(path, " → "))
			}
			st := last.State
			if r.answer != "" && (st.Answer == nil || !st.Answer.Failed || !strings.Contains(st.Answer.Text, r.answer)) {
				t.Errorf("answer %+v, want a failure saying %q", st.Answer, r.answer)
			}
			if r.answer == "" && (st.Answer == nil || st.Answer.Failed) {
				t.Errorf("answer %+v, want the turn answered", st.Answer)
			}
			m.left()
		})
	}
	c, err := dataagent.New(dataagent.Config{}).Graph().Compile()
	if err != nil {
		t.Fatal(err)
	}
	drawing := c.Mermaid()
	budgettest.UnspentBudgets(t, c.Spec(), tested)
	for _, b := range c.Spec().Budgets {
		if !strings.Contains(drawing, fmt.Sprintf("|\"%s spent (%d)\"|", b.Name, b.Max)) {
			t.Errorf("the drawing does not show %s's exit:\n%s", b.Name, drawing)
		}
	}
}

// budgetSpec returns the budget named name of sp and the nodes its exit
// is drawn from (every node an edge it counts leaves).
func budgetSpec(t *testing.T, sp graph.Spec, name string) (graph.BudgetSpec, []string) {
	t.Helper()
	for _, b := range sp.Budgets {
		if b.Name != name {
			continue
		}
		var from []string
		for _, c := range b.Counts {
			drawn := slices.ContainsFunc(sp.Edges, func(e graph.Edge) bool {
				return e.Exit && e.Budget == name && e.From == c.From && e.To == b.Exit && e.Max == b.Max
			})
			if !drawn {
				t.Errorf("budget %s: no exit drawn from %s to %s", name, c.From, b.Exit)
			}
			from = append(from, c.From)
		}
		return b, from
	}
	t.Fatalf("the graph declares no budget %s: %+v", name, sp.Budgets)
	return graph.BudgetSpec{}, nil
}

// tookExit reports whether the path steps from one of from straight to
// exit.
func tookExit(path, from []string, exit string) bool {
	for i := 1; i < len(path); i++ {
		if path[i] == exit && slices.Contains(from, path[i-1]) {
			return true
		}
	}
	return false
}

// TestNoStateCountsABudget: no int field of the analyst's state (nested
// structs included) counts tries; the graph's budgets do.
func TestNoStateCountsABudget(t *testing.T) {
	budgettest.NoCounters(t, reflect.TypeFor[dataagent.State](), budgettest.Counter())
}
