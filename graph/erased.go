package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"

	"github.com/loomkit/loom/checkpoint"
)

// Runner is a compiled graph with its state type hidden behind JSON, for
// code that serves many graphs: the command line and the server.
// *Compiled[S] implements it.
type Runner interface {
	Name() string
	Spec() Spec
	Mermaid() string
	Scenarios() []Scenario
	Saver() checkpoint.Saver
	// StateSchema is the JSON schema of the state, or nil.
	StateSchema() json.RawMessage
	// Subgraphs are the graphs nodes run, by node name (see
	// Graph.Subgraph).
	Subgraphs() map[string]Runner
	// StreamJSON runs the graph as in says and yields its events.
	StreamJSON(ctx context.Context, thread string, in JSONInput) iter.Seq2[Event, error]
}

// JSONInput is Input with JSON values. With Update set (a JSON object), a
// new run starts on the thread's latest state with Update's fields decoded
// over it; else with Resume set, the pending interrupt is answered; else
// the thread continues.
type JSONInput struct {
	Update    json.RawMessage `json:"update,omitempty"`
	Resume    json.RawMessage `json:"resume,omitempty"`
	Interrupt string          `json:"interrupt,omitempty"`
	// Answers answers pending questions by id (see Input.Answers).
	Answers map[string]json.RawMessage `json:"answers,omitempty"`
	// Goto, with Update, starts the run at this node (see Input.Goto).
	Goto string `json:"goto,omitempty"`
	// Run, when set, is the run's id (see Input.Run).
	Run string `json:"run,omitempty"`
	// InterruptBefore and InterruptAfter are the run's breakpoints (see
	// Input); nil: the compiled graph's.
	InterruptBefore []string `json:"interrupt_before,omitempty"`
	InterruptAfter  []string `json:"interrupt_after,omitempty"`
	// Durability is the run's durability (see Input); "": the compiled
	// graph's.
	Durability Durability `json:"durability,omitempty"`
	// Budgets, with Update, lowers budgets' bounds for the run (see
	// Input.Budgets).
	Budgets map[string]int `json:"budgets,omitempty"`
}

// StreamJSON implements Runner.
func (c *Compiled[S]) StreamJSON(ctx context.Context, thread string, in JSONInput) iter.Seq2[Event, error] {
	typed := Input[S]{Run: in.Run, InterruptBefore: in.InterruptBefore, InterruptAfter: in.InterruptAfter, Goto: in.Goto, Durability: in.Durability, Budgets: in.Budgets}
	switch {
	case in.Update != nil:
		var check S
		if err := json.Unmarshal(in.Update, &check); err != nil {
			return func(yield func(Event, error) bool) {
				err := fmt.Errorf("graph %s: input does not fit the state: %w", c.name, err)
				yield(Event{Kind: KindError, Thread: thread, Err: err}, err)
			}
		}
		typed.Update = func(s *S) { _ = json.Unmarshal(in.Update, s) } // checked above
	case in.Answers != nil:
		typed.Answers = make(map[string]any, len(in.Answers))
		for id, v := range in.Answers {
			typed.Answers[id] = v
		}
	case in.Resume != nil:
		typed.Resume, typed.Interrupt = in.Resume, in.Interrupt
	}
	return c.Stream(ctx, thread, typed)
}
