package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/checkpoint/postgres"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/store"
)

// This file is the worker side of runs on Postgres (see jobs.go): a
// replica working a thread's job.

// threadWorker works a thread's runs, oldest first.
type threadWorker struct {
	river.WorkerDefaults[threadJob]
	j *jobs
}

// Timeout implements river.Worker. River uses it twice: as the deadline
// of an attempt's context, and, with RescueStuckJobsAfter, for how long a
// job must have gone without being attempted before the rescuer takes it
// (a negative timeout would mean never). Work keeps the second and
// drops the first: an attempt ends at the first step boundary after its
// lease, however long its steps take, and beats meanwhile (see heartbeat).
func (w *threadWorker) Timeout(*river.Job[threadJob]) time.Duration { return w.j.s.opts.RescueAfter }

// withoutDeadline returns a context with parent's values that is
// cancelled when parent is, except when parent merely passed its
// deadline.
func withoutDeadline(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	stop := context.AfterFunc(parent, func() {
		if cause := context.Cause(parent); !errors.Is(cause, context.DeadlineExceeded) {
			cancel(cause)
		}
	})
	return ctx, func() { stop(); cancel(nil) }
}

// claimSQL makes job $2 the one that works thread $1's runs, unless
// another is (see jobs.submit): a job that River rescued or retried after
// its thread went idle, and got a new job, finds the thread taken.
const claimSQL = `UPDATE loom_threads SET job = $2 WHERE id = $1 AND job IN (0, $2) RETURNING true`

// takeNextSQL selects thread $1's oldest unfinished run, with its job
// spec, its recoveries (see maxRecoveries) and its cancel flag, and marks
// it running (at $3) when it is pending and of an agent this replica
// serves ($2): started says so. A run it does not start (one that ran
// before, on this replica or another) execute starts. It selects none
// unless job $4 works the thread (claimSQL, before it).
const takeNextSQL = `
WITH next AS (
	SELECT id, status FROM loom_runs WHERE thread = $1 AND status IN ('pending', 'running')
	  AND EXISTS (SELECT 1 FROM loom_threads WHERE id = $1 AND job = $4)
	ORDER BY created, id LIMIT 1 FOR UPDATE
), started AS (
	UPDATE loom_runs r SET status = 'running', updated = $3 FROM next
	WHERE r.id = next.id AND next.status = 'pending' AND r.agent = ANY($2::text[])
	RETURNING r.id
)
SELECT r.id, r.thread, r.agent, r.status, r.strategy, r.metadata, r.error, r.created, r.updated, r.job, r.recoveries, r.recovered_from,
	started.id IS NOT NULL, r.cancel
FROM next JOIN loom_runs r ON r.id = next.id LEFT JOIN started ON true`

