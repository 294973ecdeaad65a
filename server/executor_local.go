package server

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
)

// local executes runs in goroutines of this process (SQLite): a busy
// thread's runs wait in its lane, in memory, and their events go to a
// broadcast that readers follow.
type local struct {
	s *Server

	mu      sync.Mutex
	lanes   map[string]*lane // busy threads
	runs    map[string]*run  // running and queued runs
	closing bool
	wg      sync.WaitGroup // executing runs

	// threadLocks serialises the acceptance of runs on each thread.
	threadLocks keyedLocks
}

func newLocal(s *Server) *local {
	return &local{s: s, lanes: map[string]*lane{}, runs: map[string]*run{}}
}

// lane holds a busy thread's runs: the one running and those queued.
// Idle threads have no lane, so they cost no memory.
type lane struct {
	cur   *run
	queue []*run
}

// answers reports whether a run of the lane answers interrupt id.
func (l *lane) answers(id string) bool {
	if id == "" {
		return false
	}
	for _, q := range append([]*run{l.cur}, l.queue...) {
		if q.input.Interrupt == id {
			return true
		}
	}
	return false
}

// prepare implements executor.
func (x *local) prepare(r *run) {
	r.ctx, r.cancel = context.WithCancelCause(context.WithoutCancel(x.s.baseCtx))
	r.b, r.done = newBroadcast(x.s.opts.Replay), make(chan struct{})
	r.feed = r.b
}

// submit implements executor.
func (x *local) submit(ctx context.Context, r *run) error {
	// Runs on one thread are accepted one at a time, so the checks below
	// and the record agree: a resume sees the head that the runs before it
	// left, or their lane. A resume's submitter holds the lock already
	// (see lockIdle).
	if !r.locked {
		defer x.threadLocks.lock(r.thread)()
	}
	x.mu.Lock()
	l, closing := x.lanes[r.thread], x.closing
	var answering bool
	if l != nil {
		answering = l.answers(r.input.Interrupt)
	}
	x.mu.Unlock()
	switch {
	case closing:
		return ErrClosing
	case l != nil && r.strategy == strategyReject:
		return fmt.Errorf("run on thread %s: %w (multitask_strategy reject; use enqueue, interrupt or rollback)", publicID(r.thread), ErrBusy)
	case answering:
		return fmt.Errorf("resume thread %s: interrupt %s is being answered by another run: %w", publicID(r.thread), r.input.Interrupt, graph.ErrNoInterrupt)
	case l == nil:
		if _, err := x.s.checkPending(ctx, r); err != nil {
			return err
		}
	}
	r.answered = nil // read by checkPending only
	if err := x.s.records.acceptRun(ctx, r.record(), r.spec()); err != nil {
		return err
	}
	x.enqueue(r)
	return nil
}

// lockIdle takes thread's acceptance lock, which submit takes otherwise,
// and reports whether no run holds the thread: then none can until the
// lock is let go of, so a head read meanwhile is the one submit would
// read (a state update, which refuses a busy thread and takes no lock,
// may come between as it may after submit; the runtime refuses an answer
// to a question no longer pending either way). Submit a run with locked
// set before calling unlock.
func (x *local) lockIdle(thread string) (unlock func(), idle bool) {
	unlock = x.threadLocks.lock(thread)
	x.mu.Lock()
	idle = x.lanes[thread] == nil
	x.mu.Unlock()
	return unlock, idle
}

// enqueue starts a recorded run r, or queues it behind its thread's
// running run; strategies interrupt and rollback cancel what runs there.
func (x *local) enqueue(r *run) {
	var cancelled []*run
	x.mu.Lock()
	if x.closing {
		x.mu.Unlock()
		x.finishUnstarted(r, ErrClosing.Error())
		return
	}
	l := x.lanes[r.thread]
	if l == nil {
		x.lanes[r.thread] = &lane{cur: r}
		x.runs[r.id] = r
		x.startLocked(r)
		x.mu.Unlock()
		return
	}
	if r.strategy == strategyInterrupt || r.strategy == strategyRollback {
		cancelled, l.queue = l.queue, nil
		for _, q := range cancelled {
			delete(x.runs, q.id)
		}
		l.cur.cancel(errCancelled)
		if r.strategy == strategyRollback {
			r.rollback = l.cur
		}
	}
	l.queue = append(l.queue, r)
	x.runs[r.id] = r
	x.mu.Unlock()
	for _, q := range cancelled {
		x.finishUnstarted(q, "cancelled by a newer run on the thread (multitask_strategy "+r.strategy+")")
	}
}

