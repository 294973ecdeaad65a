package graph

import (
	"fmt"
	"slices"
)

// Breakpoint says where a run stopped for a breakpoint: before or after
// Node. The thread's head is checkpointed there; Continue goes on, and
// does not stop again before the node it starts with.
type Breakpoint struct {
	Node string `json:"node"`
	// When is "before" or "after".
	When string `json:"when"`
}

// AllNodes, in a list of breakpoints, stands for every node.
const AllNodes = "*"

// WithInterruptBefore stops every run before each of nodes runs (AllNodes:
// every node), with status interrupted and the Breakpoint in the result,
// until Continue. Breakpoints need a saver.
func WithInterruptBefore(nodes ...string) CompileOption {
	return func(c *compileSpec) { c.before = append(c.before, nodes...) }
}

// WithInterruptAfter stops every run after each of nodes ran and its step
// was checkpointed (AllNodes: every node), until Continue.
func WithInterruptAfter(nodes ...string) CompileOption {
	return func(c *compileSpec) { c.after = append(c.after, nodes...) }
}

// breakpoints turns node names into flags by node index; nil for none.
// It names what it does not know.
func (c *Compiled[S]) breakpoints(what string, names []string) ([]bool, error) {
	if len(names) == 0 {
		return nil, nil
	}
	flags := make([]bool, len(c.nodes))
	for _, name := range names {
		if name == AllNodes {
			for i := range flags {
				flags[i] = true
			}
			continue
		}
		i, ok := c.index[name]
		if !ok {
			return nil, fmt.Errorf("interrupt %s %q: no such node (the nodes: %v)", what, name, c.nodeNames())
		}
		flags[i] = true
	}
	return flags, nil
}

// setBreakpoints picks the run's breakpoints: in's where given, else the
// compiled graph's.
func (r *runner[S]) setBreakpoints(in Input[S]) error {
	r.before, r.after = r.c.before, r.c.after
	var err error
	if in.InterruptBefore != nil {
		if r.before, err = r.c.breakpoints("before", in.InterruptBefore); err != nil {
			return err
		}
	}
	if in.InterruptAfter != nil {
		if r.after, err = r.c.breakpoints("after", in.InterruptAfter); err != nil {
			return err
		}
	}
	if (slices.Contains(r.before, true) || slices.Contains(r.after, true)) && r.c.saver == nil {
		return fmt.Errorf("breakpoints: %w", ErrNoSaver)
	}
	return nil
}
