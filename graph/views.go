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
	// Version is the version the graph declares (see Graph.Version); 0
	// when it declares none, which is version 1.
	Version int `json:"version,omitempty"`
	// Nodes are the graph's nodes in the order they were added; Start and
	// End are implied.
	Nodes []string `json:"nodes"`
	Edges []Edge   `json:"edges"`
	// Subgraphs are the specs of the graphs that nodes added with
	// Graph.Subgraph run, by node name; each has its own Subgraphs.
	Subgraphs map[string]Spec `json:"subgraphs,omitempty"`
	// Budgets are the budgets declared with Graph.Budget, in order (a
	// Loop's bound is on its edges).
	Budgets []BudgetSpec `json:"budgets,omitempty"`
}

// BudgetSpec is a declared budget: Max units, spent by the edges in
// Counts; when one cannot be paid, the run goes to Exit instead.
type BudgetSpec struct {
	Name string `json:"name"`
	Max  int    `json:"max"`
	Exit string `json:"exit"`
	// Counts are the edges that spend the budget.
	Counts []Spend `json:"counts"`
	// Resets are the edges that start it again (every new run does too).
	Resets []Reset `json:"resets,omitempty"`
}

// Spend is an edge that spends a budget.
type Spend struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Cost is the units spent; 0 is a check that spends nothing but is
	// taken only while something is left.
	Cost int `json:"cost"`
	// ByState marks a cost the state decides (at least 1); Cost is 0.
	ByState bool `json:"by_state,omitempty"`
}

// Reset is an edge that starts a budget again, at Start.
type Reset struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Start int    `json:"start"`
}

// Edge is one way the run may go.
type Edge struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Conditional marks a route target, or one a Jump node may choose
	// (as opposed to a plain edge).
	Conditional bool `json:"conditional,omitempty"`
	// Max is the bound of a bounded loop edge, or of the first budget
	// that counts the edge.
	Max int `json:"max,omitempty"`
	// Exit marks a loop's exit: taken instead of the loop edge from From
	// once that edge was taken Max times in a row; or, with Budget set,
	// a budget's exit: taken instead of an edge from From that the budget
	// (of Max units) cannot pay.
	Exit bool `json:"exit,omitempty"`
	// Budget names the budget whose exit the edge is.
	Budget string `json:"budget,omitempty"`
	// Note says what the edge does to budgets, as drawn: "rounds +1/30"
	// (spends 1 of 30), "rounds +n/30" (as the state decides), "while
	// rounds lasts" (a check), "rounds = 0" (starts it again), "rounds
	// spent (30)" (the exit).
	Note string `json:"note,omitempty"`
}

// Spec returns the graph's structure: nodes, then edges from Start and
// from each node in order, each node's loop and budget exits after its
// edges.
func (c *Compiled[S]) Spec() Spec {
	g := c.src
	sp := Spec{Name: c.name, Version: g.version, Nodes: c.nodeNames()}
	for name, sub := range c.Subgraphs() {
		if sp.Subgraphs == nil {
			sp.Subgraphs = make(map[string]Spec)
		}
		sp.Subgraphs[name] = sub.Spec()
	}
	from := append([]string{Start}, sp.Nodes...)
	for _, b := range g.budgets {
		if b.loop {
			continue
		}
		bs := BudgetSpec{Name: b.name, Max: b.max, Exit: b.exit}
		for _, u := range b.uses {
			bs.Counts = append(bs.Counts, Spend{From: u.from, To: u.to, Cost: u.cost, ByState: u.costFn != nil})
		}
		for _, f := range from {
			for _, to := range g.edgesOut(f) {
				if st, ok := b.resetOn(f, to); ok {
					bs.Resets = append(bs.Resets, Reset{From: f, To: to, Start: st})
				}
			}
		}
		sp.Budgets = append(sp.Budgets, bs)
	}
	for _, f := range from {
		o := g.outs[f]
		for _, to := range o.targetList() {
			e := Edge{From: f, To: to, Conditional: o.route != nil || o.decide != nil || o.jump}
			var notes []string
			for _, b := range g.budgets {
				u := b.counts(f, to)
				switch {
				case u != nil && b.loop:
					e.Max = b.max
				case u != nil && u.costFn != nil:
					notes = append(notes, fmt.Sprintf("%s +n/%d", b.name, b.max))
				case u != nil && u.cost == 0:
					notes = append(notes, fmt.Sprintf("while %s lasts", b.name))
				case u != nil:
					notes = append(notes, fmt.Sprintf("%s +%d/%d", b.name, u.cost, b.max))
				}
				if u != nil && !b.loop && e.Max == 0 && u.bounded() {
					e.Max = b.max
				}
			}
			e.Note = strings.Join(append(notes, g.resetNotes(f, to)...), " · ")
			sp.Edges = append(sp.Edges, e)
		}
		for _, b := range g.budgets {
			if !slices.ContainsFunc(b.uses, func(u use[S]) bool { return u.from == f }) {
				continue
			}
			e := Edge{From: f, To: b.exit, Conditional: true, Max: b.max, Exit: true}
			if !b.loop {
				e.Budget = b.name
				e.Note = strings.Join(append([]string{fmt.Sprintf("%s spent (%d)", b.name, b.max)}, g.resetNotes(f, b.exit)...), " · ")
			}
			sp.Edges = append(sp.Edges, e)
		}
	}
	return sp
}

