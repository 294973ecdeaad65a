package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
)

// leaf is the innermost graph's state.
type leaf struct {
	X      int    `json:"x"`
	Answer string `json:"answer"`
}

// nestedGraphs builds three levels: top runs "mid" (a Nest of middle),
// middle runs "bottom" (a Nest of the leaf graph, which asks a question).
func nestedGraphs(t testing.TB) *graph.Compiled[counter] {
	t.Helper()
	bottom := must(graph.New[leaf]("bottom").
		Node("double", func(_ context.Context, s leaf) (leaf, error) { s.X *= 2; return s, nil }).
		Node("ask", func(ctx context.Context, s leaf) (leaf, error) {
			a, err := graph.Ask[string](ctx, "ok?")
			s.Answer = a
			return s, err
		}).
		Edge(graph.Start, "double").Edge("double", "ask").Edge("ask", graph.End).
		Compile())(t)
	middle := must(graph.New[counter]("middle").
		Node("before", inc("before")).
		Subgraph("bottom", graph.Nest(bottom,
			func(s counter) leaf { return leaf{X: s.N} },
			func(s counter, l leaf) counter { s.N = l.X; s.Log = append(s.Log, "answer "+l.Answer); return s })).
		Edge(graph.Start, "before").Edge("before", "bottom").Edge("bottom", graph.End).
		Compile())(t)
	return must(graph.New[counter]("top").
		Subgraph("mid", graph.Nest(middle,
			func(s counter) counter { return s },
			func(_ counter, m counter) counter { return m })).
		Node("after", inc("after")).
		Edge(graph.Start, "mid").Edge("mid", "after").Edge("after", graph.End).
		Compile(graph.WithSaver(checkpoint.NewMemory())))(t)
}

// The compiled graph knows which nodes hold graphs, at every level, and
// its Spec carries their nodes and edges.
func TestSubgraphSpec(t *testing.T) {
	c := nestedGraphs(t)
	subs := c.Subgraphs()
	if len(subs) != 1 || subs["mid"] == nil || subs["mid"].Name() != "middle" {
		t.Fatalf("Subgraphs = %v, want mid → middle", subs)
	}
	if deeper := subs["mid"].Subgraphs(); len(deeper) != 1 || deeper["bottom"] == nil || deeper["bottom"].Name() != "bottom" {
		t.Fatalf("middle's Subgraphs = %v, want bottom → bottom", deeper)
	}
	if s := subs["mid"].Subgraphs()["bottom"].Subgraphs(); s != nil {
		t.Errorf("bottom's Subgraphs = %v, want none", s)
	}

	sp := c.Spec()
	mid, ok := sp.Subgraphs["mid"]
	if !ok || len(sp.Subgraphs) != 1 {
		t.Fatalf("Spec.Subgraphs = %+v, want only mid", sp.Subgraphs)
	}
	if !slices.Equal(mid.Nodes, []string{"before", "bottom"}) {
		t.Errorf("mid's nodes = %v", mid.Nodes)
	}
	bottom := mid.Subgraphs["bottom"]
	if bottom.Name != "bottom" || !slices.Equal(bottom.Nodes, []string{"double", "ask"}) {
		t.Errorf("bottom's spec = %+v", bottom)
	}
	wantEdges := []graph.Edge{{From: graph.Start, To: "double"}, {From: "double", To: "ask"}, {From: "ask", To: graph.End}}
	if !slices.Equal(bottom.Edges, wantEdges) {
		t.Errorf("bottom's edges = %+v, want %+v", bottom.Edges, wantEdges)
	}

	// In JSON the spec nests the same way; a graph without subgraphs has
	// no "subgraphs" key.
	b, err := json.Marshal(sp)
	if err != nil {
		t.Fatal(err)
	}
	var decoded graph.Spec
	if err := json.Unmarshal(b, &decoded); err != nil {
		t.Fatal(err)
	}
	if got := decoded.Subgraphs["mid"].Subgraphs["bottom"].Nodes; !slices.Equal(got, []string{"double", "ask"}) {
		t.Errorf("decoded bottom nodes = %v from %s", got, b)
	}
	if strings.Contains(string(must(json.Marshal(bottom))(t)), "subgraphs") {
		t.Errorf("a spec without subgraphs has a subgraphs key")
	}
}

