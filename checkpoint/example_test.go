package checkpoint_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
)

// Counter is the state of the examples' graph: each run adds one.
type Counter struct{ N int }

// counter returns a one-node graph that adds one to N, checkpointed on s.
func counter(s checkpoint.Saver) *graph.Compiled[Counter] {
	g := graph.New[Counter]("counter")
	g.Node("add", func(_ context.Context, c Counter) (Counter, error) { c.N++; return c, nil }).
		Edge(graph.Start, "add").
		Edge("add", graph.End)
	agent, err := g.Compile(graph.WithSaver(s))
	if err != nil {
		log.Fatal(err)
	}
	return agent
}

// Undo makes an earlier checkpoint the thread's head again by appending
// a copy of it: the history keeps every version, so an undo can be
// undone too.
func ExampleUndo() {
	ctx := context.Background()
	s := checkpoint.NewMemory()
	agent := counter(s)
	for range 3 {
		if _, err := agent.Invoke(ctx, "t", func(*Counter) {}); err != nil {
			log.Fatal(err)
		}
	}
	hist, err := s.List(ctx, "t", 0) // newest first
	if err != nil {
		log.Fatal(err)
	}
	var first *checkpoint.Checkpoint // the checkpoint after the first run's step
	for _, cp := range hist {
		var c Counter
		if json.Unmarshal(cp.State, &c) == nil && c.N == 1 && cp.Meta.Source == checkpoint.SourceStep {
			first = cp
		}
	}
	head, err := checkpoint.Undo(ctx, s, "t", first.ID)
	if err != nil {
		log.Fatal(err)
	}
	res, err := agent.Invoke(ctx, "t", func(*Counter) {}) // goes on from the undone version
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(head.Meta.Source, string(head.State), "then", res.State.N)
	// Output: undo {"N":1} then 2
}

// Fork starts a new thread from any checkpoint of another, with its state
// edited on the way.
func ExampleFork() {
	ctx := context.Background()
	s := checkpoint.NewMemory()
	agent := counter(s)
	res, err := agent.Invoke(ctx, "main", func(c *Counter) { c.N = 10 })
	if err != nil {
		log.Fatal(err)
	}
	_, err = checkpoint.Fork(ctx, s, "main", res.Checkpoint, "branch", func(state json.RawMessage) (json.RawMessage, error) {
		var c Counter
		if err := json.Unmarshal(state, &c); err != nil {
			return nil, err
		}
		c.N *= 10
		return json.Marshal(c)
	})
	if err != nil {
		log.Fatal(err)
	}
	branch, err := agent.Invoke(ctx, "branch", func(*Counter) {})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("main:", res.State.N, "branch:", branch.State.N)
	// Output: main: 11 branch: 111
}
