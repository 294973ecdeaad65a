package graph_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
)

// SubgraphThreads lists the thread of every subgraph node, nested ones
// under theirs; a graph without subgraph nodes has none.
func TestSubgraphThreads(t *testing.T) {
	if got, want := graph.SubgraphThreads(nestedGraphs(t), "t1"), []string{"t1|mid", "t1|mid|bottom"}; !slices.Equal(got, want) {
		t.Errorf("SubgraphThreads = %q, want %q", got, want)
	}
	if got := graph.SubgraphThreads(must(chain(2).Compile())(t), "t1"); got != nil {
		t.Errorf("SubgraphThreads of a graph without subgraphs = %q, want none", got)
	}
	if got := graph.SubgraphThreads(nil, "t1"); got != nil {
		t.Errorf("SubgraphThreads(nil) = %q, want none", got)
	}
}

// A subgraph writes its checkpoints as the outer run's durability says:
// with exit, only where it stops (the step before the node that asked,
// or its end); with sync and async, every step. Either way each question
// gets its own answer, and the run ends the same.
func TestSubgraphFollowsDurability(t *testing.T) {
	want := map[graph.Durability]string{
		graph.DurabilitySync:  "input::0 step:prep:1 step:one:2 step:two:3 input::0 step:prep:1",
		graph.DurabilityAsync: "input::0 step:prep:1 step:one:2 step:two:3 input::0 step:prep:1",
		graph.DurabilityExit:  "step:prep:1 step:one:2 step:two:3 step:prep:1",
	}
	for _, s := range savers {
		for _, d := range durabilities {
			t.Run(s.name+"/"+string(d), func(t *testing.T) {
				ctx := t.Context()
				saver := s.open(t)
				var preps atomic.Int32
				c := outerOf(t, askTwice(t, &preps), saver)
				res := must(c.Run(ctx, "t", graph.Input[counter]{Update: func(s *counter) { s.N = 5 }, Durability: d}))(t)
				for _, answer := range []string{"yes", "no"} {
					if res.Status != graph.StatusInterrupted {
						t.Fatalf("before answer %q: %s, want a question", answer, res.Status)
					}
					res = must(c.Run(ctx, "t", graph.Input[counter]{Resume: answer, Durability: d}))(t)
				}
				if res.Status != graph.StatusInterrupted || res.Interrupt == nil || string(res.Interrupt.Payload) != `"one?"` {
					t.Fatalf("after two answers: %s with %+v; want the second visit of sub asking one", res.Status, res.Interrupt)
				}
				if want := []string{"one=yes", "two=no", "after"}; !slices.Equal(res.State.Log, want) || res.State.N != 7 {
					t.Errorf("log %v, N = %d; want %v and 7", res.State.Log, res.State.N, want)
				}
				if n := preps.Load(); n != 2 {
					t.Errorf("prep ran %d times, want 2", n)
				}
				if got := describe(lineOf(t, saver, graph.SubgraphThread("t", "sub"))); got != want[d] {
					t.Errorf("the subgraph's checkpoints:\n%s\nwant\n%s", got, want[d])
				}
			})
		}
	}
}

