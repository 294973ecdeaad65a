package graph

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/contract"
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
	loops     []loop // by loop id
	index     map[string]int
	saver     checkpoint.Saver
	stepLimit int
	src       *Graph[S] // for Mermaid and Scenarios
}

type target struct {
	name string
	idx  int
}

type cloop struct {
	id, to, exit, max int
}

// A loop's count is of consecutive returns: entering its target any other
// way (from outside the loop) starts the count again.

type cnode[S any] struct {
	name string
	fn   NodeFunc[S]
	nodeSpec
	to      int // fixed target, when route is nil
	route   RouteFunc[S]
	targets []target
	loops   []cloop
	// entering lists, per target index, the ids of loops into that node
	// that this node is not the source of: taking such an edge resets them.
	entering map[int][]int
}

func (g *Graph[S]) freeze(spec compileSpec) *Compiled[S] {
	c := &Compiled[S]{
		name:      g.name,
		index:     make(map[string]int, len(g.nodes)),
		saver:     spec.saver,
		stepLimit: spec.stepLimit,
		src:       g,
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
	// Loop ids in a stable order, so checkpointed counters mean the same
	// thing in every process.
	c.loops = append([]loop(nil), g.loops...)
	sort.Slice(c.loops, func(i, j int) bool {
		a, b := c.loops[i], c.loops[j]
		return a.from < b.from || a.from == b.from && a.to < b.to
	})
	build := func(name string) cnode[S] {
		cn := cnode[S]{name: name}
		o := g.outs[name]
		if o.route == nil {
			cn.to = idx(o.to)
		} else {
			cn.route = o.route
			for _, t := range o.targets {
				cn.targets = append(cn.targets, target{name: t, idx: idx(t)})
			}
		}
		for id, l := range c.loops {
			if l.from == name {
				cn.loops = append(cn.loops, cloop{id: id, to: idx(l.to), exit: idx(l.exit), max: l.max})
			}
		}
		for _, t := range append(o.targetList(), c.exitsOf(name)...) {
			for id, l := range c.loops {
				if l.to == t && l.from != name {
					if cn.entering == nil {
						cn.entering = make(map[int][]int)
					}
					cn.entering[idx(t)] = append(cn.entering[idx(t)], id)
				}
			}
		}
		return cn
	}
	c.start = build(Start)
	c.nodes = make([]cnode[S], len(g.nodes))
	for i, n := range g.nodes {
		cn := build(n.name)
		cn.fn, cn.nodeSpec = n.fn, n.nodeSpec
		c.nodes[i] = cn
	}
	return c
}

// Name returns the graph's name.
func (c *Compiled[S]) Name() string { return c.name }

// Saver returns the saver the graph checkpoints to, or nil.
func (c *Compiled[S]) Saver() checkpoint.Saver { return c.saver }

// next returns the index of the node that follows n for state s, applying
// loop bounds to counters.
func (c *Compiled[S]) next(n *cnode[S], s S, counters []int) (int, error) {
	t := n.to
	if n.route != nil {
		name := n.route(s)
		t = -2
		for _, tg := range n.targets {
			if tg.name == name {
				t = tg.idx
				break
			}
		}
		if t == -2 {
			return 0, fmt.Errorf("route from %s returned %q, which is not among its declared targets", n.name, name)
		}
	}
	for _, l := range n.loops {
		if l.to == t {
			if counters[l.id] >= l.max {
				t = l.exit
				break
			}
			counters[l.id]++
		}
	}
	for _, id := range n.entering[t] {
		counters[id] = 0
	}
	return t, nil
}

// exitsOf lists the exits of the loops that leave node name.
func (c *Compiled[S]) exitsOf(name string) []string {
	var exits []string
	for _, l := range c.loops {
		if l.from == name {
			exits = append(exits, l.exit)
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

// loopKey names a loop's counter in checkpoints.
func loopKey(l loop) string { return l.from + ">" + l.to }

func (c *Compiled[S]) countersToMap(counters []int) map[string]int {
	var m map[string]int
	for id, v := range counters {
		if v > 0 {
			if m == nil {
				m = make(map[string]int, len(counters))
			}
			m[loopKey(c.loops[id])] = v
		}
	}
	return m
}

func (c *Compiled[S]) countersFromMap(m map[string]int) []int {
	if len(c.loops) == 0 {
		return nil
	}
	counters := make([]int, len(c.loops))
	for id, l := range c.loops {
		counters[id] = m[loopKey(l)]
	}
	return counters
}

// StateSchema returns the JSON schema of the graph's state S, generated
// from the Go type with package contract's rules, or nil when S has no
// JSON schema (a state with interface-typed fields, say). Servers give it
// to clients as the state and output schema.
func (c *Compiled[S]) StateSchema() json.RawMessage {
	s, err := contract.SchemaFor[S]()
	if err != nil {
		return nil
	}
	return s.JSON()
}
