package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/loomkit/loom/checkpoint"
)

// Map returns a node that fans out: it runs fn concurrently on every item
// that items returns for the state, then joins the results with merge, in
// item order whatever order the branches finish in. The first branch error
// cancels the others' context and fails the node. The node is one step,
// checkpointed after the join; with a saver, a branch that finishes while
// others still run is written at once as a result of the step, so when
// the node runs again (after a crash, on resume, or on a retry) the
// branches that finished take their result and only the others run. So a
// result (R) must come back the same through encoding/json, and items must
// give the same items for the same state: branch i keeps item i's result.
// Branch events carry the node name "node[i]". Branches may each Ask: the
// node stops with all their questions, once every branch has finished or
// asked.
func Map[S, T, R any](items func(S) []T, fn func(ctx context.Context, item T) (R, error), merge func(s S, results []R) (S, error)) NodeFunc[S] {
	return func(ctx context.Context, s S) (S, error) {
		its := items(s)
		rs, err := fanOut(ctx, len(its), func(ctx context.Context, i int) (R, error) {
			return fn(ctx, its[i])
		})
		if err != nil {
			return s, err
		}
		return merge(s, rs)
	}
}

// Parallel returns a node that runs several branches concurrently, each on
// its own copy of the state, and joins their results with merge in the
// order the branches are given. Branches share whatever the state's
// slices and maps point to, so they must not change those in place. As
// with Map, a branch that finished is not run again when the node is.
func Parallel[S any](merge func(s S, results []S) (S, error), branches ...NodeFunc[S]) NodeFunc[S] {
	return func(ctx context.Context, s S) (S, error) {
		rs, err := fanOut(ctx, len(branches), func(ctx context.Context, i int) (S, error) {
			return branches[i](ctx, s)
		})
		if err != nil {
			return s, err
		}
		return merge(s, rs)
	}
}

// branchCtx is what a fan-out branch's context knows.
type branchCtx struct {
	rc   runCtx
	ask  askState
	asks []question // what the branch asked, when it stopped to ask
}

// fanOut runs f for 0 ≤ i < n concurrently and returns the results in
// order. In a run, branch i is named "node[i]": a branch whose result the
// run kept (see kept) takes it instead of running.
func fanOut[R any](ctx context.Context, n int, f func(ctx context.Context, i int) (R, error)) ([]R, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	rc := runOf(ctx)
	rs := make([]R, n)
	// What the branches share, in one allocation.
	var fan struct {
		wg    sync.WaitGroup
		once  sync.Once
		first error
		left  atomic.Int32 // branches not finished yet
	}
	var (
		// The branches' run contexts, in one allocation; each branch
		// writes only its own: its questions' state, and what it asked.
		branches []branchCtx
		keep     *kept
	)
	if rc != nil {
		branches = make([]branchCtx, n)
		keep = rc.kept
	}
	fan.left.Store(int32(n))
	for i := range n {
		bctx := ctx
		if rc != nil {
			b := &branches[i]
			b.rc = *rc
			b.rc.node = fmt.Sprintf("%s[%d]", rc.node, i)
			b.rc.ask = nil
			if a := rc.ask; a != nil {
				b.ask = askState{resumes: a.branches[b.rc.node], branch: b.rc.node, branches: a.branches}
				b.rc.ask = &b.ask
			}
			bctx = context.WithValue(ctx, runKey{}, &b.rc)
		}
		fan.wg.Go(func() {
			if keep != nil { // so rc and branches are too
				if raw, ok := keep.result(branches[i].rc.node); ok {
					if err := json.Unmarshal(raw, &rs[i]); err == nil {
						fan.left.Add(-1)
						return
					}
					slog.WarnContext(bctx, "graph: a fan-out branch's kept result does not decode; running it again", "branch", branches[i].rc.node)
				}
			}
			r, err := func() (r R, err error) {
				defer func() {
					if p := recover(); p != nil {
						err = recovered(bctx, fmt.Sprintf("branch %d", i), p)
					}
				}()
				return f(bctx, i)
			}()
			others := fan.left.Add(-1) > 0
			if err == nil {
				rs[i] = r
				if keep != nil {
					keep.keep(bctx, branches[i].rc.node, r, others)
				}
				return
			}
			// A question stops this branch only; the others go on to
			// finish or ask theirs.
			if ie := (*interruptError)(nil); branches != nil && errors.As(err, &ie) {
				branches[i].asks = ie.asks
				return
			}
			fan.once.Do(func() {
				fan.first = fmt.Errorf("branch %d: %w", i, err)
				cancel(fan.first)
			})
		})
	}
	fan.wg.Wait()
	if fan.first != nil {
		return nil, fan.first
	}
	var all []question
	for i := range branches {
		all = append(all, branches[i].asks...)
	}
	if all != nil {
		return nil, &interruptError{asks: all}
	}
	return rs, nil
}

