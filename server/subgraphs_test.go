package server_test

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/demo"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/server"
)

// subgraphAgents serves the demo (no subgraphs), the demo composed of two
// graphs (review), and "outer", which runs the composed demo in its node
// "run" (run, and run|review nested in it).
func subgraphAgents(t testing.TB) *server.Registry {
	t.Helper()
	composed, err := demo.Composed()
	if err != nil {
		t.Fatal(err)
	}
	inner, err := composed.Compile()
	if err != nil {
		t.Fatal(err)
	}
	same := func(d demo.Doc) demo.Doc { return d }
	back := func(_ demo.Doc, d demo.Doc) demo.Doc { return d }
	outer := graph.New[demo.Doc]("outer").
		Subgraph("run", graph.Nest(inner, same, back)).
		Edge(graph.Start, "run").Edge("run", graph.End)
	var r server.Registry
	for _, a := range []server.Agent{
		{Name: "demo", Build: server.Compile(demo.Graph())},
		{Name: "composed", Build: server.Compile(composed)},
		{Name: "outer", Build: server.Compile(outer)},
	} {
		if err := r.Register(a); err != nil {
			t.Fatal(err)
		}
	}
	return &r
}

// subgraphGraph is the part of a subgraph entry that /graph serves too.
type subgraphGraph struct {
	Nodes []struct {
		ID string `json:"id"`
	} `json:"nodes"`
	Edges []struct {
		Source      string `json:"source"`
		Target      string `json:"target"`
		Conditional bool   `json:"conditional"`
	} `json:"edges"`
	Mermaid string     `json:"mermaid"`
	Spec    graph.Spec `json:"spec"`
	// LangGraph's schemas of the subgraph.
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema"`
	StateSchema  json.RawMessage `json:"state_schema"`
}

func getSubgraphs(t *testing.T, url string) map[string]subgraphGraph {
	t.Helper()
	st, b := call(t, "GET", url, "", nil)
	if st != 200 {
		t.Fatalf("GET %s: %d %s", url, st, b)
	}
	var out map[string]subgraphGraph
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("GET %s: not an object of subgraphs: %v: %s", url, err, b)
	}
	return out
}

// namespaces are the keys of a subgraphs response, sorted.
func namespaces(subs map[string]subgraphGraph) []string { return slices.Sorted(maps.Keys(subs)) }

func TestAssistantSubgraphs(t *testing.T) {
	ts := startServer(t, server.Options{Agents: subgraphAgents(t)})
	base := ts.URL + "/assistants/"

	if st, b := call(t, "GET", base+"demo/subgraphs", "", nil); st != 200 || strings.TrimSpace(string(b)) != "{}" {
		t.Errorf("demo's subgraphs: %d %s, want 200 {}", st, b)
	}

	// The composed demo's one subgraph, with its drawing in /graph's shape
	// and LangGraph's schemas.
	subs := getSubgraphs(t, base+"composed/subgraphs")
	if keys := namespaces(subs); !slices.Equal(keys, []string{"review"}) {
		t.Fatalf("composed's subgraphs %v, want [review]", keys)
	}
	review := subs["review"]
	var ids []string
	for _, n := range review.Nodes {
		ids = append(ids, n.ID)
	}
	if want := []string{graph.Start, "check", "fix", graph.End}; !slices.Equal(ids, want) {
		t.Errorf("review's nodes %v, want %v", ids, want)
	}
	var edges []string
	for _, e := range review.Edges {
		s := e.Source + "->" + e.Target
		if e.Conditional {
			s += "?"
		}
		edges = append(edges, s)
	}
	if want := []string{"__start__->check", "check->fix?", "check->__end__?", "fix->check", "fix->__end__?"}; !slices.Equal(edges, want) {
		t.Errorf("review's edges %v, want %v", edges, want)
	}
	if review.Spec.Name != "review" || !strings.HasPrefix(review.Mermaid, "flowchart TD\n") || !strings.Contains(review.Mermaid, `n0["check"]`) {
		t.Errorf("review's spec name %q, mermaid:\n%s", review.Spec.Name, review.Mermaid)
	}
	var schema struct {
		Properties map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(review.StateSchema, &schema); err != nil || schema.Properties["items"] == nil {
		t.Errorf("review's state schema %s, want the Doc's, with items", review.StateSchema)
	}
	if string(review.InputSchema) != string(review.StateSchema) || string(review.OutputSchema) != string(review.StateSchema) {
		t.Errorf("review's input %s and output %s schemas are not its state's", review.InputSchema, review.OutputSchema)
	}

	// /graph of the composed demo shows the node holding it and its spec.
	st, b := call(t, "GET", base+"composed/graph", "", nil)
	var g subgraphGraph
	if st != 200 || json.Unmarshal(b, &g) != nil {
		t.Fatalf("composed's graph: %d %s", st, b)
	}
	if !strings.Contains(g.Mermaid, `[["review"]]`) || !slices.Equal(g.Spec.Subgraphs["review"].Nodes, []string{"check", "fix"}) {
		t.Errorf("composed's graph does not show review's subgraph: %s", b)
	}

	if st, b := call(t, "GET", base+"outer/subgraphs?recurse=maybe", "", nil); st != 422 || !strings.Contains(string(b), "recurse") {
		t.Errorf("recurse=maybe: %d %s, want 422 naming recurse", st, b)
	}
	if st, b := call(t, "GET", base+"nobody/subgraphs", "", nil); st != 404 {
		t.Errorf("unknown assistant: %d %s, want 404", st, b)
	}
}

// Nested subgraphs are listed with recurse, under "outer|inner";
// GET /assistants/{id}/subgraphs/{namespace} lists only the subgraph at
// that namespace ("|" escaped in the path, as clients send it, or not).
func TestAssistantSubgraphNamespaces(t *testing.T) {
	ts := startServer(t, server.Options{Agents: subgraphAgents(t)})
	base := ts.URL + "/assistants/outer/subgraphs"
	for _, tt := range []struct {
		path string
		want []string
	}{
		{"", []string{"run"}},
		{"?recurse=false", []string{"run"}},
		{"?recurse=true", []string{"run", "run|review"}},
		{"/run", []string{"run"}},
		{"/run?recurse=true", []string{"run"}},
		{"/run%7Creview", []string{"run|review"}},
		{"/run|review", []string{"run|review"}},
		{"/review", []string{}},
		{"/run%7Cnothing", []string{}},
	} {
		t.Run(tt.path, func(t *testing.T) {
			got := getSubgraphs(t, base+tt.path)
			if keys := namespaces(got); !slices.Equal(keys, tt.want) {
				t.Errorf("namespaces %v, want %v", keys, tt.want)
			}
			for ns, sub := range got {
				if want := map[string]string{"run": "demo-composed", "run|review": "review"}[ns]; sub.Spec.Name != want {
					t.Errorf("%s is the graph %q, want %q", ns, sub.Spec.Name, want)
				}
			}
		})
	}
}
