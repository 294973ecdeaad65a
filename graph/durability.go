package graph

import (
	"context"
	"fmt"
	"sync"

	"github.com/loomkit/loom/checkpoint"
)

// Durability says when a run writes its checkpoints, as LangGraph's
// durability does. It matters only with a saver. Whichever is chosen, a
// run's questions, its breakpoints and its end are written before the
// run returns.
type Durability string

// The durabilities. The zero value is the compiled graph's (WithDurability),
// whose zero value is DurabilitySync.
const (
	// DurabilitySync writes every step before the next one begins. A
	// process killed at any point loses nothing: the thread continues
	// after the last step taken.
	DurabilitySync Durability = "sync"
	// DurabilityAsync writes each step behind the run, in order, while
	// the next steps run (they wait only when the writes fall
	// AsyncBehind steps back). The run waits for every write before it
	// returns, and a write that fails fails the run. A process killed
	// mid-run loses the steps not written yet: the thread continues
	// after the last step written, and runs the lost steps again.
	DurabilityAsync Durability = "async"
	// DurabilityExit writes the run's input (a new run's update or the
	// answers to its questions) and then only the state the run ends
	// with: done, interrupted, at a breakpoint, failed, cancelled or at
	// the step limit. A process killed mid-run loses every step of the
	// run: the thread runs it again from its input.
	DurabilityExit Durability = "exit"
)

// AsyncBehind is how many steps the writes of a run with DurabilityAsync
// may fall behind it; a step beyond that waits for the oldest write. It
// bounds both the memory the waiting checkpoints take and the steps a
// killed process loses.
const AsyncBehind = 64

// WithDurability sets the durability of the runs that do not choose one
// (Input.Durability); the default is DurabilitySync.
func WithDurability(d Durability) CompileOption {
	return func(c *compileSpec) { c.durability = d }
}

// check names a durability that is none of the three.
func (d Durability) check() error {
	switch d {
	case "", DurabilitySync, DurabilityAsync, DurabilityExit:
		return nil
	}
	return fmt.Errorf("durability %q: want %s, %s or %s", string(d), DurabilitySync, DurabilityAsync, DurabilityExit)
}

// durable is how a run writes its checkpoints.
type durable[S any] struct {
	// ctx is the run's context for writing: a cancelled run still
	// writes the step it finished.
	ctx context.Context
	// exit: only the input and the end are written. The step taken last
	// and not written (runner.unsaved) is kept here: its state, its step
	// number, the node after it and, in a subgraph, the outer node's
	// answers taken by then (see runner.nest), for the end to write.
	exit              bool
	state             S
	step, next, asked int
	// async: the run's checkpoints are written behind it by w, started
	// with the first.
	async bool
	w     *writer
}

// setDurability picks the run's durability: in's, else the compiled
// graph's (a subgraph's run is given its outer run's).
func (r *runner[S]) setDurability(d Durability) error {
	if d == "" {
		d = r.c.durability
	}
	if err := d.check(); err != nil {
		return fmt.Errorf("graph %s: thread %s: %w", r.c.name, r.rc.thread, err)
	}
	if r.c.saver == nil {
		return nil
	}
	r.dur.ctx = context.WithoutCancel(r.ctx)
	if r.rc.kept != nil {
		r.rc.kept.dur = d
	}
	switch d {
	case DurabilityExit:
		r.dur.exit = true
		if r.rc.kept != nil {
			// Finished fan-out branches are not written on their own
			// either; they go with the end.
			r.rc.kept.write = nil
		}
	case DurabilityAsync:
		r.dur.async = true
	}
	return nil
}

// keep remembers the step just taken and not written, for the end.
func (r *runner[S]) keep(next int) {
	if r.dur.exit {
		r.dur.state, r.dur.step, r.dur.next = r.state, r.rc.step, next
		r.dur.asked = r.rc.ask.asked
	}
}

// put writes cp. With async durability, a checkpoint that the run goes on
// from is queued; one that asks questions or ends the thread's work is
// written (after those queued) before put returns.
func (r *runner[S]) put(cp *checkpoint.Checkpoint) error {
	if r.dur.async {
		if r.dur.w == nil {
			r.dur.w = startWriter(r.dur.ctx, r.c.saver, cp.ParentID)
		}
		return r.dur.w.put(cp, len(cp.Next) == 0 || cp.Interrupt != nil)
	}
	ctx := r.dur.ctx
	if ctx == nil { // a runner that did not pick its durability: sync
		ctx = context.WithoutCancel(r.ctx)
	}
	return r.c.saver.Put(ctx, cp)
}

