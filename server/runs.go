package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
)

// Multitask strategies: what a run does when its thread is busy.
const (
	strategyReject    = "reject"    // refuse the new run (409)
	strategyEnqueue   = "enqueue"   // run it after the runs before it
	strategyInterrupt = "interrupt" // cancel the running run, then run it
	strategyRollback  = "rollback"  // cancel the running run, undo its steps, then run it
)

// Run statuses, as the LangGraph API names them.
const (
	runPending     = "pending"
	runRunning     = "running"
	runSuccess     = "success"
	runError       = "error"
	runInterrupted = "interrupted"
)

// Why a run's context was cancelled.
var (
	errCancelled = errors.New("run cancelled")
	errShutdown  = errors.New("server shutting down")
)

// run is one run of an agent on a thread. It runs in a goroutine owned by
// the server, not by the request that made it: a client that goes away
// neither stops nor corrupts it.
type run struct {
	id, thread, agent, owner string
	strategy                 string
	metadata                 json.RawMessage
	created                  time.Time
	input                    graph.JSONInput
	// from, when set, is a checkpoint of the thread to go back to before
	// running (time travel).
	from string
	// rollback, when set, is a run whose checkpoints are undone first:
	// the running run that a run with multitask_strategy rollback
	// cancelled (rollbackID on the job queue).
	rollback   *run
	rollbackID string
	// temp marks a run on a thread of its own, deleted when the run ends.
	temp bool
	// modes are the stream modes the run was asked for (LangGraph API).
	modes []string
	// recovered marks a run read back from the database when the server
	// started: it may have begun in the process that stopped.
	recovered bool

	ctx    context.Context
	cancel context.CancelCauseFunc
	stop   atomic.Bool // stop at the next step boundary
	// b holds the events of a run this process executes in its own
	// goroutine; feed is where readers read them (b, or the events table
	// for runs on the job queue).
	b    *broadcast
	feed feed
	done chan struct{} // closed when end is set; nil for runs on the job queue

	mu     sync.Mutex
	status string
	end    event // the terminal event, once done
}

func (s *Server) newRun(thread, agent, owner, strategy string, meta json.RawMessage, in graph.JSONInput) *run {
	id := checkpoint.NewID()
	in.Run = id
	r := &run{
		id: id, thread: thread, agent: agent, owner: owner, strategy: strategy,
		metadata: meta, created: time.Now().UTC(), input: in, status: runPending,
	}
	if s.jobs != nil {
		r.feed = s.jobs.feed(id)
		return r
	}
	r.ctx, r.cancel = context.WithCancelCause(context.WithoutCancel(s.baseCtx))
	r.b, r.done = newBroadcast(s.opts.Replay), make(chan struct{})
	r.feed = r.b
	return r
}

func (r *run) record() *RunRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := &RunRecord{ID: r.id, Thread: r.thread, Agent: r.agent, Status: r.status, Strategy: r.strategy,
		Metadata: r.metadata, Created: r.created, Updated: r.created}
	if r.status != runPending && r.status != runRunning {
		rec.Error, rec.Updated = r.end.Err, r.end.Time
	}
	return rec
}

func (r *run) setStatus(st string) {
	r.mu.Lock()
	r.status = st
	r.mu.Unlock()
}

// result waits for the run's end (or ctx) and returns its terminal event.
func (s *Server) result(ctx context.Context, r *run) (event, error) {
	if f, ok := r.feed.(interface {
		end(context.Context) (event, error)
	}); ok {
		return f.end(ctx)
	}
	if r.done == nil {
		var end event
		err := s.follow(ctx, r.feed, 0, func(e *event) error {
			if e.terminal() {
				end = *e
			}
			return nil
		}, nil, nil)
		return end, err
	}
	select {
	case <-r.done:
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.end, nil
	case <-ctx.Done():
		return event{}, ctx.Err()
	}
}

// lane holds a busy thread's runs: the one running and those queued.
// Idle threads have no lane, so they cost no memory.
type lane struct {
	cur   *run
	queue []*run
}

