package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/loomkit/loom/checkpoint"
)

// ErrVersion: a thread's head cannot run on this version of the graph. It
// was written by a newer version, or by an older one that no declared
// migration brings up to this one, or its next node is not in the graph
// (after migrating, or because a node was renamed with no migration).
// The error names the versions; nothing is written.
var ErrVersion = errors.New("graph: the thread does not fit this version of the graph")

// Change is one change that a migration makes to a thread stored under
// an older version of a graph, as it is read: made by RenameNode,
// RenameBudget, RenameField and MapState.
type Change struct {
	// what is "node" or "budget" for a rename; "" for a state change.
	what     string
	old, new string
	state    func(old json.RawMessage) (json.RawMessage, error)
	err      error // why the change cannot be made, reported by Compile
}

// RenameNode migrates a thread whose next node, pending questions, fan-out
// branches or loop counts name node old: they name node new instead. New may be a node
// that already existed, to send the threads waiting at a removed node
// there.
func RenameNode(old, new string) Change {
	c := Change{what: "node", old: old, new: new}
	if old == "" || new == "" || old == new || old == Start || old == End || new == Start || new == End {
		c.err = fmt.Errorf("rename node %q to %q: two different node names are needed", old, new)
	}
	return c
}

// RenameBudget migrates a thread whose count of budget old (declared with
// Budget) is kept under that name: the count becomes budget new's. A
// Loop's count follows its nodes: rename them with RenameNode.
func RenameBudget(old, new string) Change {
	c := Change{what: "budget", old: old, new: new}
	if old == "" || new == "" || old == new || strings.Contains(old+new, ">") {
		c.err = fmt.Errorf("rename budget %q to %q: two different budget names, with no '>', are needed", old, new)
	}
	return c
}

// MapState migrates a thread's state: fn gets the state as the older
// version stored it (JSON) and returns it as the newer version reads it.
// It must not change old in place. An error from fn refuses the thread
// with ErrVersion.
func MapState(fn func(old json.RawMessage) (json.RawMessage, error)) Change {
	c := Change{state: fn}
	if fn == nil {
		c.err = errors.New("map state: nil function")
	}
	return c
}

