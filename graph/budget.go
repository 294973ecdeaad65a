package graph

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Budget is a declared budget under construction: a count of units that
// the edges it counts spend, with a bound and an exit. Make one with
// Graph.Budget and say what it counts with Count and CountBy, and where it
// starts again with Reset and ResetEntering.
//
// When a route picks an edge that a budget counts, the edge is taken only
// while the budget has something left and at least the edge's cost;
// otherwise the run goes to the budget's exit instead, and nothing is
// spent. An edge of cost 0 is a check: it spends nothing and is taken only
// while something is left. Every budget starts at zero when a new run
// starts on the thread; its count is checkpointed under its name, so it
// survives interrupts, crashes and restarts. Nodes and routes that take a
// context read what is left with Left.
type Budget[S any] struct {
	g *Graph[S]
	b *budget[S]
}

type budget[S any] struct {
	name, exit string
	max        int
	loop       bool // declared with Loop: drawn as before
	uses       []use[S]
	resets     [][2]string
	entering   []entering
}

// use is an edge a budget counts.
type use[S any] struct {
	from, to string
	cost     int
	costFn   func(S) int // when set, the cost (at least 1)
}

// entering makes a budget start again at start when the run enters node
// by an edge the budget does not count.
type entering struct {
	node  string
	start int
}

// Budget declares a budget named name of max units (at least 1): when an
// edge it counts cannot be paid, the run goes to exit. Names are unique in
// a graph and contain no '>'.
func (g *Graph[S]) Budget(name string, max int, exit string) *Budget[S] {
	b := &budget[S]{name: name, max: max, exit: exit}
	switch {
	case name == "" || strings.Contains(name, ">"):
		g.errorf("budget %q: the name must be non-empty and contain no '>'", name)
		return &Budget[S]{g: g, b: b} // recorded nowhere
	case max < 1:
		g.errorf("budget %s: bound %d must be at least 1", name, max)
		return &Budget[S]{g: g, b: b}
	case g.budgetNamed(name) != nil:
		g.errorf("budget %s: declared twice", name)
		return &Budget[S]{g: g, b: b}
	}
	g.budgets = append(g.budgets, b)
	return &Budget[S]{g: g, b: b}
}

func (g *Graph[S]) budgetNamed(name string) *budget[S] {
	for _, b := range g.budgets {
		if b.name == name {
			return b
		}
	}
	return nil
}

// Count makes the edge from → to (a plain Edge, or one of the targets of
// from's route or Jump) spend cost units (0: a check that spends nothing).
func (b *Budget[S]) Count(from, to string, cost int) *Budget[S] {
	if cost < 0 {
		b.g.errorf("budget %s: edge %s → %s: cost %d is negative", b.b.name, from, to, cost)
		return b
	}
	return b.count(use[S]{from: from, to: to, cost: cost})
}

// CountBy makes the edge from → to spend what cost returns for the state
// the route was given (a result below 1 counts as 1): a correction that
// changed nothing may cost 2, say.
func (b *Budget[S]) CountBy(from, to string, cost func(S) int) *Budget[S] {
	if cost == nil {
		b.g.errorf("budget %s: edge %s → %s: nil cost function", b.b.name, from, to)
		return b
	}
	return b.count(use[S]{from: from, to: to, costFn: cost})
}

func (b *Budget[S]) count(u use[S]) *Budget[S] {
	for _, o := range b.b.uses {
		if o.from == u.from && o.to == u.to {
			b.g.errorf("budget %s: edge %s → %s counted twice", b.b.name, u.from, u.to)
			return b
		}
	}
	b.b.uses = append(b.b.uses, u)
	return b
}

// Reset makes taking the edge from → to (a declared edge or a budget's
// exit) start the budget again at zero.
func (b *Budget[S]) Reset(from, to string) *Budget[S] {
	b.b.resets = append(b.b.resets, [2]string{from, to})
	return b
}

// ResetEntering makes the budget start again at start whenever the run
// enters node by an edge the budget does not count: coming into a loop
// from outside it, by edges the graph's author may not know (the entry
// into nodes that AddTo-style helpers add). A start above zero counts the
// entry itself, as when entering a node is the first of what the budget
// counts.
func (b *Budget[S]) ResetEntering(node string, start int) *Budget[S] {
	if start < 0 || start > b.b.max {
		b.g.errorf("budget %s: entering %s: start %d is not between 0 and the bound %d", b.b.name, node, start, b.b.max)
		return b
	}
	b.b.entering = append(b.b.entering, entering{node: node, start: start})
	return b
}

func (b *budget[S]) counts(from, to string) *use[S] {
	for i := range b.uses {
		if b.uses[i].from == from && b.uses[i].to == to {
			return &b.uses[i]
		}
	}
	return nil
}

// bounded reports whether taking from → to always spends something.
func (u *use[S]) bounded() bool { return u.costFn != nil || u.cost > 0 }

// Left returns how much of the budget named name is left in the run
// ctx belongs to, and whether the graph has such a budget. Nodes call it
// with their context, routes added with Decide with theirs. (A Loop's
// budget is named "from>to".)
func Left(ctx context.Context, name string) (int, bool) {
	rc := runOf(ctx)
	if rc == nil || rc.budgets == nil {
		return 0, false
	}
	return rc.budgets.left(name)
}

// budgetView is what Left and Bound read: the running graph's budgets and
// counts.
type budgetView interface {
	left(name string) (int, bool)
	bound(name string) (int, bool)
}

func (c *Compiled[S]) budgetLeft(counters tally, name string) (int, bool) {
	if id, ok := c.budgetID(name); ok {
		return max(counters.max[id]-counters.used[id], 0), true
	}
	return 0, false
}

