// Package graph is Loom's runtime: a typed state graph whose nodes are plain
// Go functions, with declared routes, bounded loops, fan-out, subgraphs,
// interrupts that wait for a person, a checkpoint after every step, and a
// stream of events.
//
// A graph is built with New, Node, Edge, Route and Loop, then checked and
// frozen by Compile. The compiled graph runs on threads: each thread has a
// linear history of checkpoints in a checkpoint.Saver, so a run can stop
// (an interrupt, a crash, a cancelled context, the step limit) and continue
// later, in this process or another.
package graph

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/loomkit/loom/checkpoint"
)

// Start and End are the virtual nodes where every run begins and ends.
const (
	Start = "__start__"
	End   = "__end__"
)

// NodeFunc is a node: it takes the state and returns the new state.
// Whatever a node needs (a model, a store, tools) comes from its closure.
type NodeFunc[S any] func(ctx context.Context, s S) (S, error)

// RouteFunc picks the next node from the state. It must return one of the
// targets declared with it.
type RouteFunc[S any] func(s S) string

// DecideFunc is a route that may refuse: it picks the next node from the
// state, or returns an error, which fails the run with that error (the
// error is not written to the state). Its context is the run's: Left
// reads the budgets there.
type DecideFunc[S any] func(ctx context.Context, s S) (string, error)

// RetryPolicy says how often a failing node is tried again.
type RetryPolicy struct {
	// Attempts is the total number of tries, at least 1.
	Attempts int
	// Backoff is the wait before the second try; it doubles after each try.
	Backoff time.Duration
	// MaxBackoff caps the wait (no cap when zero).
	MaxBackoff time.Duration
	// If reports whether an error is worth another try. When nil, every
	// error is, except interrupts and the run's own cancellation.
	If func(error) bool
}

// NodeOption configures a node.
type NodeOption func(*nodeSpec)

// Timeout bounds one try of a node; the node's context is cancelled after d.
func Timeout(d time.Duration) NodeOption { return func(n *nodeSpec) { n.timeout = d } }

// Retry sets the node's retry policy.
func Retry(p RetryPolicy) NodeOption {
	return func(n *nodeSpec) {
		if p.Attempts < 1 {
			p.Attempts = 1
		}
		n.retry = &p
	}
}

// Pure marks a node whose step only computes the next state from the
// state it is given: no effect outside the run, no question. Its state is
// not checkpointed on its own but with the next step that is (a run that
// stops in between runs it again), so a chain of small pure steps costs
// one checkpoint, not one each. A pure step that leads to End is
// checkpointed; its KindState event carries no checkpoint id.
func Pure() NodeOption { return func(n *nodeSpec) { n.pure = true } }

type nodeSpec struct {
	timeout time.Duration
	retry   *RetryPolicy
	pure    bool
	sub     Runner // the graph the node runs, when added with Graph.Subgraph
	// cache is the node's cache policy and cacheKey its key function
	// (a func(S) string), when set with Cache and CacheKey.
	cache    *CachePolicy
	cacheKey any
}

type node[S any] struct {
	name string
	fn   NodeFunc[S]
	jump JumpFunc[S] // instead of fn, for a node added with Jump
	nodeSpec
}

// out is how a node (or Start) leaves: one fixed edge, or a route.
type out[S any] struct {
	to      string // fixed edge target
	route   RouteFunc[S]
	decide  DecideFunc[S]
	targets []string // declared targets of route, decide or jump
	jump    bool     // the node chooses among targets (Graph.Jump)
}

// Graph is a graph under construction. Its methods record declarations and
// errors; Compile reports every error at once.
type Graph[S any] struct {
	name    string
	nodes   []*node[S]
	outs    map[string]*out[S]
	budgets []*budget[S] // Loop's and Budget's, in the order declared
	errs    []error
	// version is the declared version (0: none, which is 1), and
	// migrations the declared migrations, by the version they start from.
	version    int
	migrations map[int][]Change
}

// New starts a graph over state type S, which must round-trip through JSON
// because every checkpoint stores it.
func New[S any](name string) *Graph[S] {
	return &Graph[S]{name: name, outs: make(map[string]*out[S])}
}

// Name returns the graph's name.
func (g *Graph[S]) Name() string { return g.name }

func (g *Graph[S]) errorf(format string, args ...any) {
	g.errs = append(g.errs, fmt.Errorf(format, args...))
}

// Node adds a node.
func (g *Graph[S]) Node(name string, fn NodeFunc[S], opts ...NodeOption) *Graph[S] {
	g.addNode(name, fn, nil, opts)
	return g
}

// Subgraph adds a node that runs a graph of its own, made by Nest. Unlike
// a Node running the NodeFunc of the package function Subgraph, the
// compiled graph knows what it holds: Spec and Subgraphs list the inner
// graph under the node's name.
func (g *Graph[S]) Subgraph(name string, sub Nested[S], opts ...NodeOption) *Graph[S] {
	if sub.fn == nil {
		g.errorf("subgraph %q: no graph; make it with Nest", name)
		return g
	}
	if n := g.addNode(name, sub.fn, nil, opts); n != nil {
		n.sub = sub.inner
	}
	return g
}

