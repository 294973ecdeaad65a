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
	"github.com/loomkit/loom/memory"
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
	// config is the agent's configuration for the run (see RunConfig);
	// nil for none.
	config json.RawMessage
	// webhook, when set, is where the run's outcome is POSTed when it
	// ends (see webhook.go).
	webhook string
	// assistant is the assistant a key created that the run was started
	// with; "" for the agent's own.
	assistant string
	// user is whom the bearer token that started the run names (see
	// Identity); nil for an API key.
	user *User
	// recovered marks a run read back from the database when the server
	// started: it may have begun in the process that stopped.
	recovered bool
	// locked marks a run whose submitter holds its thread's acceptance
	// lock already (see local.lockIdle); answered, when set, is the
	// thread's head read under that lock with no run on the thread, on
	// which the question it answers is checked (see checkPending).
	locked   bool
	answered *checkpoint.Checkpoint

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
	s.exec.prepare(r)
	return r
}

func (r *run) record() *RunRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := &RunRecord{ID: r.id, Thread: r.thread, Agent: r.agent, Assistant: r.assistant, Status: r.status, Strategy: r.strategy,
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

// checkPending returns graph.ErrNoInterrupt when r answers a question
// that the thread no longer asks; else the sequence number of the head
// that asks it. On SQLite call it when no run holds the thread. It reads
// the head, unless r.answered holds it already.
func (s *Server) checkPending(ctx context.Context, r *run) (int64, error) {
	if r.input.Resume == nil || r.input.Interrupt == "" {
		return 0, nil
	}
	head := r.answered
	if head == nil {
		var err error
		if head, err = s.head(ctx, r.thread); err != nil {
			return 0, err
		}
	}
	if head == nil || head.Interrupt == nil || head.Interrupt.ID != r.input.Interrupt {
		return 0, fmt.Errorf("resume thread %s: interrupt %s was answered meanwhile: %w", publicID(r.thread), r.input.Interrupt, graph.ErrNoInterrupt)
	}
	return head.Seq, nil
}

// spec is what it takes to execute r again, after a restart or on
// another replica: it is stored with r's record.
func (r *run) spec() jobSpec {
	return jobSpec{Input: r.input, Owner: r.owner, From: r.from, Rollback: r.rollbackID, Temp: r.temp, Modes: r.modes, Config: r.config, Webhook: r.webhook, User: r.user, Assistant: r.assistant}
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
		in = graph.JSONInput{Run: r.id, Durability: r.input.Durability}
	} else if err := s.prepare(r); err != nil {
		return failed(err), false, 0, err
	} else if a := s.agents[r.agent]; a.Budgets != nil && in.Update != nil {
		in.Budgets = a.Budgets(r.config) // the bounds its configuration sets
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
	ctx = withRunConfig(ctx, r.config)                    // and how it is configured
	ctx = memory.With(ctx, s.items.For(r.owner))          // and its key's long-term store
	ctx = withUser(ctx, r.user)                           // and the user of a bearer token
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
	if (threadStatus == StatusIdle || threadStatus == StatusError) && s.waitsOnQuestion(r, end) {
		// A thread whose last run failed or stopped but that waits on an
		// earlier question is still interrupted.
		threadStatus = StatusInterrupted
	}
	return end, runStatus, threadStatus
}

// waitsOnQuestion reports whether r's thread waits on a question now that
// r ended with end. A run that ran to its end carries its thread's head's
// question (nil for none) as the runtime left the head, so only the end of
// a run that failed or stopped reads the head.
func (s *Server) waitsOnQuestion(r *run, end event) bool {
	if end.Kind == graph.KindRunEnd && end.Data != nil {
		return end.Interrupt != nil
	}
	cp, err := s.saver.Get(context.WithoutCancel(r.ctx), r.thread, "")
	return err == nil && cp.Interrupt != nil
}

// refused names the error code of a run that the runtime refused before
// it wrote anything ("" for any other error).
func refused(err error) string {
	switch {
	case errors.Is(err, graph.ErrInvalidAnswer):
		return "invalid_answer"
	case errors.Is(err, graph.ErrNoInterrupt):
		return "no_interrupt"
	case errors.Is(err, graph.ErrVersion):
		return "graph_version"
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

// HoldThread gives the caller thread id for a turn of code outside the
// server's runs, such as an agent's own endpoints mounted with
// HandleAPI, so that such turns and the thread's runs never run at once,
// whichever entry point they come through: it fails with an error
// wrapping ErrBusy (409) while a run holds the thread, and until release
// is called, runs submitted for the thread wait (enqueue) or are refused
// (reject) as they are behind any run. Call release once, when the turn
// is over.
func (s *Server) HoldThread(ctx context.Context, id string) (release func(), err error) {
	return s.exec.hold(ctx, threadKey(Caller(ctx), id), id)
}
