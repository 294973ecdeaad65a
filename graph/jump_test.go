package graph_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
)

// triageState drives a Jump node: Want is where triage sends the run.
type triageState struct {
	Want string   `json:"want"`
	Log  []string `json:"log"`
}

func logNode(name string) graph.NodeFunc[triageState] {
	return func(_ context.Context, s triageState) (triageState, error) {
		s.Log = append(s.Log, name)
		return s, nil
	}
}

// triageGraph: triage chooses fix or ship; fix goes back to triage.
func triageGraph() *graph.Graph[triageState] {
	triage := func(_ context.Context, s triageState) (triageState, string, error) {
		s.Log = append(s.Log, "triage")
		return s, s.Want, nil
	}
	return graph.New[triageState]("triage").
		Jump("triage", triage, []string{"fix", "ship"}).
		Node("fix", logNode("fix")).
		Node("ship", logNode("ship")).
		Edge(graph.Start, "triage").Edge("fix", "triage").Edge("ship", graph.End).
		Loop("fix", "triage", 2, "ship")
}

func TestJumpGoesWhereTheNodeChose(t *testing.T) {
	c := must(triageGraph().Compile(graph.WithSaver(checkpoint.NewMemory())))(t)
	ctx := context.Background()
	for _, tt := range []struct {
		want string
		log  []string
	}{
		{"ship", []string{"triage", "ship"}},
		// fix → triage is bounded at 2; the third time the loop's exit
		// takes the run to ship.
		{"fix", []string{"triage", "fix", "triage", "fix", "triage", "fix", "ship"}},
	} {
		res := must(c.Invoke(ctx, "t-"+tt.want, func(s *triageState) { s.Want = tt.want }))(t)
		if !slices.Equal(res.State.Log, tt.log) {
			t.Errorf("triage chose %s: ran %v, want %v", tt.want, res.State.Log, tt.log)
		}
	}
	// A name the node did not declare fails the run, naming it.
	_, err := c.Invoke(ctx, "t-bad", func(s *triageState) { s.Want = "deploy" })
	if err == nil || !strings.Contains(err.Error(), `node triage chose "deploy", which is not among its declared targets (fix, ship)`) {
		t.Errorf("jump to an undeclared target: error %v", err)
	}
}