// Work implements river.Worker.
func (w *threadWorker) Work(ctx context.Context, job *river.Job[threadJob]) error {
	j := w.j
	ctx, done := withoutDeadline(ctx)
	defer done()
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	defer j.working(job.ID, job.Attempt, stop)()
	lease := time.Now().Add(j.s.opts.Lease)
	served := slices.Sorted(maps.Keys(j.s.agents))
	for {
		var rec RunRecord
		var raw []byte
		var meta string
		var created, updated int64
		var recoveries int
		var recoveredFrom string
		var st start
		var claimed bool
		// The start commits without waiting for its WAL flush: what the
		// run writes after it (checkpoints, events, its end) waits for a
		// flush, which takes the start with it; a database that stops
		// before then loses the start alone, and the run is pending as it
		// was. The batch is one transaction: the claim holds the thread's
		// row until the run is marked.
		b := &pgx.Batch{}
		b.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
		b.Queue(claimSQL, job.Args.Thread, job.ID).QueryRow(func(row pgx.Row) error {
			if err := row.Scan(&claimed); !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			return nil
		})
		b.Queue(takeNextSQL, job.Args.Thread, served, ms(time.Now()), job.ID).QueryRow(func(row pgx.Row) error {
			return row.Scan(&rec.ID, &rec.Thread, &rec.Agent, &rec.Status, &rec.Strategy, &meta, &rec.Error, &created, &updated, &raw, &recoveries, &recoveredFrom,
				&st.started, &st.cancelled)
		})
		err := j.pool.SendBatch(ctx, b).Close()
		if !claimed && (err == nil || errors.Is(err, pgx.ErrNoRows)) {
			return nil // another job works the thread, or it is gone
		}
		if errors.Is(err, pgx.ErrNoRows) {
			done, err := j.complete(ctx, job)
			if err != nil || done {
				return err
			}
			continue // a run came in meanwhile
		}
		if err != nil {
			return fmt.Errorf("next run of thread %s: %w", job.Args.Thread, err)
		}
		rec.Metadata, rec.Created, rec.Updated = json.RawMessage(meta), fromMS(created), fromMS(updated)
		var spec jobSpec
		_ = decodeSpec(j.s.records.codec, raw, &spec)
		if rec.Status == runRunning && rescuedSince(job.Errors, rec.Updated) {
			failed, done, err := j.recovering(ctx, job, &rec, &spec, recoveries, recoveredFrom)
			switch {
			case err != nil:
				return err
			case done:
				return nil
			case failed:
				continue
			}
		}
		handBack, done, err := j.execute(ctx, job, &rec, &spec, lease, st)
		switch {
		case err != nil:
			return err
		case handBack:
			return river.JobSnooze(0)
		case done:
			return nil
		case time.Now().After(lease):
			return river.JobSnooze(0) // more runs wait: another lease
		}
	}
}

// start is how takeNextSQL left a run: started marks it running, from
// pending, with its cancel flag as it was.
type start struct {
	started   bool
	cancelled string
}

// rescuedSince reports whether River's rescuer took the job back from
// an attempt after since, the start of the last attempt that ran the
// run: that attempt's replica died (or stopped beating) while running it.
// An attempt that ends in this code (a run's end, a handed-back thread,
// an error) is no rescue.
func rescuedSince(errs []rivertype.AttemptError, since time.Time) bool {
	for _, e := range errs {
		if e.At.After(since) && strings.Contains(strings.ToLower(e.Error), "rescued") {
			return true
		}
	}
	return false
}

// recovering takes up rec, whose last attempt was rescued (its replica
// died while running it), as recoverRuns does on SQLite: when its thread
// is at the step where the run died maxRecoveries times in a row already,
// the run is failed with the reason (failed; done when its thread has no
// other run, its job completed); else the recovery is recorded, for the
// next time, and the run goes on.
func (j *jobs) recovering(ctx context.Context, job *river.Job[threadJob], rec *RunRecord, spec *jobSpec, recoveries int, recoveredFrom string) (failed, done bool, err error) {
	head, err := j.s.saver.Get(ctx, rec.Thread, "")
	if errors.Is(err, checkpoint.ErrNotFound) {
		head, err = nil, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("recover run %s: %w", rec.ID, err)
	}
	if stuck(recoveries, recoveredFrom, headID(head)) {
		j.s.log.Warn("a run whose replica died while running it is failed, not run again", "run", rec.ID, "thread", rec.Thread, "agent", rec.Agent, "recoveries", recoveries, "why", poisonWhy)
		r := &run{id: rec.ID, thread: rec.Thread, agent: rec.Agent, owner: spec.Owner}
		end := event{Kind: graph.KindError, ErrCode: "run_failed", Err: "the server restarted and could not go on with this run: " + poisonWhy, Time: time.Now()}
		done, err := j.finish(context.WithoutCancel(ctx), job, r, nil, end, runError, StatusError)
		return err == nil, done, err
	}
	err = recordRecovery(ctx, func(ctx context.Context, q string, args ...any) error {
		_, err := j.pool.Exec(ctx, store.Postgres.Rebind(q), args...)
		return err
	}, rec.ID, headID(head))
	return false, false, err
}