// Nested subgraphs follow the outer run's durability too: with exit,
// each level writes one checkpoint when the innermost asks, the step
// before the node that asked; the answer then resumes inside both.
func TestNestedSubgraphsFollowExit(t *testing.T) {
	for _, tt := range []struct {
		d              graph.Durability
		mid, bottom    string
		midEnd, botEnd string
	}{
		{graph.DurabilitySync, "input::0 step:before:1", "input::0 step:double:1",
			"input::0 step:before:1 step:bottom:2", "input::0 step:double:1 step:ask:2"},
		{graph.DurabilityExit, "step:before:1", "step:double:1",
			"step:before:1 step:bottom:2", "step:double:1 step:ask:2"},
	} {
		t.Run(string(tt.d), func(t *testing.T) {
			ctx := t.Context()
			c := nestedGraphs(t)
			saver := c.Saver()
			res := must(c.Run(ctx, "t", graph.Input[counter]{Update: func(s *counter) { s.N = 5 }, Durability: tt.d}))(t)
			if res.Status != graph.StatusInterrupted {
				t.Fatalf("%s, want the question", res.Status)
			}
			mid, bottom := graph.SubgraphThread("t", "mid"), graph.SubgraphThread(graph.SubgraphThread("t", "mid"), "bottom")
			if got := describe(lineOf(t, saver, mid)); got != tt.mid {
				t.Errorf("mid at the question: %s, want %s", got, tt.mid)
			}
			if got := describe(lineOf(t, saver, bottom)); got != tt.bottom {
				t.Errorf("bottom at the question: %s, want %s", got, tt.bottom)
			}
			res = must(c.Run(ctx, "t", graph.Input[counter]{Resume: "yes", Durability: tt.d}))(t)
			if res.Status != graph.StatusDone || res.State.N != 13 {
				t.Errorf("%s, N = %d; want done and 13", res.Status, res.State.N)
			}
			if got := describe(lineOf(t, saver, mid)); got != tt.midEnd {
				t.Errorf("mid at the end: %s, want %s", got, tt.midEnd)
			}
			if got := describe(lineOf(t, saver, bottom)); got != tt.botEnd {
				t.Errorf("bottom at the end: %s, want %s", got, tt.botEnd)
			}
		})
	}
}

// A subgraph's fan-out whose branches finish while another asks keeps
// their results with the question under every durability: on the answer
// only the branch that asked runs again. With "prep" before the fan-out,
// exit durability writes them with prep's step; without, on their own.
func TestSubgraphFanOutAsksUnderEveryDurability(t *testing.T) {
	for _, prep := range []bool{true, false} {
		for _, d := range durabilities {
			t.Run(fmt.Sprintf("prep=%v/%s", prep, d), func(t *testing.T) {
				ctx := t.Context()
				var done atomic.Int32
				finish := func(_ context.Context, s counter) (counter, error) { done.Add(1); s.N++; return s, nil }
				ask := func(ctx context.Context, s counter) (counter, error) {
					a, err := graph.Ask[string](ctx, "go?")
					s.Log = append(s.Log, "asked="+a)
					return s, err
				}
				join := func(s counter, rs []counter) (counter, error) {
					for _, r := range rs {
						s.Log = append(s.Log, r.Log...)
					}
					return s, nil
				}
				g := graph.New[counter]("inner").Node("fan", graph.Parallel(join, finish, ask))
				if prep {
					g.Node("prep", inc("prep")).Edge(graph.Start, "prep").Edge("prep", "fan")
				} else {
					g.Edge(graph.Start, "fan")
				}
				inner := must(g.Edge("fan", graph.End).Compile())(t)
				c := must(graph.New[counter]("outer").
					Subgraph("sub", graph.Nest(inner, func(s counter) counter { return s }, func(_ counter, r counter) counter { return r })).
					Edge(graph.Start, "sub").Edge("sub", graph.End).
					Compile(graph.WithSaver(checkpoint.NewMemory())))(t)
				res := must(c.Run(ctx, "t", graph.Input[counter]{Update: func(s *counter) { s.N = 1 }, Durability: d}))(t)
				if res.Status != graph.StatusInterrupted {
					t.Fatalf("%s, want the branch's question", res.Status)
				}
				res = must(c.Run(ctx, "t", graph.Input[counter]{Resume: "yes", Durability: d}))(t)
				if res.Status != graph.StatusDone || !slices.Contains(res.State.Log, "asked=yes") {
					t.Fatalf("%s, log %v; want done with the answer", res.Status, res.State.Log)
				}
				if n := done.Load(); n != 1 {
					t.Errorf("the branch that finished ran %d times, want once", n)
				}
				hist := lineOf(t, c.Saver(), graph.SubgraphThread("t", "sub"))
				if last, want := hist[len(hist)-1], map[bool]int{true: 2, false: 1}[prep]; last.Meta.Node != "fan" || last.Step != want {
					t.Errorf("the subgraph's checkpoints %s end with %s:%d, want fan:%d", describe(hist), last.Meta.Node, last.Step, want)
				}
			})
		}
	}
}