// A node running the NodeFunc of graph.Subgraph is a plain node: the
// compiled graph does not know it holds a graph.
func TestPlainSubgraphFuncIsNotRecorded(t *testing.T) {
	inner := must(chain(2).Compile())(t)
	c := must(graph.New[counter]("outer").
		Node("sub", graph.Subgraph(inner, func(s counter) counter { return s }, func(_ counter, r counter) counter { return r })).
		Edge(graph.Start, "sub").Edge("sub", graph.End).
		Compile())(t)
	if s := c.Subgraphs(); s != nil {
		t.Errorf("Subgraphs = %v, want nil", s)
	}
	if sp := c.Spec(); sp.Subgraphs != nil {
		t.Errorf("Spec.Subgraphs = %v, want nil", sp.Subgraphs)
	}
}

// A Nest node runs like graph.Subgraph: inner events are named by their
// path of nodes, an Ask two levels down interrupts the outer node, and the
// answer resumes it.
func TestNestRunsAndAsks(t *testing.T) {
	ctx := context.Background()
	c := nestedGraphs(t)
	var starts []string
	for e, err := range c.Stream(ctx, "t", graph.Input[counter]{Update: func(s *counter) { s.N = 5 }}) {
		if err != nil {
			t.Fatal(err)
		}
		switch e.Kind {
		case graph.KindNodeStart:
			starts = append(starts, e.Node)
		case graph.KindInterrupt:
			if e.Node != "mid" {
				t.Errorf("interrupt from %q, want the outer node mid", e.Node)
			}
		}
	}
	if want := []string{"mid", "mid/before", "mid/bottom", "mid/bottom/double", "mid/bottom/ask"}; !slices.Equal(starts, want) {
		t.Errorf("node starts %v, want %v", starts, want)
	}
	res := must(c.Resume(ctx, "t", "yes"))(t)
	if res.Status != graph.StatusDone || res.State.N != 13 {
		t.Errorf("status %s, N = %d; want done and 13: (5+1)×2+1", res.Status, res.State.N)
	}
	if want := []string{"before", "answer yes", "after"}; !slices.Equal(res.State.Log, want) {
		t.Errorf("log %v, want %v", res.State.Log, want)
	}
}

// Graph.Subgraph refuses a Nested not made by Nest, and names the node.
func TestSubgraphErrors(t *testing.T) {
	inner := must(chain(1).Compile())(t)
	id := func(s counter) counter { return s }
	back := func(_ counter, r counter) counter { return r }
	for _, tt := range []struct {
		name string
		sub  graph.Nested[counter]
		want string
	}{
		{"zero", graph.Nested[counter]{}, `subgraph "s": no graph`},
		{"nil inner", graph.Nest[counter, counter](nil, id, back), `subgraph "s": no graph`},
		{"nil in", graph.Nest(inner, nil, back), `subgraph "s": no graph`},
		{"nil out", graph.Nest(inner, id, nil), `subgraph "s": no graph`},
	} {
		_, err := graph.New[counter]("g").Subgraph("s", tt.sub).Edge(graph.Start, "s").Edge("s", graph.End).Compile()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want one containing %q", tt.name, err, tt.want)
		}
	}
	// A subgraph node's name is checked like any node's.
	_, err := graph.New[counter]("g").Node("s", inc("s")).Subgraph("s", graph.Nest(inner, id, back)).
		Edge(graph.Start, "s").Edge("s", graph.End).Compile()
	if err == nil || !strings.Contains(err.Error(), `node "s": duplicate name`) {
		t.Errorf("duplicate: err = %v", err)
	}
}

// A node holding a subgraph is drawn as a subroutine; the drawing of the
// subgraph itself comes from its own spec.
func TestMermaidMarksSubgraphNodes(t *testing.T) {
	sp := nestedGraphs(t).Spec()
	want := "flowchart TD\n\t__start__([START])\n\tn0[[\"mid\"]]\n\tn1[\"after\"]\n\t__end__([END])\n" +
		"\t__start__ --> n0\n\tn0 --> n1\n\tn1 --> __end__\n"
	if got := sp.Mermaid(); got != want {
		t.Errorf("Mermaid:\n%s\nwant:\n%s", got, want)
	}
	mid := sp.Subgraphs["mid"].Mermaid()
	if !strings.Contains(mid, "\tn0[\"before\"]\n\tn1[[\"bottom\"]]\n") {
		t.Errorf("mid's Mermaid:\n%s\nwant before plain and bottom a subroutine", mid)
	}
}