// addNode adds a node that runs fn, or jump, and returns it, or records
// why it cannot and returns nil.
func (g *Graph[S]) addNode(name string, fn NodeFunc[S], jump JumpFunc[S], opts []NodeOption) *node[S] {
	switch {
	case name == "" || name == Start || name == End:
		g.errorf("node %q: reserved or empty name", name)
		return nil
	case fn == nil && jump == nil:
		g.errorf("node %q: nil function", name)
		return nil
	case g.node(name) != nil:
		g.errorf("node %q: duplicate name", name)
		return nil
	}
	n := &node[S]{name: name, fn: fn, jump: jump}
	for _, o := range opts {
		o(&n.nodeSpec)
	}
	g.nodes = append(g.nodes, n)
	return n
}

func (g *Graph[S]) node(name string) *node[S] {
	for _, n := range g.nodes {
		if n.name == name {
			return n
		}
	}
	return nil
}

// Edge makes the run go from node from to node to. A node has exactly one
// way out: one Edge or one Route (a node added with Jump chooses its own).
func (g *Graph[S]) Edge(from, to string) *Graph[S] {
	return g.setOut(from, &out[S]{to: to})
}

// Route makes the run leave node from by calling fn on the state. targets
// is the full set of names fn may return (End among them, if it can end).
func (g *Graph[S]) Route(from string, fn RouteFunc[S], targets ...string) *Graph[S] {
	if fn == nil {
		g.errorf("route from %q: nil function", from)
		return g
	}
	if len(targets) == 0 {
		g.errorf("route from %q: no targets declared", from)
		return g
	}
	return g.setOut(from, &out[S]{route: fn, targets: slices.Clone(targets)})
}

// Decide is Route for a route that may refuse: fn gets the run's context
// and may return an error, which fails the run. targets is the full set
// of names fn may return, as for Route, so Scenarios stay exact.
func (g *Graph[S]) Decide(from string, fn DecideFunc[S], targets ...string) *Graph[S] {
	if fn == nil {
		g.errorf("route from %q: nil function", from)
		return g
	}
	if len(targets) == 0 {
		g.errorf("route from %q: no targets declared", from)
		return g
	}
	return g.setOut(from, &out[S]{decide: fn, targets: slices.Clone(targets)})
}

func (g *Graph[S]) setOut(from string, o *out[S]) *Graph[S] {
	if had, dup := g.outs[from]; dup {
		if had.jump || o.jump {
			g.errorf("node %q chooses where it goes (Jump): it takes no Edge or Route", from)
			return g
		}
		g.errorf("node %q: more than one Edge or Route out of it", from)
		return g
	}
	g.outs[from] = o
	return g
}

// Loop bounds the edge from → to (a plain Edge, or one of the targets of
// from's route or Jump): it is taken at most max times in a row; when
// the run would take it again, it goes to exit instead. "In a row" means
// the count starts again whenever the run enters to by another edge
// (coming into the loop from outside it), and when a new run starts on
// the thread; it survives interrupts and crashes, as it is checkpointed.
// Every cycle in a graph must contain a bounded edge, so no run loops
// forever by accident.
//
// A Loop is a Budget named "from>to" that counts its one edge; declare a
// Budget when a bound spans several edges, weighs them, or starts again
// on edges of its own.
func (g *Graph[S]) Loop(from, to string, max int, exit string) *Graph[S] {
	if max < 1 {
		g.errorf("loop %s → %s: bound %d must be at least 1", from, to, max)
		return g
	}
	name := from + ">" + to
	if g.budgetNamed(name) != nil {
		g.errorf("loop %s → %s: declared twice", from, to)
		return g
	}
	g.budgets = append(g.budgets, &budget[S]{name: name, max: max, exit: exit, loop: true,
		uses: []use[S]{{from: from, to: to, cost: 1}}, entering: []entering{{node: to}}})
	return g
}

// targets lists where a declared way out may lead.
func (o *out[S]) targetList() []string {
	if o.route != nil || o.decide != nil || o.jump {
		return o.targets
	}
	return []string{o.to}
}

// CompileOption configures a compiled graph.
type CompileOption func(*compileSpec)

type compileSpec struct {
	saver         checkpoint.Saver
	stepLimit     int
	before, after []string // breakpoints
	durability    Durability
}

// WithSaver stores a checkpoint after every step in s. Without a saver a
// graph runs in memory only: it cannot be resumed or continued.
func WithSaver(s checkpoint.Saver) CompileOption { return func(c *compileSpec) { c.saver = s } }

// WithStepLimit caps the node steps of one run (default 10,000). A run
// that reaches it stops with ErrStepLimit after checkpointing, and can be
// continued.
func WithStepLimit(n int) CompileOption { return func(c *compileSpec) { c.stepLimit = n } }

