package graph

import (
	"fmt"
	"slices"
	"strings"
)

// maxScenarios caps Scenarios for graphs with very many paths.
const maxScenarios = 1000

// Mermaid returns the graph as a Mermaid flowchart: plain edges solid,
// route targets dashed, bounded loop edges labelled with their bound and
// their exits with the count after which they are taken.
func (c *Compiled[S]) Mermaid() string {
	g := c.src
	ids := map[string]string{Start: "start", End: "end"}
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	b.WriteString("\tstart([START])\n")
	for i, n := range g.nodes {
		ids[n.name] = fmt.Sprintf("n%d", i)
		fmt.Fprintf(&b, "\tn%d[%q]\n", i, n.name)
	}
	b.WriteString("\tend([END])\n")
	for _, from := range append([]string{Start}, c.nodeNames()...) {
		o := g.outs[from]
		arrow := "-->"
		if o.route != nil {
			arrow = "-.->"
		}
		for _, to := range o.targetList() {
			label := ""
			if l := g.loopOf(from, to); l != nil {
				label = fmt.Sprintf("|\"at most %d×\"|", l.max)
			}
			fmt.Fprintf(&b, "\t%s %s%s %s\n", ids[from], arrow, label, ids[to])
		}
		for _, l := range g.loops {
			if l.from == from {
				fmt.Fprintf(&b, "\t%s -.->|\"after %d×\"| %s\n", ids[from], l.max, ids[l.exit])
			}
		}
	}
	return b.String()
}

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