// submit accepts r: it records the run, in the commit that accepts it,
// and starts it, or queues it behind its thread's running run as its
// strategy says. It returns ErrBusy for strategy reject on a busy thread,
// and graph.ErrNoInterrupt for a resume whose question is answered or
// being answered already. Once submit returned nil the run is on disk: a
// crash does not lose it (see recover).
func (s *Server) submit(ctx context.Context, r *run) error {
	if s.jobs != nil {
		return s.jobs.submit(ctx, r)
	}
	// Runs on one thread are accepted one at a time, so the checks below
	// and the record agree: a resume sees the head that the runs before it
	// left, or their lane.
	defer s.threadLocks.lock(r.thread)()
	s.mu.Lock()
	l, closing := s.lanes[r.thread], s.closing
	var answering bool
	if l != nil {
		answering = l.answers(r.input.Interrupt)
	}
	s.mu.Unlock()
	switch {
	case closing:
		return ErrClosing
	case l != nil && r.strategy == strategyReject:
		return fmt.Errorf("run on thread %s: %w (multitask_strategy reject; use enqueue, interrupt or rollback)", publicID(r.thread), ErrBusy)
	case answering:
		return fmt.Errorf("resume thread %s: interrupt %s is being answered by another run: %w", publicID(r.thread), r.input.Interrupt, graph.ErrNoInterrupt)
	case l == nil:
		if _, err := s.checkPending(ctx, r); err != nil {
			return err
		}
	}
	if err := s.records.acceptRun(ctx, r.record(), r.spec()); err != nil {
		return err
	}
	s.enqueue(r)
	return nil
}

// checkPending returns graph.ErrNoInterrupt when r answers a question
// that the thread no longer asks; else the sequence number of the head
// that asks it. On SQLite call it when no run holds the thread.
func (s *Server) checkPending(ctx context.Context, r *run) (int64, error) {
	if r.input.Resume == nil || r.input.Interrupt == "" {
		return 0, nil
	}
	head, err := s.head(ctx, r.thread)
	if err != nil {
		return 0, err
	}
	if head == nil || head.Interrupt == nil || head.Interrupt.ID != r.input.Interrupt {
		return 0, fmt.Errorf("resume thread %s: interrupt %s was answered meanwhile: %w", publicID(r.thread), r.input.Interrupt, graph.ErrNoInterrupt)
	}
	return head.Seq, nil
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

// spec is what it takes to execute r again, after a restart or on
// another replica: it is stored with r's record.
func (r *run) spec() jobSpec {
	return jobSpec{Input: r.input, Owner: r.owner, From: r.from, Rollback: r.rollbackID, Temp: r.temp, Modes: r.modes}
}

// enqueue starts a recorded run r, or queues it behind its thread's
// running run; strategies interrupt and rollback cancel what runs there.
func (s *Server) enqueue(r *run) {
	var cancelled []*run
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		s.finishUnstarted(r, ErrClosing.Error())
		return
	}
	l := s.lanes[r.thread]
	if l == nil {
		s.lanes[r.thread] = &lane{cur: r}
		s.runs[r.id] = r
		s.startLocked(r)
		s.mu.Unlock()
		return
	}
	if r.strategy == strategyInterrupt || r.strategy == strategyRollback {
		cancelled, l.queue = l.queue, nil
		for _, q := range cancelled {
			delete(s.runs, q.id)
		}
		l.cur.cancel(errCancelled)
		if r.strategy == strategyRollback {
			r.rollback = l.cur
		}
	}
	l.queue = append(l.queue, r)
	s.runs[r.id] = r
	s.mu.Unlock()
	for _, q := range cancelled {
		s.finishUnstarted(q, "cancelled by a newer run on the thread (multitask_strategy "+r.strategy+")")
	}
}

func (s *Server) startLocked(r *run) {
	s.wg.Add(1)
	go s.execute(r)
}

// lookupRun returns the active (running or queued) run id of this
// process (SQLite mode).
func (s *Server) lookupRun(id string) *run {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[id]
}

