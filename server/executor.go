package server

import (
	"context"
	"time"

	"github.com/loomkit/loom/store"
)

// executor executes the server's runs. New picks one for the database:
//
//   - local (executor_local.go) on SQLite: runs go in goroutines of this
//     process, a busy thread's runs wait in its lane in memory, readers
//     read events from a broadcast, and runs left unfinished by a process
//     that stopped are taken up again when the next one starts.
//   - jobs (jobs.go, work.go) on Postgres: runs are River jobs that any
//     replica works, and events go through a table and LISTEN/NOTIFY.
//
// Both record runs in the same tables, run them with runFrom, and end
// them with Server.ended; the rest of the server calls only this.
type executor interface {
	// prepare readies a new run r before it is submitted: its context
	// and where its events are read.
	prepare(r *run)
	// submit accepts r: it records the run, in the commit that accepts
	// it, and starts it, or queues it behind its thread's running run as
	// its strategy says. It returns ErrBusy for strategy reject on a busy
	// thread, graph.ErrNoInterrupt for a resume whose question is
	// answered or being answered already, and ErrClosing during a
	// shutdown. Once submit returned nil the run is on disk: a crash does
	// not lose it.
	submit(ctx context.Context, r *run) error
	// cancel cancels r: a queued run ends at once, a running one stops
	// (its node's context is cancelled; finished steps stay checkpointed).
	cancel(ctx context.Context, r *run) error
	// current returns the thread's running run, or nil.
	current(ctx context.Context, thread string) (*run, error)
	// find returns run id of thread: active (a *run, and its record) or
	// over (its record only).
	find(ctx context.Context, thread, id string) (*run, *RunRecord, error)
	// kept returns a run that is over whose events can still be read
	// (rec is its record), or nil.
	kept(ctx context.Context, rec *RunRecord) (*run, error)
	// held returns the runs of thread that this process holds in memory,
	// whose records may be behind, newest first (a thread that has any is
	// busy). The job queue holds none: its records are up to date.
	held(thread string) []*run
	// busyThreads returns the threads that runs of this process hold,
	// and whether it keeps that in memory rather than in the threads'
	// records (when not, the records' status says which are busy).
	busyThreads() (ids []string, inMemory bool)
	// usage reads owner's runs, and thread's, for the quotas.
	usage(ctx context.Context, owner, thread string) (usage, error)
	// hold holds thread (key; public is its id as the caller names it)
	// for a turn outside the server's runs (see Server.HoldThread).
	hold(ctx context.Context, key, public string) (release func(), err error)
	// drain stops taking runs and lets running ones stop at their next
	// step boundary; after grace it cancels those still going.
	drain(grace time.Duration)
	// close drains, when drain was not called, and lets go of what the
	// executor holds.
	close() error
}

// startExecutor starts the executor for the server's database: the job
// queue on Postgres, else runs in this process, with the runs that a
// process which stopped left unfinished taken up again.
func startExecutor(ctx context.Context, s *Server) (executor, error) {
	if s.db.Dialect() == store.Postgres {
		return startJobs(ctx, s)
	}
	l := newLocal(s)
	if err := l.recoverRuns(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// busy reports whether a run holds the thread beyond what its record
// says (see executor.held).
func (s *Server) busy(thread string) bool { return len(s.exec.held(thread)) > 0 }

// execution is how a run's execution went, for Server.ended.
type execution struct {
	end     event // the terminal event (zero when the run stopped)
	err     error // the error behind end
	stopped bool  // the run stopped at a step boundary: a shutdown
	steps   int
	began   time.Time
	trace   *runTrace
}

// ended ends r, which ran, on either executor: it settles how it ended
// (see settle), counts and traces that, has record write it down (and
// tell its readers), deletes a temporary thread and logs. It returns
// record's error, after which nothing else is done: the run is not over
// (the job queue tries again).
func (s *Server) ended(r *run, x execution, record func(ctx context.Context, end event, runStatus, threadStatus string) error) error {
	end, runStatus, threadStatus := s.settle(r, x.end, x.err, x.stopped)
	s.metrics.runEnded(r.agent, runStatus, end.ErrCode, time.Since(x.began))
	x.trace.finish(runStatus, end.Err, x.steps)
	ctx := context.WithoutCancel(r.ctx)
	if err := record(ctx, end, runStatus, threadStatus); err != nil {
		return err
	}
	if r.webhook != "" {
		s.queueWebhook(ctx, r, end, runStatus)
	}
	if r.temp {
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := s.removeThread(tctx, r.thread); err != nil {
			s.log.Error("delete temporary thread", "thread", r.thread, "err", err)
		}
	}
	s.log.Debug("run ended", "run", r.id, "thread", r.thread, "agent", r.agent, "status", runStatus, "err", end.Err)
	return nil
}

// setClosing marks the server as shutting down, for the health checks.
func (s *Server) setClosing() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
}
