package graph_test

import (
	"context"
	"errors"
	"testing"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
)

// A pure step is checkpointed with the next step that is, and a run that
// stops after it runs it again.
func TestPureSteps(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory()
	ran := map[string]int{}
	add := func(name string, fail bool) graph.NodeFunc[[]string] {
		return func(ctx context.Context, s []string) ([]string, error) {
			ran[name]++
			if fail && ran[name] == 1 {
				return s, errors.New("down")
			}
			return append(s, name), nil
		}
	}
	c, err := graph.New[[]string]("pure").
		Node("a", add("a", false), graph.Pure()).
		Node("b", add("b", false), graph.Pure()).
		Node("c", add("c", true)).
		Node("d", add("d", false), graph.Pure()).
		Edge(graph.Start, "a").Edge("a", "b").Edge("b", "c").Edge("c", "d").Edge("d", graph.End).
		Compile(graph.WithSaver(saver))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Invoke(ctx, "t", nil); err == nil {
		t.Fatal("c's first try did not fail the run")
	}
	head, err := saver.Get(ctx, "t", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(head.Next) != 1 || head.Next[0] != "a" {
		t.Fatalf("after a failure past two pure steps the head goes on at %v, want a", head.Next)
	}
	res, err := c.Continue(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if got := res.State; len(got) != 4 || got[3] != "d" || ran["a"] != 2 || ran["c"] != 2 || ran["d"] != 1 {
		t.Fatalf("state %v after runs %v; want a b c d, the pure steps run again", got, ran)
	}
	all, err := saver.List(ctx, "t", 0)
	if err != nil {
		t.Fatal(err)
	}
	var steps int
	for _, cp := range all {
		if cp.Meta.Source == checkpoint.SourceStep {
			steps++
		}
	}
	if steps != 2 {
		t.Errorf("%d step checkpoints, want 2 (c, and d which ends the run)", steps)
	}
}
