package schedule

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/internal/budgettest"
	"github.com/loomkit/loom/llm/llmtest"
	"github.com/loomkit/loom/llm/openai"
)

// TestBoundsTakeTheirDrawnExits: each bound the schedule agent declares
// (its loops, and the budgets of the ReAct loop that executes a plan) is
// spent by a run here, and the run then goes where the drawing says. A
// declared bound without a run here fails the test.
func TestBoundsTakeTheirDrawnExits(t *testing.T) {
	steps := make([]Step, maxSteps+2)
	for i := range steps {
		steps[i] = Step{Content: fmt.Sprintf("第 %d 步", i+1)}
	}
	runs := []struct {
		name     string // a budget's name, or the node a loop leaves
		from, to string // the exit drawn and taken
		reply    string // what the model answers, every time
		in       graph.Input[State]
		answers  int // questions answered after in, each by a resume
	}{{
		name: nodePlan, from: nodePlan, to: nodeConfirm,
		reply: `{"action":"continue","speak":"再想想"}`,
		in: graph.Input[State]{Goto: nodePlan, Update: func(s *State) {
			s.Phase, s.Plan = phasePlanning, Plan{Goal: "安排下周的复习"}
		}},
	}, {
		// Every plan asks a question: the answer in a row past
		// maxInteractions ends the task.
		name: nodeInterrupt, from: nodeInterrupt, to: nodeDeliver,
		reply: `{"action":"ask_user","question":"哪天有空？"}`,
		in: graph.Input[State]{Goto: nodePlan, Update: func(s *State) {
			s.Phase, s.Plan = phasePlanning, Plan{Goal: "安排下周的复习"}
		}},
		answers: maxInteractions + 1,
	}, {
		name: nodeAdvance, from: nodeAdvance, to: nodeDeliver,
		reply: `{"action":"finish","answer":"next_plan: 完成"}`,
		in: graph.Input[State]{Goto: nodeStep, Update: func(s *State) {
			s.Phase, s.Plan = phaseExecuting, Plan{Goal: "很多小步", Steps: steps}
		}},
	}, {
		name: execPrefix + agent.Corrections, from: execPrefix + agent.Think, to: execPrefix + agent.Pause,
		reply: `not a decision`,
		in: graph.Input[State]{Goto: nodeStep, Update: func(s *State) {
			s.Phase, s.Plan = phaseExecuting, Plan{Goal: "一步", Steps: steps[:1]}
		}},
	}, {
		name: execPrefix + agent.Rounds, from: execPrefix + agent.Act, to: execPrefix + agent.Pause,
		reply: `{"action":"call_tool","tool":"get_schedule","args":{}}`,
		in: graph.Input[State]{Goto: nodeStep, Update: func(s *State) {
			s.Phase, s.Plan = phaseExecuting, Plan{Goal: "一步", Steps: steps[:1]}
		}},
	}}
	// The ReAct loop's own loops (act → act, pause → think) are those of
	// every agent built with agent.AddTo: agent's
	// TestLoopsTakeTheirDrawnExits spends them.
	tested := map[string]bool{execPrefix + agent.Act: true, execPrefix + agent.Pause: true}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			tested[r.name] = true
			srv := llmtest.New(t)
			srv.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Text("<DECISION>" + r.reply + "</DECISION>") })
			model, err := openai.New(openai.Config{BaseURL: srv.BaseURL(), APIKey: "test", Model: "fake", MaxRetries: 0})
			if err != nil {
				t.Fatal(err)
			}
			p := start(t, "", model, func(c *Config) { c.MaxRounds = 3 * maxSteps })
			drawn := slices.ContainsFunc(p.graph.Spec().Edges, func(e graph.Edge) bool {
				return e.Exit && e.From == r.from && e.To == r.to
			})
			if !drawn {
				t.Fatalf("no exit %s → %s drawn:\n%s", r.from, r.to, p.graph.Mermaid())
			}
			var path []string
			ins := append([]graph.Input[State]{r.in}, slices.Repeat([]graph.Input[State]{{Resume: Answer{Text: "周三有空"}}}, r.answers)...)
			for _, in := range ins {
				for ev, err := range p.graph.Stream(context.Background(), "t", in) {
					if err != nil {
						t.Fatal(err)
					}
					if ev.Kind == graph.KindNodeStart {
						path = append(path, ev.Node)
					}
				}
			}
			took := false
			for i := 1; i < len(path); i++ {
				took = took || path[i-1] == r.from && path[i] == r.to
			}
			if !took {
				t.Errorf("no step %s → %s: %s", r.from, r.to, strings.Join(path, " → "))
			}
			// advance → deliver is a route target too: here the plan had
			// steps left when the loop's exit ended it.
			if n := strings.Count(" "+strings.Join(path, " ")+" ", " "+nodeStep+" "); r.name == nodeAdvance && n != maxSteps+1 {
				t.Errorf("%d steps ran of %d, want %d", n, len(steps), maxSteps+1)
			}
		})
	}
	p := start(t, "", nil)
	budgettest.Unspent(t, p.graph.Spec(), tested)
}

// TestNoStateCountsABudget: no int field of the agent's state (its ReAct
// state included) counts tries, retries, corrections in a row or the
// stretch of rounds the budgets count.
func TestNoStateCountsABudget(t *testing.T) {
	budgettest.NoCounters(t, reflect.TypeFor[State](), budgettest.Counter("Corrections"))
}