// edgesOut lists where the run may go from from: its targets, then the
// exits of the budgets that count an edge out of it.
func (g *Graph[S]) edgesOut(from string) []string {
	var out []string
	for _, t := range append(slices.Clone(g.outs[from].targetList()), g.exitsOf(from)...) {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// resetOn reports whether taking from → to starts b again, and at what.
func (b *budget[S]) resetOn(from, to string) (int, bool) {
	if b.counts(from, to) != nil {
		return 0, false
	}
	for _, r := range b.resets {
		if r[0] == from && r[1] == to {
			return 0, true
		}
	}
	for _, e := range b.entering {
		if e.node == to {
			return e.start, true
		}
	}
	return 0, false
}

// resetNotes are the notes of the budgets (not Loops) that from → to
// starts again.
func (g *Graph[S]) resetNotes(from, to string) []string {
	var out []string
	for _, b := range g.budgets {
		if st, ok := b.resetOn(from, to); ok && !b.loop {
			out = append(out, fmt.Sprintf("%s = %d", b.name, st))
		}
	}
	return out
}

// note is what a drawing or a scenario says of an edge: its loop bound
// ("at most 3×", "after 3×") and its Note.
func (e Edge) note() string {
	var parts []string
	switch {
	case e.Exit && e.Budget == "":
		parts = append(parts, fmt.Sprintf("after %d×", e.Max))
	case !e.Exit && e.Max > 0 && e.Note == "":
		parts = append(parts, fmt.Sprintf("at most %d×", e.Max))
	}
	if e.Note != "" {
		parts = append(parts, e.Note)
	}
	return strings.Join(parts, " · ")
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
// route targets and the targets a Jump node chooses among dashed,
// bounded loop edges labelled with their bound and their exits with the
// count after which they are taken. Start and End are the nodes
// __start__ and __end__, as in the LangGraph API's drawing (a node id
// "end" is a Mermaid keyword); the others are n0, n1, … in the order they
// were added, labelled with their names. A node that runs a subgraph is
// drawn as a subroutine, [[name]]; its graph is drawn on its own, from
// Subgraphs.
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
		if n := e.note(); n != "" {
			label = "|\"" + mermaidText.Replace(n) + "\"|"
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
// its bound, in a stable order (at most 1,000). A hop reached by an edge
// with a bound or a budget carries its note (see Mermaid).
func (c *Compiled[S]) Scenarios() []Scenario {
	sp := c.Spec()
	sp.Subgraphs = nil
	type step struct{ to, note string }
	steps := map[string][]step{}
	for _, e := range sp.Edges {
		note := e.note()
		if strings.HasPrefix(note, "at most ") {
			note = "loop, " + note
		}
		steps[e.From] = append(steps[e.From], step{e.To, note})
	}
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
		for _, st := range steps[from] {
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