// complete leaves job's thread when it has no run left (done), in a
// transaction that holds the thread's lock (see queueIdle); a run
// submitted after it gets a new job. River then marks the job completed,
// with others, once Work has returned.
func (j *jobs) complete(ctx context.Context, job *river.Job[threadJob]) (bool, error) {
	done := false
	err := inBatchTx(ctx, j.pool, func(tx *batchTx) error {
		b := &pgx.Batch{}
		b.Queue("BEGIN")
		b.Queue(lockThreadSQL, job.Args.Thread).QueryRow(func(row pgx.Row) error {
			if err := scanLock(row, job.Args.Thread, new(int64)); !errors.Is(err, ErrNotFound) {
				return err
			}
			return nil
		})
		queueIdle(b, job, &done)
		b.Queue("COMMIT")
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("leave thread %s: %w", job.Args.Thread, err)
		}
		return nil
	})
	return done, err
}

// idleSQL leaves thread $1, which job $2 works, to no job when it has no
// unfinished run. It must follow the thread's lock in its transaction, as
// a statement of its own: it then reads the runs that submits committed
// while it waited for the lock (an UPDATE that waited for the row itself
// rechecks the row, but its subquery reads what it saw before the wait).
const idleSQL = `UPDATE loom_threads SET job = 0 WHERE id = $1 AND job = $2
	AND NOT EXISTS (SELECT 1 FROM loom_runs WHERE thread = $1 AND status IN ('pending', 'running'))`

// queueIdle queues idleSQL for job's thread in b; *done says, once b's
// results are read, whether the job left the thread.
func queueIdle(b *pgx.Batch, job *river.Job[threadJob], done *bool) {
	b.Queue(idleSQL, job.Args.Thread, job.ID).Exec(func(tag pgconn.CommandTag) error {
		*done = tag.RowsAffected() == 1
		return nil
	})
}