// activeRun returns the thread's running run, or nil.
func (s *Server) activeRun(ctx context.Context, thread string) (*run, error) {
	if s.jobs != nil {
		return s.jobs.current(ctx, thread)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.lanes[thread]; l != nil && l.cur.feed != nil { // not a turn (HoldThread)
		return l.cur, nil
	}
	return nil, nil
}

// busy reports whether a run of this process holds the thread (SQLite
// mode; on the job queue a busy thread's stored status says so).
func (s *Server) busy(thread string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lanes[thread] != nil
}

// cancelRun cancels r: a queued run is dropped, a running one stops
// (its node's context is cancelled; finished steps stay checkpointed).
func (s *Server) cancelRun(ctx context.Context, r *run) error {
	if s.jobs != nil {
		return s.jobs.cancel(ctx, r.thread, r.id)
	}
	s.mu.Lock()
	if l := s.lanes[r.thread]; l != nil && l.cur != r {
		for i, q := range l.queue {
			if q == r {
				l.queue = append(l.queue[:i:i], l.queue[i+1:]...)
				delete(s.runs, r.id)
				s.mu.Unlock()
				s.finishUnstarted(r, "cancelled before it started")
				return nil
			}
		}
	}
	s.mu.Unlock()
	r.cancel(errCancelled)
	return nil
}

// execute runs r in this process and hands its thread to the next queued
// run.
func (s *Server) execute(r *run) {
	defer s.wg.Done()
	r.setStatus(runRunning)
	began := time.Now()
	s.metrics.runStarted(r.agent)
	tr := s.startTrace(r)
	var end event
	var stopped bool
	var runErr error
	var steps int
	if head, err := s.startPoint(r); err != nil {
		end, runErr = failed(err), err
	} else {
		end, stopped, steps, runErr = s.runFrom(r, head, tr, r.b.publish, func(e *event) bool {
			return r.stop.Load() && e.Kind != graph.KindInterrupt
		})
	}
	end, runStatus, threadStatus := s.settle(r, end, runErr, stopped)
	s.metrics.runEnded(r.agent, runStatus, end.ErrCode, time.Since(began))
	tr.finish(runStatus, end.Err, steps)
	s.finish(r, end, runStatus, threadStatus)
}

// startPoint returns the head of r's thread when r may have begun before
// (see runFrom): only runs recovered after a restart can have, so only
// they read it, after recording that they run again (see recoverRuns).
func (s *Server) startPoint(r *run) (*checkpoint.Checkpoint, error) {
	if !r.recovered {
		return nil, nil
	}
	head, err := s.head(context.WithoutCancel(r.ctx), r.thread)
	if err != nil {
		return nil, fmt.Errorf("resume run %s: %w", r.id, err)
	}
	if err := s.records.recordRecovery(context.WithoutCancel(r.ctx), r.id, headID(head)); err != nil {
		return nil, fmt.Errorf("resume run %s: %w", r.id, err)
	}
	return head, nil
}

// runFrom runs r from where it stands, on SQLite and on the job queue: a
// run that began before (its thread's head carries its id: its process
// or replica stopped) continues from its last checkpoint instead of
// applying its input again, or ends at once when it had asked its
// question; any other run does what it asks first (prepare) and applies
// its input. See drive for the rest.
func (s *Server) runFrom(r *run, head *checkpoint.Checkpoint, tr *runTrace, publish func(event), stop func(*event) bool) (end event, stopped bool, steps int, runErr error) {
	continuing := head != nil && head.Meta.Run == r.id
	if continuing && head.Interrupt != nil {
		return event{Kind: graph.KindRunEnd, Status: graph.StatusInterrupted, Data: head.State, Interrupt: head.Interrupt, Checkpoint: head.ID, Time: time.Now()}, false, 0, nil
	}
	in := r.input
	if continuing {
		in = graph.JSONInput{Run: r.id}
	} else if err := s.prepare(r); err != nil {
		return failed(err), false, 0, err
	}
	return s.drive(r, in, continuing, tr, publish, stop)
}

// failed is the terminal event of a run that failed with err.
func failed(err error) event {
	return event{Kind: graph.KindError, Err: Redact(err.Error()), ErrCode: "run_failed", Time: time.Now()}
}

// drive runs r's graph with input in and hands its events to publish,
// until the run ends, or until stop says to stop before an event: the
// runtime then stops at the step boundary, checkpointed. continuing
// leaves out the run-start event (the run started before, elsewhere). It
// returns the terminal event and the error behind it, whether it stopped,
// and how many steps it took.
func (s *Server) drive(r *run, in graph.JSONInput, continuing bool, tr *runTrace, publish func(event), stop func(*event) bool) (end event, stopped bool, steps int, runErr error) {
	a := s.agents[r.agent]
	ctx := context.WithValue(r.ctx, callerKey{}, r.owner) // the graph's nodes see who runs it
	for e, err := range a.runner.StreamJSON(ctx, r.thread, in) {
		tr.observe(e)
		if e.Kind == graph.KindNodeEnd {
			steps++
		}
		if continuing && e.Kind == graph.KindRunStart {
			continue
		}
		ev := newEvent(e)
		s.metrics.observe(r.agent, &ev)
		if ev.terminal() {
			end, runErr = ev, err
			continue
		}
		if stop(&ev) {
			return event{}, true, steps, nil
		}
		publish(ev)
	}
	return end, false, steps, runErr
}

// settle says how r ended, from its terminal event (zero when it
// stopped) and the error behind it: the event to send, the run's status
// and the thread's.
func (s *Server) settle(r *run, end event, runErr error, stopped bool) (event, string, string) {
	runStatus, threadStatus := runSuccess, StatusIdle
	switch {
	case stopped:
		end = event{Kind: graph.KindError, ErrCode: "stopped", Time: time.Now(),
			Err: "the server is shutting down: the run stopped after its last finished step, which is checkpointed; start a run with no input to continue it"}
		runStatus = runInterrupted
	case end.Kind == graph.KindRunEnd:
		if end.Status == graph.StatusInterrupted {
			runStatus, threadStatus = runInterrupted, StatusInterrupted
		}
	case end.Kind == graph.KindError && errors.Is(context.Cause(r.ctx), errCancelled):
		end.ErrCode, runStatus = "cancelled", runInterrupted
	case end.Kind == graph.KindError && errors.Is(context.Cause(r.ctx), errShutdown):
		end.ErrCode, runStatus = "stopped", runInterrupted
	case end.Kind == graph.KindError && refused(runErr) != "":
		// An answer that came too late or does not fit: nothing was
		// written, so the thread stays as it was, its question pending.
		end.ErrCode, runStatus, threadStatus = refused(runErr), runError, StatusIdle
	case end.Kind == graph.KindError:
		if end.ErrCode == "" {
			end.ErrCode = "run_failed"
		}
		runStatus, threadStatus = runError, StatusError
	default:
		end = event{Kind: graph.KindError, ErrCode: "run_failed", Err: "the run ended without a result", Time: time.Now()}
		runStatus, threadStatus = runError, StatusError
	}
	if end.Time.IsZero() {
		end.Time = time.Now()
	}
	if threadStatus == StatusIdle || threadStatus == StatusError {
		// A thread whose last run failed or stopped but that waits on an
		// earlier question is still interrupted.
		if cp, err := s.saver.Get(context.WithoutCancel(r.ctx), r.thread, ""); err == nil && cp.Interrupt != nil {
			threadStatus = StatusInterrupted
		}
	}
	return end, runStatus, threadStatus
}

// refused names the error code of a run that the runtime refused before
// it wrote anything ("" for any other error).
func refused(err error) string {
	switch {
	case errors.Is(err, graph.ErrInvalidAnswer):
		return "invalid_answer"
	case errors.Is(err, graph.ErrNoInterrupt):
		return "no_interrupt"
	}
	return ""
}

// prepare does what r asks before the graph runs: undo a cancelled run
// (rollback) or go back to an older checkpoint (time travel).
func (s *Server) prepare(r *run) error {
	ctx := context.WithoutCancel(r.ctx)
	if old := r.rollback; old != nil {
		<-old.done
		r.rollbackID = old.id
	}
	if r.rollbackID != "" {
		if err := s.undoRun(ctx, r.thread, r.rollbackID); err != nil {
			return err
		}
	}
	if r.from != "" {
		if _, err := checkpoint.Undo(ctx, s.saver, r.thread, r.from); err != nil {
			return fmt.Errorf("go back to checkpoint %s: %w", r.from, err)
		}
	}
	return nil
}

// undoRun undoes the checkpoints that run id wrote on thread (it must be
// over): the thread's head goes back to the checkpoint before them.
func (s *Server) undoRun(ctx context.Context, thread, id string) error {
	gr := id // the runtime records the server's run id in checkpoints
	hist, err := s.saver.List(ctx, thread, 0)
	if err != nil {
		return fmt.Errorf("roll back run %s: %w", id, err)
	}
	parent, found := "", false
	for _, cp := range hist { // newest first
		if cp.Meta.Run != gr {
			if found {
				break
			}
			continue
		}
		parent, found = cp.ParentID, true
	}
	switch {
	case !found:
		return nil
	case parent == "":
		err = s.saver.DeleteThread(ctx, thread)
	default:
		_, err = checkpoint.Undo(ctx, s.saver, thread, parent)
	}
	if err != nil {
		return fmt.Errorf("roll back run %s: %w", id, err)
	}
	return nil
}

// finish records r's end, tells its readers, and starts the thread's next
// queued run.
func (s *Server) finish(r *run, end event, runStatus, threadStatus string) {
	r.mu.Lock()
	r.status, r.end = runStatus, end
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.baseCtx), 10*time.Second)
	defer cancel()
	if err := s.records.finishRun(ctx, r.record(), threadStatus); err != nil {
		s.log.Error("record run", "run", r.id, "thread", r.thread, "err", err)
	}
	// The thread is free before anyone hears of the end: a client that
	// reads the thread once its run ended finds it idle.
	s.release(r)
	r.b.publish(end)
	close(r.done)
	r.cancel(nil)
	if r.temp {
		if err := s.removeThread(ctx, r.thread); err != nil {
			s.log.Error("delete temporary thread", "thread", r.thread, "err", err)
		}
	}
	s.log.Debug("run ended", "run", r.id, "thread", r.thread, "agent", r.agent, "status", runStatus, "err", end.Err)
}