// A graph with a step that runs a graph of its own: Graph.Subgraph adds
// the node, Nest maps the states, and Spec lists what the node holds.
func ExampleGraph_Subgraph() {
	review := graph.New[Doc]("review").
		Node("fix", func(_ context.Context, d Doc) (Doc, error) {
			for i, it := range d.Items {
				d.Items[i] = strings.TrimPrefix(it, "TODO: ")
			}
			d.Fixes++
			return d, nil
		}).
		Edge(graph.Start, "fix").Edge("fix", graph.End)
	inner, err := review.Compile()
	if err != nil {
		fmt.Println(err)
		return
	}
	g := graph.New[Doc]("checklist").
		Node("draft", func(_ context.Context, d Doc) (Doc, error) {
			d.Items = []string{"book a room", "TODO: invite"}
			return d, nil
		}).
		Subgraph("review", graph.Nest(inner,
			func(d Doc) Doc { return d },              // the outer state in
			func(_ Doc, done Doc) Doc { return done }, // the inner result out
		)).
		Edge(graph.Start, "draft").Edge("draft", "review").Edge("review", graph.End)
	c, err := g.Compile()
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := c.Invoke(context.Background(), "t1", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.State.Items, res.State.Fixes)
	fmt.Println(c.Spec().Subgraphs["review"].Nodes)
	// Output:
	// [book a room invite] 1
	// [fix]
}

// askTwice is a subgraph: "prep" counts its runs and adds 1, then "one"
// and "two" each ask a question and log the answer.
func askTwice(t testing.TB, preps *atomic.Int32) *graph.Compiled[counter] {
	t.Helper()
	asker := func(name string) graph.NodeFunc[counter] {
		return func(ctx context.Context, s counter) (counter, error) {
			a, err := graph.Ask[string](ctx, name+"?")
			if err != nil {
				return s, err
			}
			s.Log = append(s.Log, name+"="+a)
			return s, nil
		}
	}
	return must(graph.New[counter]("inner").
		Node("prep", func(_ context.Context, s counter) (counter, error) { preps.Add(1); s.N++; return s, nil }).
		Node("one", asker("one")).
		Node("two", asker("two")).
		Edge(graph.Start, "prep").Edge("prep", "one").Edge("one", "two").Edge("two", graph.End).
		Compile())(t)
}

// outerOf runs inner as node "sub", then "after"; "again" sends the run
// through sub a second time while the state's N is below 10.
func outerOf(t testing.TB, inner *graph.Compiled[counter], saver checkpoint.Saver) *graph.Compiled[counter] {
	t.Helper()
	return must(graph.New[counter]("outer").
		Subgraph("sub", graph.Nest(inner, func(s counter) counter { return counter{N: s.N} },
			func(s counter, in counter) counter { s.N = in.N; s.Log = append(s.Log, in.Log...); return s })).
		Node("after", inc("after")).
		Edge(graph.Start, "sub").Edge("sub", "after").
		Route("after", func(s counter) string {
			if s.N < 10 {
				return "sub"
			}
			return graph.End
		}, "sub", graph.End).
		Loop("after", "sub", 3, graph.End).
		Compile(graph.WithSaver(saver)))(t)
}