// RenameField migrates a thread's state, a JSON object, whose field old
// (its JSON name) is now called new. A state without field old is left
// as it is; a field new already there is replaced.
func RenameField(old, new string) Change {
	c := MapState(func(state json.RawMessage) (json.RawMessage, error) {
		if len(state) == 0 || bytes.Equal(state, []byte("null")) {
			return state, nil
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(state, &fields); err != nil {
			return nil, fmt.Errorf("rename field %q: the state is not a JSON object: %w", old, err)
		}
		v, ok := fields[old]
		if !ok {
			return state, nil
		}
		delete(fields, old)
		fields[new] = v
		return json.Marshal(fields)
	})
	if old == "" || new == "" || old == new {
		c.err = fmt.Errorf("rename field %q to %q: two different field names are needed", old, new)
	}
	return c
}

// Version declares the graph's version, at least 1. Every checkpoint
// records the version of the graph that wrote it (checkpoint.Meta.Version);
// a graph that declares none is version 1, and so is a checkpoint that
// records none. When a run reads a thread written by an older version,
// the migrations declared with Migrate bring its head up to this version
// (in memory; the run's first checkpoint is written as this version), and
// the run goes on. A thread that cannot be brought up is refused with
// ErrVersion.
func (g *Graph[S]) Version(v int) *Graph[S] {
	switch {
	case v < 1:
		g.errorf("version %d: a version is at least 1", v)
	case g.version != 0:
		g.errorf("version %d: the graph already declared version %d", v, g.version)
	default:
		g.version = v
	}
	return g
}

// Migrate declares how a thread stored under version from becomes one of
// version from+1: changes, applied in the order given. A graph of version
// v declares at most one migration from each older version, from 1 to
// v-1; a thread written by a version with no migration from it (directly
// or through later ones) is refused. A migration with no changes says
// that the threads of version from run as they are.
func (g *Graph[S]) Migrate(from int, changes ...Change) *Graph[S] {
	if from < 1 {
		g.errorf("migration from version %d: versions start at 1", from)
		return g
	}
	if _, dup := g.migrations[from]; dup {
		g.errorf("migration from version %d: declared twice", from)
		return g
	}
	for _, c := range changes {
		if c.err != nil {
			g.errorf("migration from version %d: %w", from, c.err)
		}
	}
	if g.migrations == nil {
		g.migrations = make(map[int][]Change)
	}
	g.migrations[from] = slices.Clone(changes)
	return g
}

// checkVersions adds to errs what is wrong with the declared migrations:
// one from a version that is not older than the graph, or a rename to a
// node or budget that, after the later migrations, the graph does not
// have.
func (g *Graph[S]) checkVersions(errs []error) []error {
	v := max(g.version, 1)
	for _, from := range slices.Sorted(maps.Keys(g.migrations)) {
		if from >= v {
			errs = append(errs, fmt.Errorf("migration from version %d: the graph is version %d (declare it with Version)", from, v))
			continue
		}
		for _, c := range g.migrations[from] {
			if c.what == "" || c.err != nil {
				continue
			}
			name := c.new
			for later := from + 1; later < v; later++ {
				name = renamed(g.migrations[later], c.what, name)
			}
			var ok bool
			if c.what == "node" {
				ok = g.node(name) != nil
			} else {
				b := g.budgetNamed(name)
				ok = b != nil && !b.loop
			}
			if !ok {
				errs = append(errs, fmt.Errorf("migration from version %d: %s %q is renamed to %q, which is no %s of version %d", from, c.what, c.old, name, c.what, v))
			}
		}
	}
	return errs
}

// renamed returns what the renames of kind what among changes make of
// name.
func renamed(changes []Change, what, name string) string {
	for _, c := range changes {
		if c.what == what && c.old == name {
			name = c.new
		}
	}
	return name
}

// storedVersion is the graph version that wrote cp: 1 when it records
// none.
func storedVersion(cp *checkpoint.Checkpoint) int { return max(cp.Meta.Version, 1) }

// upgrade returns the thread head cp as this version of the graph runs
// it: cp itself when this version wrote it, else a copy migrated from its
// version, with the version set to this one. cp is not changed.
func (c *Compiled[S]) upgrade(cp *checkpoint.Checkpoint) (*checkpoint.Checkpoint, error) {
	have, want := storedVersion(cp), max(c.src.version, 1)
	if have == want {
		return cp, nil
	}
	if have > want {
		return nil, fmt.Errorf("%w: it was written by version %d, and this graph is version %d, which is older", ErrVersion, have, want)
	}
	for from := have; from < want; from++ {
		if _, ok := c.src.migrations[from]; !ok {
			return nil, fmt.Errorf("%w: it was written by version %d, and this graph is version %d and declares no migration from version %d", ErrVersion, have, want, from)
		}
	}
	m := *cp
	m.Next = slices.Clone(cp.Next)
	if cp.Interrupt != nil {
		i := *cp.Interrupt
		m.Interrupt = &i
	}
	m.Interrupts = slices.Clone(cp.Interrupts)
	m.Answers, m.Done = maps.Clone(cp.Answers), maps.Clone(cp.Done)
	m.Counters = maps.Clone(cp.Counters)
	for from := have; from < want; from++ {
		for _, ch := range c.src.migrations[from] {
			if err := ch.apply(&m); err != nil {
				return nil, fmt.Errorf("%w: it was written by version %d; migrating it from version %d to %d: %w", ErrVersion, have, from, from+1, err)
			}
		}
	}
	m.Meta.Version = c.src.version
	for _, n := range m.Next {
		if _, ok := c.index[n]; !ok {
			return nil, fmt.Errorf("%w: it was written by version %d and migrated to version %d; its next node %q is not in the graph", ErrVersion, have, want, n)
		}
	}
	return &m, nil
}

// apply makes the change to cp, whose slices and maps are its own.
func (ch *Change) apply(cp *checkpoint.Checkpoint) error {
	switch ch.what {
	case "node":
		for i, n := range cp.Next {
			if n == ch.old {
				cp.Next[i] = ch.new
			}
		}
		rename := func(q *checkpoint.Interrupt) {
			if q.Node == ch.old {
				q.Node = ch.new
			}
			q.Branch = renamePrefix(q.Branch, ch.old, ch.new)
		}
		if cp.Interrupt != nil {
			rename(cp.Interrupt)
		}
		for i := range cp.Interrupts {
			rename(&cp.Interrupts[i])
		}
		branch := func(k string) string { return renamePrefix(k, ch.old, ch.new) }
		cp.Answers, cp.Done = renameKeys(cp.Answers, branch), renameKeys(cp.Done, branch)
		cp.Counters = renameKeys(cp.Counters, bounds(func(k string) string {
			// A Loop's count is kept under "from>to".
			if rest, ok := strings.CutPrefix(k, ch.old+">"); ok {
				k = ch.new + ">" + rest
			}
			if rest, ok := strings.CutSuffix(k, ">"+ch.old); ok {
				k = rest + ">" + ch.new
			}
			return k
		}))
	case "budget":
		cp.Counters = renameKeys(cp.Counters, bounds(func(k string) string {
			if k == ch.old {
				return ch.new
			}
			return k
		}))
	default:
		state, err := ch.state(bytes.Clone(cp.State))
		if err != nil {
			return fmt.Errorf("map state: %w", err)
		}
		cp.State = state
	}
	return nil
}

// renamePrefix renames the node that a fan-out branch's name ("node[2]",
// "node/inner[0]") starts with.
func renamePrefix(s, old, new string) string {
	if rest, ok := strings.CutPrefix(s, old); ok && (rest == "" || rest[0] == '[' || rest[0] == '/') {
		return new + rest
	}
	return s
}

// bounds makes f, a rename of the budgets' counters, rename the bounds
// a run lowered too (kept under boundKey and the budget's name).
func bounds(f func(string) string) func(string) string {
	return func(k string) string {
		if name, ok := strings.CutPrefix(k, boundKey); ok {
			return boundKey + f(name)
		}
		return f(k)
	}
}

// renameKeys returns m with its keys passed through f.
func renameKeys[V any](m map[string]V, f func(string) string) map[string]V {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[f(k)] = v
	}
	return out
}

// notInGraph is the error for a thread head whose next node name is not
// a node of the graph.
func (c *Compiled[S]) notInGraph(cp *checkpoint.Checkpoint, name string) error {
	return fmt.Errorf("%w: it was written by version %d, as this graph is, and its next node %q is not in the graph (a renamed node is declared with Version and Migrate)", ErrVersion, storedVersion(cp), name)
}