func (x *local) startLocked(r *run) {
	x.wg.Add(1)
	go x.execute(r)
}

// current implements executor.
func (x *local) current(_ context.Context, thread string) (*run, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if l := x.lanes[thread]; l != nil && l.cur.feed != nil { // not a turn (HoldThread)
		return l.cur, nil
	}
	return nil, nil
}

// find implements executor: an active run is in memory, one that is
// over in the records.
func (x *local) find(ctx context.Context, thread, id string) (*run, *RunRecord, error) {
	x.mu.Lock()
	r := x.runs[id]
	x.mu.Unlock()
	if r != nil && r.thread == thread {
		return r, r.record(), nil
	}
	rec, err := x.s.records.run(ctx, thread, id)
	return nil, rec, err
}

// kept implements executor: a run's events are kept only while it runs.
func (x *local) kept(context.Context, *RunRecord) (*run, error) { return nil, nil }

// held implements executor.
func (x *local) held(thread string) []*run {
	x.mu.Lock()
	defer x.mu.Unlock()
	l := x.lanes[thread]
	if l == nil {
		return nil
	}
	out := append(append([]*run(nil), l.queue...), l.cur)
	slices.Reverse(out)
	return out
}

// busyThreads implements executor: busy lives in the run lanes, not in
// the threads' records.
func (x *local) busyThreads() ([]string, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	ids := make([]string, 0, len(x.lanes))
	for id := range x.lanes {
		ids = append(ids, id)
	}
	return ids, true
}

// usage implements executor, from the run lanes.
func (x *local) usage(_ context.Context, owner, thread string) (usage, error) {
	var u usage
	x.mu.Lock()
	defer x.mu.Unlock()
	for id, l := range x.lanes {
		if l.cur.owner != owner {
			continue
		}
		u.running++
		u.queued += len(l.queue)
		if id == thread {
			u.busy, u.waiting = true, len(l.queue)
		}
	}
	return u, nil
}

// cancel implements executor.
func (x *local) cancel(_ context.Context, r *run) error {
	x.mu.Lock()
	if l := x.lanes[r.thread]; l != nil && l.cur != r {
		for i, q := range l.queue {
			if q == r {
				l.queue = append(l.queue[:i:i], l.queue[i+1:]...)
				delete(x.runs, r.id)
				x.mu.Unlock()
				x.finishUnstarted(r, "cancelled before it started")
				return nil
			}
		}
	}
	x.mu.Unlock()
	r.cancel(errCancelled)
	return nil
}

// execute runs r in this process and hands its thread to the next queued
// run.
func (x *local) execute(r *run) {
	defer x.wg.Done()
	s := x.s
	r.setStatus(runRunning)
	ex := execution{began: time.Now()}
	s.metrics.runStarted(r.agent)
	ex.trace = s.startTrace(r)
	if head, err := x.startPoint(r); err != nil {
		ex.end, ex.err = failed(err), err
	} else {
		ex.end, ex.stopped, ex.steps, ex.err = s.runFrom(r, head, ex.trace, r.b.publish, func(e *event) bool {
			return r.stop.Load() && e.Kind != graph.KindInterrupt
		})
	}
	_ = s.ended(r, ex, func(ctx context.Context, end event, runStatus, threadStatus string) error {
		x.record(ctx, r, end, runStatus, threadStatus, true)
		return nil
	})
}

// startPoint returns the head of r's thread when r may have begun before
// (see runFrom): only runs recovered after a restart can have, so only
// they read it, after recording that they run again (see recoverRuns).
func (x *local) startPoint(r *run) (*checkpoint.Checkpoint, error) {
	if !r.recovered {
		return nil, nil
	}
	head, err := x.s.head(context.WithoutCancel(r.ctx), r.thread)
	if err != nil {
		return nil, fmt.Errorf("resume run %s: %w", r.id, err)
	}
	if err := x.s.records.recordRecovery(context.WithoutCancel(r.ctx), r.id, headID(head)); err != nil {
		return nil, fmt.Errorf("resume run %s: %w", r.id, err)
	}
	return head, nil
}