// Subgraph returns a node that runs the graph inner to its end on a state
// of its own: in maps the outer state to inner's, out maps inner's final
// state back. Its events name the node "outer/inner" and carry the
// namespace "outer" (see Event.Namespace). When a node inside asks a
// question, the outer node is interrupted with it.
//
// With a saver, the subgraph keeps its own checkpoints, in the outer
// graph's saver, on the thread SubgraphThread(thread, node) (for a
// subgraph nested in a subgraph, derived from the middle one's thread
// again), written as the outer run's durability says (with
// DurabilityExit, only where the subgraph stops: its end, or the step
// before the node that asked or failed). When the outer node runs again
// in the same step — on resume, after a crash — the subgraph continues at
// its last checkpoint, on the state kept there: the inner node that asked
// runs again, the inner nodes before it do not, and a subgraph that had
// finished gives its final state without running. Its checkpoints belong to the outer step (see
// checkpoint.Nest): once the outer node has finished, the next visit of
// the node starts the subgraph afresh, and the old checkpoints are only
// history. A node runs a given subgraph once per step. Without a saver,
// the subgraph runs again from its start on resume, and its Ask calls get
// the answers in order (the re-run contract of Ask applies to every node
// inside).
//
// The result is a plain NodeFunc, for use inside other nodes (a Parallel
// branch, say); to add a node the compiled graph knows holds inner, so that
// its Spec and the LangGraph API show it, use Graph.Subgraph with Nest.
func Subgraph[S, T any](inner *Compiled[T], in func(S) T, out func(S, T) S) NodeFunc[S] {
	sub := *inner
	sub.saver = nil
	return func(ctx context.Context, s S) (S, error) {
		parent := runOf(ctx)
		rc := &runCtx{ask: &askState{}}
		c := &sub
		if parent != nil {
			rc.thread, rc.run, rc.emit, rc.ask = parent.thread, parent.run, parent.emit, parent.ask
			rc.prefix = parent.node + "/"
			rc.keyBase = StepKey(ctx)
			if rc.ask == nil {
				rc.ask = &askState{}
			}
			if parent.emit != nil {
				thread, ns := parent.thread, parent.node
				rc.emit = func(e Event) bool {
					e.Thread = thread
					if e.Namespace == "" {
						e.Namespace = ns
					}
					return parent.emit(e)
				}
			}
			if parent.kept != nil {
				withSaver := sub
				c = &withSaver
				c.saver = parent.kept.saver
				rc.thread = SubgraphThread(parent.thread, strings.TrimPrefix(parent.node, parent.prefix))
			}
		}
		r := &runner[T]{c: c, rc: rc, nested: true}
		if len(sub.budgets) > 0 {
			rc.budgets = r
		}
		rc.kept = r.keeper()
		r.ctx = context.WithValue(ctx, runKey{}, rc)
		if rc.kept != nil {
			if err := r.setDurability(parent.kept.dur); err != nil {
				return s, fmt.Errorf("subgraph %s: %w", sub.name, err)
			}
		}
		first, done, err := r.enter(func() T { return in(s) })
		if err != nil {
			return s, fmt.Errorf("subgraph %s: %w", sub.name, err)
		}
		if !done {
			_, err = r.loop(first)
			if IsInterrupt(err) && !(r.dur.exit && r.unsaved != "") {
				if done := rc.kept.all(); done != nil {
					// The inner fan-out's finished branches wait with
					// the question (with exit durability, settle
					// writes them with the step before it). They are
					// written as from inside the node, whose step the
					// loop took back.
					rc.step++
					werr := r.writeBranches(done)
					rc.step--
					if werr != nil {
						err = fmt.Errorf("%w (and: %w)", err, werr)
					}
				}
			}
			if _, err = r.settle(nil, err); err != nil {
				return s, fmt.Errorf("subgraph %s: %w", sub.name, err)
			}
		}
		return out(s, r.state), nil
	}
}

