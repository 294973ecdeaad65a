package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/schema"
)

// endIndex is End's index among the compiled nodes' targets.
const endIndex = -1

// Compiled is a checked, frozen graph, ready to run. It is safe for
// concurrent use; runs on different threads proceed independently, and
// runs on one thread are serialised by the saver's compare-and-set.
type Compiled[S any] struct {
	name      string
	nodes     []cnode[S]
	start     cnode[S]
	budgets   []cbudget // by id, in the order declared
	index     map[string]int
	saver     checkpoint.Saver
	stepLimit int
	src       *Graph[S] // for Mermaid and Scenarios
	// before and after flag the nodes with breakpoints, by index (nil:
	// none).
	before, after []bool
	// durability is the runs' default.
	durability Durability
}

type target struct {
	name string
	idx  int
}

// cbudget is a budget as the runtime applies it.
type cbudget struct {
	name      string
	max, exit int
}

// rule is what taking one edge does to the budgets: the ones it spends,
// and the ones it starts again.
type rule[S any] struct {
	to      int
	charges []charge[S]
	resets  []reset
}

type charge[S any] struct {
	id, cost int
	costFn   func(S) int
}

type reset struct{ id, start int }

type cnode[S any] struct {
	name string
	fn   NodeFunc[S]
	jump JumpFunc[S] // instead of fn: the node chooses among targets
	nodeSpec
	memo    *memo[S] // the node's cache; nil without one
	to      int      // fixed target, when route, decide and jump are nil
	route   RouteFunc[S]
	decide  DecideFunc[S]
	targets []target
	// rules are the budget rules of the edges out of the node (its loop
	// exits included), for the edges that have any.
	rules []rule[S]
}

func (g *Graph[S]) freeze(spec compileSpec) *Compiled[S] {
	c := &Compiled[S]{
		name:       g.name,
		index:      make(map[string]int, len(g.nodes)),
		saver:      spec.saver,
		stepLimit:  spec.stepLimit,
		src:        g,
		durability: spec.durability,
	}
	for i, n := range g.nodes {
		c.index[n.name] = i
	}
	idx := func(name string) int {
		if name == End {
			return endIndex
		}
		return c.index[name]
	}
	for _, b := range g.budgets {
		c.budgets = append(c.budgets, cbudget{name: b.name, max: b.max, exit: idx(b.exit)})
	}
	build := func(name string) cnode[S] {
		cn := cnode[S]{name: name}
		o := g.outs[name]
		switch {
		case o.route != nil || o.decide != nil || o.jump:
			cn.route, cn.decide = o.route, o.decide
			for _, t := range o.targets {
				cn.targets = append(cn.targets, target{name: t, idx: idx(t)})
			}
		default:
			cn.to = idx(o.to)
		}
		seen := map[string]bool{}
		for _, t := range append(slices.Clone(o.targetList()), g.exitsOf(name)...) {
			if seen[t] {
				continue
			}
			seen[t] = true
			r := rule[S]{to: idx(t)}
			for id, b := range g.budgets {
				if u := b.counts(name, t); u != nil {
					r.charges = append(r.charges, charge[S]{id: id, cost: u.cost, costFn: u.costFn})
					continue
				}
				for _, e := range b.entering {
					if e.node == t {
						r.resets = append(r.resets, reset{id: id, start: e.start})
					}
				}
				for _, rs := range b.resets {
					if rs[0] == name && rs[1] == t {
						r.resets = append(r.resets, reset{id: id})
					}
				}
			}
			if len(r.charges) > 0 || len(r.resets) > 0 {
				cn.rules = append(cn.rules, r)
			}
		}
		return cn
	}
	c.start = build(Start)
	c.nodes = make([]cnode[S], len(g.nodes))
	for i, n := range g.nodes {
		cn := build(n.name)
		cn.fn, cn.jump, cn.nodeSpec = n.fn, n.jump, n.nodeSpec
		cn.memo = c.memoFor(n)
		c.nodes[i] = cn
	}
	return c
}

// Name returns the graph's name.
func (c *Compiled[S]) Name() string { return c.name }

// Saver returns the saver the graph checkpoints to, or nil.
func (c *Compiled[S]) Saver() checkpoint.Saver { return c.saver }