// settle finishes the run's writing once the run returned. With exit
// durability, a run that failed, was cancelled or stopped after steps it
// did not write (a subgraph's run also one that asked) now writes the
// last of them; with async durability it
// waits for the writes behind the run. A write that fails fails the run;
// the result then names the last checkpoint written.
func (r *runner[S]) settle(res *Result[S], err error) (*Result[S], error) {
	var werr error
	last := ""
	if r.head != nil {
		last = r.head.ID
	}
	switch {
	case r.dur.exit && err != nil && r.unsaved != "":
		cur, asked := r.state, r.rc.ask.asked
		r.state, r.rc.ask.asked = r.dur.state, r.dur.asked
		werr = r.save(checkpoint.SourceStep, r.unsaved, r.dur.next, func(cp *checkpoint.Checkpoint) {
			// The fan-out branches that finished in the node that
			// failed (or asked) go with it.
			cp.Step, cp.Done = r.dur.step, r.rc.kept.all()
		})
		r.state, r.rc.ask.asked = cur, asked
		r.unsaved = ""
		if r.head != nil {
			last = r.head.ID
		}
	case r.dur.w != nil:
		var told bool
		last, told, werr = r.dur.w.close()
		if told {
			werr = nil // the run failed with it already
		} else if werr != nil {
			werr = fmt.Errorf("graph %s: thread %s: %w", r.c.name, r.rc.thread, werr)
		}
	}
	if res != nil {
		res.Checkpoint = last
	}
	if werr == nil {
		return res, err
	}
	if res != nil {
		res.Status = ""
	}
	if err == nil {
		return res, werr
	}
	return res, fmt.Errorf("%w (and: %w)", err, werr)
}

// writer writes a run's checkpoints, in order, on a goroutine of its own.
type writer struct {
	saver checkpoint.Saver
	ctx   context.Context
	queue chan *checkpoint.Checkpoint
	done  chan struct{}

	mu      sync.Mutex
	written *sync.Cond // signalled when pending drops to 0
	pending int        // queued and not written
	err     error      // the first write that failed; the rest are dropped
	told    bool       // err was returned to the run
	last    string     // the last checkpoint written
}

// startWriter starts a writer whose writes follow checkpoint head.
func startWriter(ctx context.Context, saver checkpoint.Saver, head string) *writer {
	w := &writer{saver: saver, ctx: ctx, queue: make(chan *checkpoint.Checkpoint, AsyncBehind), done: make(chan struct{}), last: head}
	w.written = sync.NewCond(&w.mu)
	go w.loop()
	return w
}

func (w *writer) loop() {
	defer close(w.done)
	for cp := range w.queue {
		w.mu.Lock()
		failed := w.err != nil
		w.mu.Unlock()
		var err error
		if !failed {
			if err = w.saver.Put(w.ctx, cp); err != nil {
				err = fmt.Errorf("write step %d (checkpoint %s) behind the run: %w", cp.Step, cp.ID, err)
			}
		}
		w.mu.Lock()
		if err != nil {
			w.err = err
		} else if !failed {
			w.last = cp.ID
		}
		if w.pending--; w.pending == 0 {
			w.written.Broadcast()
		}
		w.mu.Unlock()
	}
}

// put queues cp; with wait, it returns once cp is written. It returns the
// error of a write that failed before.
func (w *writer) put(cp *checkpoint.Checkpoint, wait bool) error {
	w.mu.Lock()
	if w.err != nil {
		w.told = true
		defer w.mu.Unlock()
		return w.err
	}
	w.pending++
	w.mu.Unlock()
	w.queue <- cp
	if !wait {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.pending > 0 {
		w.written.Wait()
	}
	if w.err != nil {
		w.told = true
	}
	return w.err
}

// close waits for the queued writes and ends the writer. It returns the
// last checkpoint written, whether put returned the error already, and
// the error of the write that failed.
func (w *writer) close() (last string, told bool, err error) {
	close(w.queue)
	<-w.done
	return w.last, w.told, w.err
}