// SubgraphThread is the thread on which a subgraph run by node of thread
// keeps its checkpoints: thread, "|" and node ("t1|review").
func SubgraphThread(thread, node string) string { return thread + "|" + node }

// SubgraphThreads returns the threads on which the subgraphs of r keep
// their checkpoints for thread: one for each node added with
// Graph.Subgraph, followed by those of the subgraphs nested in it
// ("t1|mid", "t1|mid|bottom"), nodes in name order. Deleting a thread
// deletes these too. A subgraph that a plain node or a fan-out branch runs
// (the NodeFunc of Subgraph) is not known to r, and its thread is not
// listed.
func SubgraphThreads(r Runner, thread string) []string {
	var out []string
	var walk func(r Runner, thread string)
	walk = func(r Runner, thread string) {
		subs := r.Subgraphs()
		for _, node := range slices.Sorted(maps.Keys(subs)) {
			t := SubgraphThread(thread, node)
			out = append(out, t)
			walk(subs[node], t)
		}
	}
	if r != nil {
		walk(r, thread)
	}
	return out
}

// enter readies a subgraph's run: the node it runs first, or done when
// it had finished in this outer step. Without a saver it starts on
// fresh(); with one it continues the subgraph's checkpoints of this outer
// step, or writes a first one for it.
func (r *runner[S]) enter(fresh func() S) (first int, done bool, err error) {
	c := r.c
	var key string
	if c.saver != nil {
		key = r.rc.keyBase + "#" + c.name
		head, err := c.saver.Get(r.ctx, r.rc.thread, "")
		if err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
			return 0, false, fmt.Errorf("load thread %s: %w", r.rc.thread, err)
		}
		r.head = head
		if head != nil && head.Nest != nil && head.Nest.Step == key {
			if err := r.load(); err != nil {
				return 0, false, err
			}
			r.rc.step = r.head.Step
			r.counters = c.countersFromMap(r.head.Counters)
			r.nest(key, r.head.Nest.Used)
			r.rc.kept.reset(r.head.Done)
			if len(r.head.Next) == 0 {
				return endIndex, true, nil
			}
			first, err = r.headNext()
			return first, false, err
		}
	}
	r.state = fresh()
	r.counters = c.countersFromMap(nil)
	if first, err = c.next(r.ctx, &c.start, r.state, r.counters); err != nil {
		return 0, false, err
	}
	if c.saver != nil {
		r.nest(key, 0)
		r.rc.step = 0
		if r.dur.exit && first != endIndex {
			// The outer node's state gives the input again: what the
			// subgraph needs to continue is written where it stops.
			return first, false, nil
		}
		err = r.save(checkpoint.SourceInput, "", first, func(cp *checkpoint.Checkpoint) { cp.Step = 0 })
	}
	return first, false, err
}

// nest makes every checkpoint of the subgraph's run name the outer step
// key, and count the outer node's answers its finished steps took: used
// before this run, and those its Ask calls take (the outer node's
// questions are counted in order across the subgraph's nodes).
func (r *runner[S]) nest(key string, used int) {
	a := r.rc.ask
	base := a.asked
	a.asked += used
	r.rc.kept.nest = func(cp *checkpoint.Checkpoint) {
		cp.Nest = &checkpoint.Nest{Step: key, Used: a.asked - base}
	}
}

// Nested is a node that runs a graph of its own, for Graph.Subgraph.
type Nested[S any] struct {
	fn    NodeFunc[S]
	inner Runner
}

// Nest makes a node for Graph.Subgraph that runs inner as Subgraph does,
// with in and out mapping the states, and remembers inner for the
// compiled graph's Spec and Subgraphs. A nil inner makes a Nested that
// Graph.Subgraph refuses.
func Nest[S, T any](inner *Compiled[T], in func(S) T, out func(S, T) S) Nested[S] {
	if inner == nil || in == nil || out == nil {
		return Nested[S]{}
	}
	return Nested[S]{fn: Subgraph(inner, in, out), inner: inner}
}