// next returns the index of the node that follows n for state s, applying
// the budgets to counters: an edge a budget cannot pay for leads to the
// budget's exit.
func (c *Compiled[S]) next(ctx context.Context, n *cnode[S], s S, counters tally) (int, error) {
	return c.follow(ctx, n, s, "", counters)
}

// follow is next for a node that may have chosen where it goes: chose is
// what a Jump node returned.
func (c *Compiled[S]) follow(ctx context.Context, n *cnode[S], s S, chose string, counters tally) (int, error) {
	t := n.to
	if n.route != nil || n.decide != nil || n.jump != nil {
		name := chose
		if n.jump == nil {
			var err error
			if name, err = n.choose(ctx, s); err != nil {
				return 0, fmt.Errorf("route from %s: %w", n.name, err)
			}
		}
		t = -2
		for _, tg := range n.targets {
			if tg.name == name {
				t = tg.idx
				break
			}
		}
		if t == -2 && n.jump != nil {
			return 0, fmt.Errorf("node %s chose %q, which is not among its declared targets (%s)", n.name, name, n.targetNames())
		}
		if t == -2 {
			return 0, fmt.Errorf("route from %s returned %q, which is not among its declared targets", n.name, name)
		}
	}
	if len(n.rules) == 0 {
		return t, nil
	}
	r := n.rule(t)
	if r == nil {
		return t, nil
	}
	switch {
	case len(r.charges) == 1 && r.charges[0].costFn == nil:
		// One budget at a fixed cost (every Loop): no need to pay all or
		// none.
		ch := &r.charges[0]
		bound := counters.max[ch.id]
		if used := counters.used[ch.id]; used < bound && used+ch.cost <= bound {
			counters.used[ch.id] = used + ch.cost
			break
		}
		t = c.budgets[ch.id].exit
		if r = n.rule(t); r == nil {
			return t, nil
		}
	case len(r.charges) > 0:
		if exit, spent := c.pay(r.charges, s, counters); spent {
			// The exit spends nothing; what it starts again, it does.
			t = exit
			if r = n.rule(t); r == nil {
				return t, nil
			}
		}
	}
	for _, rs := range r.resets {
		counters.used[rs.id] = rs.start
	}
	return t, nil
}

// pay spends the charges of an edge from counters, all or none: when one
// budget cannot pay, it returns that budget's exit and spent true.
func (c *Compiled[S]) pay(charges []charge[S], s S, counters tally) (exit int, spent bool) {
	var buf [8]int
	costs := buf[:0]
	for _, ch := range charges {
		cost := ch.cost
		if ch.costFn != nil {
			cost = max(ch.costFn(s), 1)
		}
		bound := counters.max[ch.id]
		if used := counters.used[ch.id]; used >= bound || used+cost > bound {
			return c.budgets[ch.id].exit, true
		}
		costs = append(costs, cost)
	}
	for i, ch := range charges {
		counters.used[ch.id] += costs[i]
	}
	return 0, false
}

func (n *cnode[S]) rule(t int) *rule[S] {
	for i := range n.rules {
		if n.rules[i].to == t {
			return &n.rules[i]
		}
	}
	return nil
}

// exitsOf lists the exits of the budgets that count an edge out of node
// name.
func (g *Graph[S]) exitsOf(name string) []string {
	var exits []string
	for _, b := range g.budgets {
		for _, u := range b.uses {
			if u.from == name {
				exits = append(exits, b.exit)
				break
			}
		}
	}
	return exits
}

func (c *Compiled[S]) nodeName(i int) string {
	if i == endIndex {
		return End
	}
	return c.nodes[i].name
}

// StateSchema returns the JSON schema of the graph's state S, generated
// from the Go type with package contract's rules, or nil when S has no
// JSON schema (a state with interface-typed fields, say). Servers give it
// to clients as the state and output schema.
func (c *Compiled[S]) StateSchema() json.RawMessage {
	s, err := schema.For[S]()
	if err != nil {
		return nil
	}
	return s.JSON()
}

// choose calls n's route or decision on s, turning a panic into an error
// that fails the run, as a node's panic does.
func (n *cnode[S]) choose(ctx context.Context, s S) (name string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = recovered(ctx, "route from "+n.name, p)
		}
	}()
	if n.route != nil {
		return n.route(s), nil
	}
	return n.decide(ctx, s)
}