func (c *Compiled[S]) budgetID(name string) (int, bool) {
	for id, b := range c.budgets {
		if b.name == name {
			return id, true
		}
	}
	return 0, false
}

// left implements budgetView for the run.
func (r *runner[S]) left(name string) (int, bool) { return r.c.budgetLeft(r.counters, name) }

// bound implements budgetView for the run.
func (r *runner[S]) bound(name string) (int, bool) {
	if id, ok := r.c.budgetID(name); ok {
		return r.counters.max[id], true
	}
	return 0, false
}

// Bound returns the bound of the budget named name in the run ctx
// belongs to: its declared max, or less when the run lowered it (see
// Input.Budgets); and whether the graph has such a budget. With Left it
// says how much the run has spent.
func Bound(ctx context.Context, name string) (int, bool) {
	rc := runOf(ctx)
	if rc == nil || rc.budgets == nil {
		return 0, false
	}
	return rc.budgets.bound(name)
}

// tally is a run's budgets, by id: what each has spent, and its bound
// for the run, the declared max unless Input.Budgets lowered it.
type tally struct{ used, max []int }

// boundKey is the prefix of the checkpoint's counter that keeps the
// bound of a budget a run lowered: ">" and the budget's name, which no
// budget name starts with.
const boundKey = ">"

// countersToMap keys the budgets' counts by name for the checkpoint (a
// Loop's name is "from>to"), with the bounds the run lowered.
func (c *Compiled[S]) countersToMap(counters tally) map[string]int {
	var m map[string]int
	put := func(k string, v int) {
		if m == nil {
			m = make(map[string]int, len(counters.used))
		}
		m[k] = v
	}
	for id, v := range counters.used {
		if v > 0 {
			put(c.budgets[id].name, v)
		}
		if bound := counters.max[id]; bound != c.budgets[id].max {
			put(boundKey+c.budgets[id].name, bound)
		}
	}
	return m
}

// countersFromMap reads what countersToMap wrote. A bound above the
// declared max (the graph's bound was lowered since) is the declared max.
func (c *Compiled[S]) countersFromMap(m map[string]int) tally {
	if len(c.budgets) == 0 {
		return tally{}
	}
	n := len(c.budgets)
	both := make([]int, 2*n)
	t := tally{used: both[:n:n], max: both[n:]}
	for id, b := range c.budgets {
		t.used[id] = m[b.name]
		t.max[id] = b.max
		if bound, ok := m[boundKey+b.name]; ok && bound >= 0 && bound < b.max {
			t.max[id] = bound
		}
	}
	return t
}

// lower lowers the run's bounds as limits says (budget name → bound). A
// budget the graph does not declare, or a bound below zero or above the
// declared max, is an error that names it.
func (c *Compiled[S]) lower(t tally, limits map[string]int) error {
	if len(limits) == 0 {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(limits)) {
		id, ok := c.budgetID(name)
		if !ok && len(c.budgets) == 0 {
			return fmt.Errorf("budget %q: the graph declares no budget", name)
		}
		if !ok {
			names := make([]string, len(c.budgets))
			for i, b := range c.budgets {
				names[i] = b.name
			}
			return fmt.Errorf("budget %q: no such budget (the graph's: %s)", name, strings.Join(names, ", "))
		}
		if v, declared := limits[name], c.budgets[id].max; v < 0 || v > declared {
			return fmt.Errorf("budget %s: bound %d is not between 0 and the declared %d", name, v, declared)
		}
		t.max[id] = limits[name]
	}
	return nil
}

// checkBudgets adds to errs what is wrong with the graph's budgets.
func (g *Graph[S]) checkBudgets(errs []error, known func(string) bool) []error {
	edge := func(from, to string) bool {
		o, ok := g.outs[from]
		return ok && slices.Contains(o.targetList(), to)
	}
	for _, b := range g.budgets {
		what := "budget " + b.name
		if b.loop {
			what = "loop " + b.uses[0].from + " → " + b.uses[0].to
		}
		if len(b.uses) == 0 {
			errs = append(errs, fmt.Errorf("%s: counts no edge", what))
		}
		for _, u := range b.uses {
			if !edge(u.from, u.to) {
				if b.loop {
					errs = append(errs, fmt.Errorf("%s: no such edge", what))
				} else {
					errs = append(errs, fmt.Errorf("%s: counts %s → %s, which is no edge of the graph", what, u.from, u.to))
				}
			}
		}
		if b.exit == Start || !known(b.exit) {
			errs = append(errs, fmt.Errorf("%s: unknown exit %q", what, b.exit))
		}
		for _, r := range b.resets {
			if !edge(r[0], r[1]) && !g.isExit(r[0], r[1]) {
				errs = append(errs, fmt.Errorf("%s: resets on %s → %s, which is no edge of the graph", what, r[0], r[1]))
			} else if b.counts(r[0], r[1]) != nil {
				errs = append(errs, fmt.Errorf("%s: edge %s → %s both counts and resets it", what, r[0], r[1]))
			}
		}
		for _, e := range b.entering {
			if g.node(e.node) == nil {
				errs = append(errs, fmt.Errorf("%s: resets entering unknown node %q", what, e.node))
			}
		}
	}
	return errs
}

// isExit reports whether to is the exit of a budget that counts an edge
// from from.
func (g *Graph[S]) isExit(from, to string) bool {
	for _, b := range g.budgets {
		if b.exit != to {
			continue
		}
		for _, u := range b.uses {
			if u.from == from {
				return true
			}
		}
	}
	return false
}