// release hands r's thread to its next queued run, or frees it.
func (s *Server) release(r *run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.runs, r.id)
	l := s.lanes[r.thread]
	if l == nil || l.cur != r {
		return
	}
	if len(l.queue) == 0 || s.closing {
		delete(s.lanes, r.thread)
		for _, q := range l.queue {
			delete(s.runs, q.id)
			go s.finishUnstarted(q, ErrClosing.Error())
		}
		return
	}
	l.cur, l.queue = l.queue[0], l.queue[1:]
	s.startLocked(l.cur)
}

// finishUnstarted ends a queued run that never ran, as cancelled.
func (s *Server) finishUnstarted(r *run, why string) {
	s.endUnstarted(r, runInterrupted, "cancelled", why, "")
}

// endUnstarted ends r, which never ran, with runStatus and an error event
// of code and why, and sets its thread's status ("" leaves it).
func (s *Server) endUnstarted(r *run, runStatus, code, why, threadStatus string) {
	end := event{Kind: graph.KindError, ErrCode: code, Err: why, Time: time.Now()}
	r.mu.Lock()
	r.status, r.end = runStatus, end
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.baseCtx), 10*time.Second)
	defer cancel()
	if err := s.records.finishRun(ctx, r.record(), threadStatus); err != nil {
		s.log.Error("record run", "run", r.id, "thread", r.thread, "err", err)
	}
	r.b.publish(end)
	close(r.done)
	r.cancel(nil)
}

