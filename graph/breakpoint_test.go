package graph_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
)

// abc is Start → a → b → c → End; a is pure, and runs counts a's runs.
func abc(runs *atomic.Int32, opts ...graph.CompileOption) (*graph.Compiled[counter], error) {
	a := func(ctx context.Context, s counter) (counter, error) {
		runs.Add(1)
		return inc("a")(ctx, s)
	}
	g := graph.New[counter]("abc").
		Node("a", a, graph.Pure()).Node("b", inc("b")).Node("c", inc("c")).
		Edge(graph.Start, "a").Edge("a", "b").Edge("b", "c").Edge("c", graph.End)
	return g.Compile(append([]graph.CompileOption{graph.WithSaver(checkpoint.NewMemory())}, opts...)...)
}

func stopsAt(t *testing.T, res *graph.Result[counter], err error, node, when, log string) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != graph.StatusInterrupted || res.Breakpoint == nil || *res.Breakpoint != (graph.Breakpoint{Node: node, When: when}) || res.Interrupt != nil {
		t.Fatalf("result %+v (breakpoint %+v), want a stop %s %s", res, res.Breakpoint, when, node)
	}
	if got := strings.Join(res.State.Log, " "); got != log {
		t.Errorf("stopped %s %s after %q, want %q", when, node, got, log)
	}
}

// TestBreakpointBefore: the run stops before b with a's step written (a
// is pure, so it would not be on its own); Continue runs b without
// stopping again there, and without running a again.
func TestBreakpointBefore(t *testing.T) {
	var runs atomic.Int32
	c := must(abc(&runs, graph.WithInterruptBefore("b")))(t)
	ctx := context.Background()
	res, err := c.Invoke(ctx, "t", nil)
	stopsAt(t, res, err, "b", "before", "a")
	res, err = c.Continue(ctx, "t")
	if err != nil || res.Status != graph.StatusDone || strings.Join(res.State.Log, " ") != "a b c" || runs.Load() != 1 {
		t.Fatalf("after continue: %+v, %v; a ran %d times", res, err, runs.Load())
	}
}

// TestBreakpointAfter: after a pure node too, the stop is checkpointed.
func TestBreakpointAfter(t *testing.T) {
	var runs atomic.Int32
	c := must(abc(&runs, graph.WithInterruptAfter("a", "b")))(t)
	ctx := context.Background()
	res, err := c.Invoke(ctx, "t", nil)
	stopsAt(t, res, err, "a", "after", "a")
	res, err = c.Continue(ctx, "t")
	stopsAt(t, res, err, "b", "after", "a b")
	res, err = c.Continue(ctx, "t")
	if err != nil || res.Status != graph.StatusDone || strings.Join(res.State.Log, " ") != "a b c" || runs.Load() != 1 {
		t.Fatalf("after continue: %+v, %v; a ran %d times", res, err, runs.Load())
	}
}

// TestBreakpointsPerRun: a run's own breakpoints replace the compiled
// ones; an empty list means none; AllNodes stops before every node.
func TestBreakpointsPerRun(t *testing.T) {
	var runs atomic.Int32
	c := must(abc(&runs, graph.WithInterruptBefore("b")))(t)
	ctx := context.Background()
	res, err := c.Run(ctx, "t1", graph.Input[counter]{Update: func(*counter) {}, InterruptBefore: []string{"c"}})
	stopsAt(t, res, err, "c", "before", "a b")
	res, err = c.Run(ctx, "t2", graph.Input[counter]{Update: func(*counter) {}, InterruptBefore: []string{}})
	if err != nil || res.Status != graph.StatusDone {
		t.Fatalf("no breakpoints: %+v, %v", res, err)
	}
	res, err = c.Run(ctx, "t3", graph.Input[counter]{Update: func(*counter) {}, InterruptBefore: []string{graph.AllNodes}})
	stopsAt(t, res, err, "a", "before", "")
	for _, want := range [][2]string{{"b", "a"}, {"c", "a b"}} {
		res, err = c.Run(ctx, "t3", graph.Input[counter]{InterruptBefore: []string{graph.AllNodes}})
		stopsAt(t, res, err, want[0], "before", want[1])
	}
	if _, err := c.Run(ctx, "t4", graph.Input[counter]{Update: func(*counter) {}, InterruptAfter: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), `interrupt after "nope": no such node`) {
		t.Errorf("unknown node: %v", err)
	}
}

// TestBreakpointInLoop: a breakpoint in a loop stops every round.
func TestBreakpointInLoop(t *testing.T) {
	g := graph.New[counter]("loop").Node("spin", inc("spin")).
		Edge(graph.Start, "spin").
		Route("spin", func(s counter) string {
			if s.N < 3 {
				return "spin"
			}
			return graph.End
		}, "spin", graph.End).
		Loop("spin", "spin", 5, graph.End)
	c := must(g.Compile(graph.WithSaver(checkpoint.NewMemory()), graph.WithInterruptAfter("spin")))(t)
	ctx := context.Background()
	res, err := c.Invoke(ctx, "t", nil)
	stopsAt(t, res, err, "spin", "after", "spin")
	res, err = c.Continue(ctx, "t")
	stopsAt(t, res, err, "spin", "after", "spin spin")
	res, err = c.Continue(ctx, "t")
	if err != nil || res.Status != graph.StatusDone || res.State.N != 3 {
		t.Fatalf("%+v, %v", res, err)
	}
}

func TestBreakpointCompileErrors(t *testing.T) {
	var runs atomic.Int32
	if _, err := abc(&runs, graph.WithInterruptBefore("x")); err == nil || !strings.Contains(err.Error(), `interrupt before "x": no such node`) {
		t.Errorf("unknown node: %v", err)
	}
	g := graph.New[counter]("nosaver").Node("a", inc("a")).Edge(graph.Start, "a").Edge("a", graph.End)
	if _, err := g.Compile(graph.WithInterruptAfter("a")); err == nil || !strings.Contains(err.Error(), "breakpoints need a saver") {
		t.Errorf("no saver: %v", err)
	}
}