// A subgraph keeps its own checkpoints: a resume after a restart (a new
// Compiled on the same SQLite file) continues inside it at the node that
// asked; the inner node before is not run again, and each inner question
// gets its own answer. Once the outer node finished, its next visit
// starts the subgraph afresh.
func TestSubgraphResumesInside(t *testing.T) {
	ctx := t.Context()
	db := filepath.Join(t.TempDir(), "sub.db")
	var preps atomic.Int32
	c := outerOf(t, askTwice(t, &preps), sqliteAt(t, db))
	res := must(c.Invoke(ctx, "t", func(s *counter) { s.N = 5 }))(t)
	if res.Status != graph.StatusInterrupted || res.Interrupt == nil || string(res.Interrupt.Payload) != `"one?"` || res.Interrupt.Node != "sub" {
		t.Fatalf("got %s with %+v, want sub interrupted by one's question", res.Status, res.Interrupt)
	}
	inner := must(sqliteAt(t, db).Get(ctx, graph.SubgraphThread("t", "sub"), ""))(t)
	if inner.Nest == nil || !slices.Equal(inner.Next, []string{"one"}) {
		t.Fatalf("the subgraph's head: next %v, nest %+v; want one next, tied to the outer step", inner.Next, inner.Nest)
	}

	// A new process: a new Compiled on the same file.
	c = outerOf(t, askTwice(t, &preps), sqliteAt(t, db))
	var nss []string
	for e, err := range c.Stream(ctx, "t", graph.Input[counter]{Resume: "yes"}) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Thread != "t" {
			t.Fatalf("event %s of %s on thread %q, want the outer thread t", e.Kind, e.Node, e.Thread)
		}
		if e.Kind == graph.KindNodeStart {
			nss = append(nss, e.Namespace+" "+e.Node)
		}
	}
	if want := []string{" sub", "sub sub/one", "sub sub/two"}; !slices.Equal(nss, want) {
		t.Errorf("node starts (namespace, node) %q, want %q: the run continues at one", nss, want)
	}
	res = must(c.Resume(ctx, "t", "no"))(t)
	if res.Status != graph.StatusInterrupted || res.Interrupt == nil || string(res.Interrupt.Payload) != `"one?"` {
		t.Fatalf("after two answers: %s with %+v; want the second visit of sub asking one again", res.Status, res.Interrupt)
	}
	if want := []string{"one=yes", "two=no", "after"}; !slices.Equal(res.State.Log, want) {
		t.Errorf("log %v, want %v: each question its own answer", res.State.Log, want)
	}
	if n := preps.Load(); n != 2 {
		t.Errorf("prep ran %d times, want 2: once per visit of sub, not again on resume", n)
	}
	if res.State.N != 7 {
		t.Errorf("N = %d, want 7 (5, prep, after)", res.State.N)
	}
}

// A subgraph that had finished when the process died before the outer
// step was written gives its final state without running again.
func TestFinishedSubgraphIsNotRunAgain(t *testing.T) {
	ctx := t.Context()
	saver := checkpoint.NewMemory()
	var runs atomic.Int32
	inner := must(graph.New[counter]("inner").
		Node("work", func(_ context.Context, s counter) (counter, error) { runs.Add(1); s.N += 100; return s, nil }).
		Edge(graph.Start, "work").Edge("work", graph.End).Compile())(t)
	var crash atomic.Bool
	crash.Store(true)
	c := must(graph.New[counter]("outer").
		Node("both", graph.Subgraph(inner, func(s counter) counter { return s }, func(_ counter, r counter) counter { return r })).
		Edge(graph.Start, "both").Edge("both", graph.End).
		Compile(graph.WithSaver(faultySaver{Saver: saver, fail: func(cp *checkpoint.Checkpoint) bool {
			// The outer step's checkpoint is lost, as if the process died.
			return crash.Load() && cp.Thread == "t" && cp.Meta.Node == "both"
		}})))(t)
	if _, err := c.Invoke(ctx, "t", nil); err == nil {
		t.Fatal("the outer step was written; want the run to fail")
	}
	crash.Store(false)
	res := must(c.Continue(ctx, "t"))(t)
	if res.Status != graph.StatusDone || res.State.N != 100 || runs.Load() != 1 {
		t.Fatalf("got %s, N = %d, work ran %d times; want done with 100, work once", res.Status, res.State.N, runs.Load())
	}
}

// faultySaver refuses the checkpoints fail picks.
type faultySaver struct {
	checkpoint.Saver
	fail func(*checkpoint.Checkpoint) bool
}

func (f faultySaver) Put(ctx context.Context, cp *checkpoint.Checkpoint) error {
	if f.fail(cp) {
		return errors.New("disk gone")
	}
	return f.Saver.Put(ctx, cp)
}