// drain stops taking runs and lets the running ones stop at their next
// step boundary; after grace it cancels those still going.
func (s *Server) drain(grace time.Duration) {
	s.mu.Lock()
	s.closing = true
	var running, queued []*run
	for _, l := range s.lanes {
		running = append(running, l.cur)
		queued = append(queued, l.queue...)
		l.queue = nil
	}
	for _, q := range queued {
		delete(s.runs, q.id)
	}
	s.mu.Unlock()
	for _, q := range queued {
		s.finishUnstarted(q, ErrClosing.Error())
	}
	for _, r := range running {
		r.stop.Store(true)
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-time.After(grace):
	}
	s.log.Warn("runs still going after the shutdown grace period; cancelling them", "grace", grace, "runs", len(running))
	for _, r := range running {
		r.cancel(errShutdown)
	}
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		s.log.Error("runs did not stop after cancel; exiting anyway")
	}
}

// HoldThread gives the caller thread id for a turn of code outside the
// server's runs, such as an agent's own endpoints mounted with
// HandleAPI, so that such turns and the thread's runs never run at once,
// whichever entry point they come through: it fails with an error
// wrapping ErrBusy (409) while a run holds the thread, and until release
// is called, runs submitted for the thread wait (enqueue) or are refused
// (reject) as they are behind any run. Call release once, when the turn
// is over.
func (s *Server) HoldThread(ctx context.Context, id string) (release func(), err error) {
	public := id
	id = threadKey(Caller(ctx), id)
	if s.jobs != nil {
		return s.jobs.hold(ctx, id)
	}
	defer s.threadLocks.lock(id)()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil, ErrClosing
	}
	if s.lanes[id] != nil {
		return nil, fmt.Errorf("thread %s: %w (a run is going on it)", public, ErrBusy)
	}
	// The turn stands in the thread's lane as its running run: a run
	// with strategy rollback waits for its done, and undoes nothing of it.
	turn := &run{id: "turn:" + checkpoint.NewID(), thread: id, status: runRunning, done: make(chan struct{})}
	turn.ctx, turn.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	s.lanes[id] = &lane{cur: turn}
	var once sync.Once
	return func() {
		once.Do(func() {
			turn.cancel(nil)
			close(turn.done)
			s.release(turn)
		})
	}, nil
}