// record writes down how r ended, with its terminal event end, frees its
// thread for the next queued run when it ran (ran), and tells its
// readers: the thread is free before anyone hears of the end, so a
// client that reads the thread once its run ended finds it idle.
// threadStatus "" leaves the thread's status as it is.
func (x *local) record(ctx context.Context, r *run, end event, runStatus, threadStatus string, ran bool) {
	r.mu.Lock()
	r.status, r.end = runStatus, end
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := x.s.records.finishRun(ctx, r.record(), threadStatus); err != nil {
		x.s.log.Error("record run", "run", r.id, "thread", r.thread, "err", err)
	}
	if ran {
		x.release(r)
	}
	r.b.publish(end)
	close(r.done)
	r.cancel(nil)
}

// release hands r's thread to its next queued run, or frees it.
func (x *local) release(r *run) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.runs, r.id)
	l := x.lanes[r.thread]
	if l == nil || l.cur != r {
		return
	}
	if len(l.queue) == 0 || x.closing {
		delete(x.lanes, r.thread)
		for _, q := range l.queue {
			delete(x.runs, q.id)
			go x.finishUnstarted(q, ErrClosing.Error())
		}
		return
	}
	l.cur, l.queue = l.queue[0], l.queue[1:]
	x.startLocked(l.cur)
}

// finishUnstarted ends a queued run that never ran, as cancelled.
func (x *local) finishUnstarted(r *run, why string) {
	x.endUnstarted(r, runInterrupted, "cancelled", why, "")
}

// endUnstarted ends r, which never ran, with runStatus and an error event
// of code and why, and sets its thread's status ("" leaves it).
func (x *local) endUnstarted(r *run, runStatus, code, why, threadStatus string) {
	end := event{Kind: graph.KindError, ErrCode: code, Err: why, Time: time.Now()}
	x.record(context.WithoutCancel(x.s.baseCtx), r, end, runStatus, threadStatus, false)
}

// drain implements executor.
func (x *local) drain(grace time.Duration) {
	x.mu.Lock()
	x.closing = true
	var running, queued []*run
	for _, l := range x.lanes {
		running = append(running, l.cur)
		queued = append(queued, l.queue...)
		l.queue = nil
	}
	for _, q := range queued {
		delete(x.runs, q.id)
	}
	x.mu.Unlock()
	for _, q := range queued {
		x.finishUnstarted(q, ErrClosing.Error())
	}
	for _, r := range running {
		r.stop.Store(true)
	}
	done := make(chan struct{})
	go func() { x.wg.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-time.After(grace):
	}
	x.s.log.Warn("runs still going after the shutdown grace period; cancelling them", "grace", grace, "runs", len(running))
	for _, r := range running {
		r.cancel(errShutdown)
	}
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		x.s.log.Error("runs did not stop after cancel; exiting anyway")
	}
}

// close implements executor: runs going on when the process exits are
// taken up again by the next one (see recoverRuns).
func (x *local) close() error { return nil }

// hold implements executor: the turn stands in the thread's lane as its
// running run.
func (x *local) hold(ctx context.Context, key, public string) (release func(), err error) {
	defer x.threadLocks.lock(key)()
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closing {
		return nil, ErrClosing
	}
	if x.lanes[key] != nil {
		return nil, fmt.Errorf("thread %s: %w (a run is going on it)", public, ErrBusy)
	}
	// A run with strategy rollback waits for the turn's done, and undoes
	// nothing of it.
	turn := &run{id: "turn:" + checkpoint.NewID(), thread: key, status: runRunning, done: make(chan struct{})}
	turn.ctx, turn.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	x.lanes[key] = &lane{cur: turn}
	var once sync.Once
	return func() {
		once.Do(func() {
			turn.cancel(nil)
			close(turn.done)
			x.release(turn)
		})
	}, nil
}