// Compile checks the graph and freezes it. It fails, naming the nodes, for
// a duplicate name, an unknown target, a node with no way out, an
// unreachable node, a node that cannot reach End, and a cycle with no
// bounded edge.
func (g *Graph[S]) Compile(opts ...CompileOption) (*Compiled[S], error) {
	spec := compileSpec{stepLimit: 10_000}
	for _, o := range opts {
		o(&spec)
	}
	errs := slices.Clone(g.errs)
	known := func(name string) bool { return name == End || g.node(name) != nil }

	if _, ok := g.outs[Start]; !ok {
		errs = append(errs, errors.New("no edge from Start"))
	}
	for _, from := range slices.Sorted(maps.Keys(g.outs)) {
		if from != Start && g.node(from) == nil {
			errs = append(errs, fmt.Errorf("edge from unknown node %q", from))
			continue
		}
		for _, to := range g.outs[from].targetList() {
			if to == Start || !known(to) {
				errs = append(errs, fmt.Errorf("edge %s → %s: unknown target %q", from, to, to))
			}
		}
	}
	for _, n := range g.nodes {
		if _, ok := g.outs[n.name]; !ok {
			errs = append(errs, fmt.Errorf("node %q has no Edge or Route out of it", n.name))
		}
	}
	errs = g.checkBudgets(errs, known)
	errs = g.checkCaches(errs)
	errs = g.checkVersions(errs)
	if len(errs) > 0 {
		return nil, fmt.Errorf("compile graph %q: %w", g.name, errors.Join(errs...))
	}

	// Reachability from Start and to End, counting loop exits as edges.
	succ := g.successors(true)
	reach := walk(Start, succ)
	var unreachable []string
	for _, n := range g.nodes {
		if !reach[n.name] {
			unreachable = append(unreachable, n.name)
		}
	}
	if len(unreachable) > 0 {
		errs = append(errs, fmt.Errorf("unreachable from Start: %s", strings.Join(unreachable, ", ")))
	}
	pred := map[string][]string{}
	for from, tos := range succ {
		for _, to := range tos {
			pred[to] = append(pred[to], from)
		}
	}
	ends := walk(End, pred)
	var stuck []string
	for _, n := range g.nodes {
		if reach[n.name] && !ends[n.name] {
			stuck = append(stuck, n.name)
		}
	}
	if len(stuck) > 0 {
		errs = append(errs, fmt.Errorf("cannot reach End: %s", strings.Join(stuck, ", ")))
	}
	// Every cycle must contain a bounded edge: with bounded edges removed,
	// the graph must be acyclic.
	if cyc := findCycle(g.successors(false)); cyc != nil {
		errs = append(errs, fmt.Errorf("loop without a declared bound: %s (declare one edge of it with Loop, or count it in a Budget)", strings.Join(cyc, " → ")))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("compile graph %q: %w", g.name, errors.Join(errs...))
	}
	c := g.freeze(spec)
	var err error
	if c.before, err = c.breakpoints("before", spec.before); err != nil {
		errs = append(errs, err)
	}
	if c.after, err = c.breakpoints("after", spec.after); err != nil {
		errs = append(errs, err)
	}
	if (c.before != nil || c.after != nil) && c.saver == nil {
		errs = append(errs, errors.New("breakpoints need a saver (WithSaver), to continue from them"))
	}
	if err := spec.durability.check(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("compile graph %q: %w", g.name, errors.Join(errs...))
	}
	return c, nil
}

// successors maps each node (and Start) to where it may go. With bounded
// true it includes loop exits; with bounded false it leaves out bounded
// edges, for finding unbounded cycles.
func (g *Graph[S]) successors(bounded bool) map[string][]string {
	succ := make(map[string][]string)
	for from, o := range g.outs {
		for _, to := range o.targetList() {
			if !bounded && g.boundedEdge(from, to) {
				continue
			}
			succ[from] = append(succ[from], to)
		}
	}
	if bounded {
		for _, b := range g.budgets {
			for _, u := range b.uses {
				succ[u.from] = append(succ[u.from], b.exit)
			}
		}
	}
	return succ
}

// boundedEdge reports whether a budget counts from → to with a cost, so
// that a cycle through it ends.
func (g *Graph[S]) boundedEdge(from, to string) bool {
	for _, b := range g.budgets {
		if u := b.counts(from, to); u != nil && u.bounded() {
			return true
		}
	}
	return false
}

func walk(from string, next map[string][]string) map[string]bool {
	seen := map[string]bool{from: true}
	stack := []string{from}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, m := range next[n] {
			if !seen[m] {
				seen[m] = true
				stack = append(stack, m)
			}
		}
	}
	return seen
}

// findCycle returns the nodes of one cycle, in order and closed (first ==
// last), or nil when there is none.
func findCycle(succ map[string][]string) []string {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var path []string
	var found []string
	var visit func(n string) bool
	visit = func(n string) bool {
		color[n] = grey
		path = append(path, n)
		for _, m := range succ[n] {
			switch color[m] {
			case grey:
				i := slices.Index(path, m)
				found = append(slices.Clone(path[i:]), m)
				return true
			case white:
				if visit(m) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		color[n] = black
		return false
	}
	for _, n := range slices.Sorted(maps.Keys(succ)) {
		if color[n] == white && visit(n) {
			return found
		}
	}
	return nil
}
