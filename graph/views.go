package graph

import (
	"fmt"
	"slices"
	"strings"
)

// maxScenarios caps Scenarios for graphs with very many paths.
const maxScenarios = 1000

// Spec is a compiled graph's structure, for drawings and clients.
type Spec struct {
	Name string `json:"name"`
	// Nodes are the graph's nodes in the order they were added; Start and
	// End are implied.
	Nodes []string `json:"nodes"`
	Edges []Edge   `json:"edges"`
	// Subgraphs are the specs of the graphs that nodes added with
	// Graph.Subgraph run, by node name; each has its own Subgraphs.
	Subgraphs map[string]Spec `json:"subgraphs,omitempty"`
}

// Edge is one way the run may go.
type Edge struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Conditional marks a route target (as opposed to a plain edge).
	Conditional bool `json:"conditional,omitempty"`
	// Max is the bound of a bounded loop edge.
	Max int `json:"max,omitempty"`
	// Exit marks a loop's exit: taken instead of the loop edge from From
	// once that edge was taken Max times in a row.
	Exit bool `json:"exit,omitempty"`
}

// Spec returns the graph's structure: nodes, then edges from Start and
// from each node in order, each node's loop exits after its edges.
func (c *Compiled[S]) Spec() Spec {
	g := c.src
	sp := Spec{Name: c.name, Nodes: c.nodeNames()}
	for name, sub := range c.Subgraphs() {
		if sp.Subgraphs == nil {
			sp.Subgraphs = make(map[string]Spec)
		}
		sp.Subgraphs[name] = sub.Spec()
	}
	for _, from := range append([]string{Start}, sp.Nodes...) {
		o := g.outs[from]
		for _, to := range o.targetList() {
			e := Edge{From: from, To: to, Conditional: o.route != nil}
			if l := g.loopOf(from, to); l != nil {
				e.Max = l.max
			}
			sp.Edges = append(sp.Edges, e)
		}
		for _, l := range g.loops {
			if l.from == from {
				sp.Edges = append(sp.Edges, Edge{From: from, To: l.exit, Conditional: true, Max: l.max, Exit: true})
			}
		}
	}
	return sp
}

// Subgraphs returns the graphs that nodes added with Graph.Subgraph run,
// by node name, or nil when there are none.
func (c *Compiled[S]) Subgraphs() map[string]Runner {
	var subs map[string]Runner
	for _, n := range c.nodes {
		if n.sub != nil {
			if subs == nil {
				subs = make(map[string]Runner)
			}
			subs[n.name] = n.sub
		}
	}
	return subs
}

// Mermaid returns the graph as a Mermaid flowchart (see Spec.Mermaid).
func (c *Compiled[S]) Mermaid() string { return c.Spec().Mermaid() }

// Mermaid returns the graph as a Mermaid flowchart: plain edges solid,
// route targets dashed, bounded loop edges labelled with their bound and
// their exits with the count after which they are taken. Start and End
// are the nodes __start__ and __end__, as in the LangGraph API's drawing
// (a node id "end" is a Mermaid keyword); the others are n0, n1, … in the
// order they were added, labelled with their names. A node that runs a
// subgraph is drawn as a subroutine, [[name]]; its graph is drawn on its
// own, from Subgraphs.
func (sp Spec) Mermaid() string {
	ids := map[string]string{Start: "__start__", End: "__end__"}
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	b.WriteString("\t__start__([START])\n")
	for i, n := range sp.Nodes {
		ids[n] = fmt.Sprintf("n%d", i)
		left, right := "[", "]"
		if _, ok := sp.Subgraphs[n]; ok {
			left, right = "[[", "]]"
		}
		fmt.Fprintf(&b, "\tn%d%s\"%s\"%s\n", i, left, mermaidText.Replace(n), right)
	}
	b.WriteString("\t__end__([END])\n")
	for _, e := range sp.Edges {
		arrow, label := "-->", ""
		if e.Conditional {
			arrow = "-.->"
		}
		switch {
		case e.Exit:
			label = fmt.Sprintf("|\"after %d×\"|", e.Max)
		case e.Max > 0:
			label = fmt.Sprintf("|\"at most %d×\"|", e.Max)
		}
		fmt.Fprintf(&b, "\t%s %s%s %s\n", ids[e.From], arrow, label, ids[e.To])
	}
	return b.String()
}

// mermaidText escapes a label for a quoted Mermaid string, which ends at
// the first '"' and decodes entities written #name; or #number;.
var mermaidText = strings.NewReplacer("#", "#35;", `"`, "#quot;")

func (c *Compiled[S]) nodeNames() []string {
	names := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		names[i] = n.name
	}
	return names
}

// Hop is one node on a scenario's path, with a note on how it was reached
// ("after 5×" for a loop exit, "loop, at most 5×" for a loop back).
type Hop struct {
	Node string `json:"node"`
	Note string `json:"note,omitempty"`
}

// Scenario is one path through the graph from Start: to End, or round a
// bounded loop back to a node already on the path (a loop is shown once,
// with its bound; what follows it is in the other scenarios).
type Scenario []Hop

// String renders the scenario as "START → a → b (note) → END".
func (s Scenario) String() string {
	parts := make([]string, len(s))
	for i, h := range s {
		name := h.Node
		switch name {
		case Start:
			name = "START"
		case End:
			name = "END"
		}
		if h.Note != "" {
			name += " (" + h.Note + ")"
		}
		parts[i] = name
	}
	return strings.Join(parts, " → ")
}

// Scenarios lists every path from Start to End, each loop shown once with
// its bound, in a stable order (at most 1,000).
func (c *Compiled[S]) Scenarios() []Scenario {
	g := c.src
	var out []Scenario
	path := Scenario{{Node: Start}}
	var visit func(from string)
	visit = func(from string) {
		if len(out) >= maxScenarios {
			return
		}
		if from == End {
			out = append(out, slices.Clone(path))
			return
		}
		type step struct{ to, note string }
		var steps []step
		for _, to := range g.outs[from].targetList() {
			note := ""
			if l := g.loopOf(from, to); l != nil {
				note = fmt.Sprintf("loop, at most %d×", l.max)
			}
			steps = append(steps, step{to, note})
		}
		for _, l := range g.loops {
			if l.from == from {
				steps = append(steps, step{l.exit, fmt.Sprintf("after %d×", l.max)})
			}
		}
		for _, st := range steps {
			onPath := slices.ContainsFunc(path, func(h Hop) bool { return h.Node == st.to })
			path = append(path, Hop{Node: st.to, Note: st.note})
			if onPath {
				out = append(out, slices.Clone(path))
			} else {
				visit(st.to)
			}
			path = path[:len(path)-1]
		}
	}
	visit(Start)
	return out
}