// execute runs rec until it ends, or until the lease is over: it then
// returns handBack, to hand the thread back to the queue. done says the
// run ended and the thread has no other, its job marked completed. An
// error means the attempt failed for a reason outside the run (the
// database, a timeout, a shutdown): the job is tried again later, and the
// run goes on from its last checkpoint.
func (j *jobs) execute(ctx context.Context, job *river.Job[threadJob], rec *RunRecord, spec *jobSpec, lease time.Time, st start) (handBack, done bool, err error) {
	s := j.s
	if _, ok := s.agents[rec.Agent]; !ok {
		return false, false, fmt.Errorf("run %s: agent %s is not served by this replica", rec.ID, rec.Agent)
	}
	r := &run{id: rec.ID, thread: rec.Thread, agent: rec.Agent, owner: spec.Owner, strategy: rec.Strategy, metadata: rec.Metadata,
		created: rec.Created, input: spec.Input, from: spec.From, rollbackID: spec.Rollback, temp: spec.Temp, modes: spec.Modes, config: spec.Config, webhook: spec.Webhook, user: spec.User, assistant: spec.Assistant, status: runRunning}
	r.ctx, r.cancel = context.WithCancelCause(ctx)
	defer r.cancel(nil)
	j.mu.Lock()
	j.running[r.id] = r
	_, asked := j.unclaimed[r.id]
	delete(j.unclaimed, r.id)
	j.mu.Unlock()
	defer func() {
		j.mu.Lock()
		delete(j.running, r.id)
		j.mu.Unlock()
	}()

	// Registered first, then marked: a cancel either sees it running and
	// notifies us, or we see its flag here. A run takeNextSQL marked
	// before it was registered has its flag as it was then, and a cancel
	// that came between was kept for it (asked; see cancelLocal). The
	// start commits without waiting for its WAL flush (see Work).
	was, cancelled := runPending, st.cancelled
	if !st.started {
		b := &pgx.Batch{}
		b.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
		b.Queue(`
UPDATE loom_runs r SET status = $2, updated = $3
FROM (SELECT id, status FROM loom_runs WHERE id = $1 FOR UPDATE) old
WHERE r.id = old.id AND old.status IN ('pending', 'running')
RETURNING old.status, r.cancel`, r.id, runRunning, ms(time.Now())).QueryRow(func(row pgx.Row) error { return row.Scan(&was, &cancelled) })
		err = j.pool.SendBatch(ctx, b).Close()
		if errors.Is(err, pgx.ErrNoRows) {
			return false, false, nil // it ended meanwhile: cancelled before it started
		}
		if err != nil {
			return false, false, fmt.Errorf("start run %s: %w", r.id, err)
		}
	}
	if cancelled != "" || asked {
		r.cancel(errCancelled)
	}
	// A run that was running already may have started on a replica that
	// stopped: it goes on from its checkpoints and its events.
	var head *checkpoint.Checkpoint
	seq := 0
	if was == runRunning {
		if head, err = s.saver.Get(ctx, r.thread, ""); errors.Is(err, checkpoint.ErrNotFound) {
			head, err = nil, nil
		}
		if err == nil {
			err = j.pool.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM loom_run_events WHERE run_id = $1`, r.id).Scan(&seq)
		}
		if err != nil {
			return false, false, fmt.Errorf("resume run %s: %w", r.id, err)
		}
	}
	pub := j.publisher(r.id, seq)
	r.ctx = postgres.WithWrites(r.ctx, pub.withCheckpoint) // a step's events commit with its checkpoint
	if head != nil && head.Meta.Run == r.id && head.Meta.Source == checkpoint.SourceStep {
		if err := j.restoreStepEnd(ctx, pub, head); err != nil {
			pub.close()
			return false, false, err
		}
	}

	ex := execution{began: time.Now()}
	s.metrics.runStarted(r.agent)
	ex.trace = s.startTrace(r)
	if r.ctx.Err() != nil {
		ex.end, ex.err = event{Kind: graph.KindError, Err: "the run was cancelled", Time: time.Now()}, context.Cause(r.ctx)
	} else {
		ex.end, ex.stopped, ex.steps, ex.err = s.runFrom(r, head, ex.trace, pub.publish, func(e *event) bool {
			return e.Kind == graph.KindNodeStart && (j.draining.Load() || time.Now().After(lease))
		})
	}
	pub.stop()
	perr := pub.failed()
	// Handed back to the queue, not ended, when the run stopped for a
	// reason outside it: a drain or a lease, a cancelled attempt (a
	// shutdown, or a rescue that gave the job to another attempt), the
	// database away, or a step that lost its checkpoint to another
	// attempt's (a rescue's overlap): the next attempt goes on from the
	// thread's head.
	again := ex.stopped || perr != nil ||
		(ex.end.Kind == graph.KindError && !errors.Is(context.Cause(r.ctx), errCancelled) && (r.ctx.Err() != nil || errors.Is(ex.err, store.ErrUnavailable) || lostStep(ex.err)))
	if again {
		pub.flush() // what is queued, for the attempt that goes on
		s.metrics.attemptEnded(r.agent)
		ex.trace.finish("handed back", "", ex.steps)
		runErr := ex.err
		switch {
		case ex.stopped && perr == nil:
			return true, false, nil
		case perr != nil:
			runErr = perr
		case r.ctx.Err() != nil:
			runErr = context.Cause(r.ctx)
		}
		return false, false, fmt.Errorf("run %s on thread %s: %w", r.id, r.thread, runErr)
	}
	err = s.ended(r, ex, func(ctx context.Context, end event, runStatus, threadStatus string) error {
		var ferr error
		done, ferr = j.finish(ctx, job, r, pub.rest(), end, runStatus, threadStatus)
		return ferr
	})
	return false, done, err
}

// lostStep says whether err is a step's checkpoint refused because
// another attempt wrote the thread's head first, not an answer to a
// question that was answered meanwhile.
func lostStep(err error) bool {
	return errors.Is(err, checkpoint.ErrConflict) && !errors.Is(err, graph.ErrNoInterrupt)
}

// restoreStepEnd publishes the end of the step that wrote head, when the
// replica that ran it died after the checkpoint but before the step's
// events were written: every checkpointed step of a run has its state
// event once, so a client following the run misses no step.
func (j *jobs) restoreStepEnd(ctx context.Context, pub *publisher, head *checkpoint.Checkpoint) error {
	var have bool
	err := j.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM loom_run_events WHERE run_id = $1
		AND convert_from(body, 'UTF8')::jsonb @> jsonb_build_object('kind', 'state', 'checkpoint', $2::text))`, pub.run, head.ID).Scan(&have)
	if err != nil || have {
		return err
	}
	at := time.Now()
	pub.publish(event{Kind: graph.KindNodeEnd, Node: head.Meta.Node, Step: head.Step, Checkpoint: head.ID, Time: at, Duration: head.Meta.Duration})
	pub.publish(event{Kind: graph.KindState, Node: head.Meta.Node, Step: head.Step, Checkpoint: head.ID, Time: at, Data: head.State})
	return nil
}

// finish records how r ended, its events not written yet (rest), its
// terminal event and its thread's status, in one transaction, in which
// the job also leaves the thread when no run of it is left (done; see
// complete). The transaction is one round trip: its BEGIN, writes and
// COMMIT go out in one batch.
func (j *jobs) finish(ctx context.Context, job *river.Job[threadJob], r *run, rest []event, end event, runStatus, threadStatus string) (bool, error) {
	threadErr := ""
	if threadStatus == StatusError {
		threadErr = end.Err
	}
	body, err := json.Marshal(end)
	if err != nil {
		return false, fmt.Errorf("finish run %s: encode its end: %w", r.id, err)
	}
	done := false
	err = inBatchTx(ctx, j.pool, func(tx *batchTx) error {
		b := &pgx.Batch{}
		b.Queue("BEGIN")
		b.Queue(lockThreadSQL, r.thread).QueryRow(func(row pgx.Row) error { return scanLock(row, r.thread, new(int64)) })
		b.Queue(`UPDATE loom_runs SET status = $2, error = $3, updated = $4, cancel = '' WHERE id = $1`,
			r.id, runStatus, end.Err, ms(end.Time))
		if len(rest) > 0 {
			seqs, bodies := encodeEvents(rest)
			b.Queue(insertEventsSQL, r.id, seqs, bodies)
		}
		b.Queue(insertEndSQL, r.id, body).QueryRow(func(row pgx.Row) error { return row.Scan(&end.Seq) })
		b.Queue(settleThreadSQL, r.thread, threadStatus, threadErr, ms(end.Time))
		queueIdle(b, job, &done)
		b.Queue("COMMIT")
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return false, fmt.Errorf("finish run %s: %w", r.id, err)
	}
	j.hub.ended(r.id, end)
	j.notify(ctx, "E "+r.id)
	return done, nil
}

// prune deletes the events of runs that ended over eventRetention ago.
func (j *jobs) prune(ctx context.Context) error {
	_, err := j.pool.Exec(ctx, `
DELETE FROM loom_run_events e
WHERE e.at < now() - $1::interval
  AND NOT EXISTS (SELECT 1 FROM loom_runs r WHERE r.id = e.run_id AND r.status IN ('pending', 'running'))`,
		eventRetention.String())
	if err != nil {
		return fmt.Errorf("prune run events: %w", err)
	}
	return nil
}

// retrySoon is River's retry policy for the server's jobs: an attempt
// fails when the database or a replica does, so the next soon after.
type retrySoon struct{}

// NextRetry implements river.ClientRetryPolicy.
func (retrySoon) NextRetry(job *rivertype.JobRow) time.Time {
	return time.Now().Add(time.Duration(min(job.Attempt, 20)) * 250 * time.Millisecond)
}

// quiet passes on only warnings and errors: River logs its routine work
// at info level.
type quiet struct{ slog.Handler }

func (q quiet) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && q.Handler.Enabled(ctx, l)
}

func (q quiet) WithAttrs(as []slog.Attr) slog.Handler { return quiet{q.Handler.WithAttrs(as)} }

func (q quiet) WithGroup(name string) slog.Handler { return quiet{q.Handler.WithGroup(name)} }
