package graph

import (
	"context"
	"slices"
	"strings"
)

// JumpFunc is a node that says where the run goes next: it returns the
// new state and the name of the next node, one of the targets declared
// with it (End among them, if it can end). It is LangGraph's Command with
// an update and a goto.
type JumpFunc[S any] func(ctx context.Context, s S) (S, string, error)

// Jump adds a node that chooses where the run goes: fn returns the new
// state and one of targets. The node has no Edge or Route of its own;
// declaring one is a compile error, as is a target that is no node. Its
// targets are drawn like a route's, Scenarios lists a path through each,
// and budgets count its edges like any other (a spent budget sends the
// run to its exit instead of the target chosen). A run whose node returns
// a name not among targets fails with an error naming it.
func (g *Graph[S]) Jump(name string, fn JumpFunc[S], targets []string, opts ...NodeOption) *Graph[S] {
	if fn == nil {
		g.errorf("node %q: nil function", name)
		return g
	}
	if g.addNode(name, nil, fn, opts) == nil {
		return g
	}
	if len(targets) == 0 {
		g.errorf("jump from %q: no targets declared", name)
		return g
	}
	return g.setOut(name, &out[S]{jump: true, targets: slices.Clone(targets)})
}

// invoke runs the node's function once: a Jump node's returns where it
// chose to go, a plain node's "".
func (n *cnode[S]) invoke(ctx context.Context, s S) (S, string, error) {
	if n.jump != nil {
		return n.jump(ctx, s)
	}
	out, err := n.fn(ctx, s)
	return out, "", err
}

// targetNames lists the node's declared targets, for errors.
func (n *cnode[S]) targetNames() string {
	names := make([]string, len(n.targets))
	for i, t := range n.targets {
		names[i] = t.name
	}
	return strings.Join(names, ", ")
}