func TestJumpCompileErrors(t *testing.T) {
	jump := func(_ context.Context, s triageState) (triageState, string, error) { return s, graph.End, nil }
	tests := []struct {
		name  string
		build func(g *graph.Graph[triageState])
		want  string
	}{
		{"unknown target", func(g *graph.Graph[triageState]) {
			g.Jump("a", jump, []string{"b", graph.End}).Edge(graph.Start, "a")
		}, `edge a → b: unknown target "b"`},
		{"edge after jump", func(g *graph.Graph[triageState]) {
			g.Jump("a", jump, []string{graph.End}).Edge(graph.Start, "a").Edge("a", graph.End)
		}, `node "a" chooses where it goes (Jump): it takes no Edge or Route`},
		{"route before jump", func(g *graph.Graph[triageState]) {
			g.Route("a", func(triageState) string { return graph.End }, graph.End).
				Jump("a", jump, []string{graph.End}).Edge(graph.Start, "a")
		}, `node "a" chooses where it goes (Jump): it takes no Edge or Route`},
		{"no targets", func(g *graph.Graph[triageState]) {
			g.Jump("a", jump, nil).Edge(graph.Start, "a")
		}, `jump from "a": no targets declared`},
		{"nil function", func(g *graph.Graph[triageState]) {
			g.Jump("a", nil, []string{graph.End}).Edge(graph.Start, graph.End)
		}, `node "a": nil function`},
		{"unbounded cycle", func(g *graph.Graph[triageState]) {
			g.Jump("a", jump, []string{"b", graph.End}).Node("b", logNode("b")).
				Edge(graph.Start, "a").Edge("b", "a")
		}, "loop without a declared bound: a → b → a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := graph.New[triageState]("g")
			tt.build(g)
			_, err := g.Compile()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Compile: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// Spec draws a Jump node's targets like a route's, Mermaid dashed, and
// Scenarios lists a path through each.
func TestJumpDrawnAndEnumerated(t *testing.T) {
	c := must(triageGraph().Compile())(t)
	var jumps []string
	for _, e := range c.Spec().Edges {
		if e.From == "triage" {
			if !e.Conditional {
				t.Errorf("edge triage → %s is not drawn as a choice", e.To)
			}
			jumps = append(jumps, e.To)
		}
	}
	if !slices.Equal(jumps, []string{"fix", "ship"}) {
		t.Errorf("Spec: edges out of triage %v, want fix, ship", jumps)
	}
	m := c.Mermaid()
	for _, w := range []string{"n0 -.-> n1", "n0 -.-> n2"} {
		if !strings.Contains(m, w) {
			t.Errorf("Mermaid lacks %q:\n%s", w, m)
		}
	}
	var got []string
	for _, s := range c.Scenarios() {
		got = append(got, s.String())
	}
	want := []string{
		"START → triage → fix → triage (loop, at most 2×)",
		"START → triage → fix → ship (after 2×) → END",
		"START → triage → ship → END",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Scenarios:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A budget that counts a jump edge sends the run to its exit when spent,
// instead of the target the node chose.
func TestJumpEdgeSpendsABudget(t *testing.T) {
	triage := func(_ context.Context, s triageState) (triageState, string, error) {
		s.Log = append(s.Log, "triage")
		return s, s.Want, nil
	}
	g := graph.New[triageState]("budgeted").
		Jump("triage", triage, []string{"fix", "ship"}).
		Node("fix", logNode("fix")).
		Node("ship", logNode("ship")).
		Node("give_up", logNode("give_up")).
		Edge(graph.Start, "triage").Edge("fix", "triage").Edge("ship", graph.End).Edge("give_up", graph.End)
	g.Budget("fixes", 3, "give_up").Count("triage", "fix", 1)
	c := must(g.Compile())(t)
	res := must(c.Invoke(context.Background(), "t", func(s *triageState) { s.Want = "fix" }))(t)
	want := []string{"triage", "fix", "triage", "fix", "triage", "fix", "triage", "give_up"}
	if !slices.Equal(res.State.Log, want) {
		t.Errorf("ran %v, want %v", res.State.Log, want)
	}
	var exit bool
	for _, e := range c.Spec().Edges {
		if e.From == "triage" && e.To == "give_up" && e.Exit && e.Budget == "fixes" {
			exit = true
		}
	}
	if !exit {
		t.Errorf("Spec draws no exit triage → give_up for budget fixes: %+v", c.Spec().Edges)
	}
}

// A Jump node that asks a person stops the run; the resume runs it again
// and the run goes where it chose with the answer.
func TestJumpAsks(t *testing.T) {
	ask := func(ctx context.Context, s triageState) (triageState, string, error) {
		to, err := graph.Ask[string](ctx, "fix or ship?")
		if err != nil {
			return s, "", err
		}
		s.Log = append(s.Log, "asked")
		return s, to, nil
	}
	c := must(graph.New[triageState]("ask").
		Jump("ask", ask, []string{"fix", "ship"}).
		Node("fix", logNode("fix")).Node("ship", logNode("ship")).
		Edge(graph.Start, "ask").Edge("fix", graph.End).Edge("ship", graph.End).
		Compile(graph.WithSaver(checkpoint.NewMemory())))(t)
	ctx := context.Background()
	res := must(c.Invoke(ctx, "t", nil))(t)
	if res.Status != graph.StatusInterrupted {
		t.Fatalf("status %s, want interrupted", res.Status)
	}
	res = must(c.Resume(ctx, "t", "ship"))(t)
	if got := strings.Join(res.State.Log, " "); res.Status != graph.StatusDone || got != "asked ship" {
		t.Errorf("after the answer: %s, ran %q; want done after asked ship", res.Status, got)
	}
}
