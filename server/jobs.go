package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/store"
)

// This file runs runs on Postgres, as jobs in River, a job queue that
// lives in the same database:
//
//   - A run request writes the run's record (with its input) and, when no
//     job works its thread, inserts one, in one transaction. A thread has
//     at most one job at a time, named in its record (loom_threads.job):
//     it works the thread's runs oldest first on whichever replica
//     fetched it, so a thread's runs never run at once, on any replica,
//     and keep their order. A request for a thread that a job works only
//     adds the run. The job leaves the thread, in the transaction that
//     finds no run left under the thread's lock, and then ends; River
//     marks such jobs completed in batches.
//   - A replica works a thread for a lease, then hands the job back to
//     the queue at the next step boundary (a snooze), so no attempt of a
//     job runs long. When a replica dies, its jobs' leases run out and
//     River's rescuer gives them to other replicas, which go on from the
//     last checkpoint: the runtime's re-run contract (a step that was
//     running runs again; graph.StepKey makes its effects idempotent).
//     A run whose thread's head already carries its run id started
//     before, so it continues rather than applying its input twice.
//   - A run's events go to loom_run_events, numbered per run, and then a
//     NOTIFY names the run; a client on any replica reads the table after
//     its last event id and waits for the next notification. The table
//     gives replay after a reconnect with no gap and no repeat; NOTIFY
//     only says "look again", so its 8000-byte limit never matters, and
//     as it is sent after the rows committed it never comes before them.
//     Cancelling a run is a flag on its record and a notification too.
//
// Redis pub/sub could carry the events as well, but it forgets what it
// sent, so the events would need a table anyway for replay, and a second
// service to run and watch; LISTEN/NOTIFY is transactional with that
// table and needs nothing beyond the database the replicas share.

const (
	// riverInsertTopic is the topic of River's insert notifications, on
	// the channel "SCHEMA.river_insert", which wake its fetchers.
	riverInsertTopic = "river_insert"

	queueName      = "loom"
	eventRetention = time.Hour // events of ended runs are kept this long for late readers
	eventBatch     = 512       // events read at once

	// fetchCooldown is how often at most a replica fetches jobs, and
	// how often at most its inserts wake the replicas' fetchers with a
	// NOTIFY. River's default, 100 ms, made a run wait about 50 ms for
	// its job to be picked up, on a server that was otherwise idle.
	fetchCooldown = 2 * time.Millisecond
)

// threadJob is the River job that works a thread's runs.
type threadJob struct {
	Thread string `json:"thread"`
}

// Kind implements river.JobArgs.
func (threadJob) Kind() string { return "loom_thread" }

// InsertOpts implements river.JobArgsWithInsertOpts: practically
// unlimited attempts (an attempt fails only when the database or the
// replica does; a run's own failure ends the run, not the job). A thread
// has one job at a time through its record, not River's unique jobs (see
// submit).
func (threadJob) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queueName, MaxAttempts: 10_000}
}

// quietInserts is River's driver for inserts that send no notification
// in their transaction: Postgres serialises the commits of notifying
// transactions, WAL flush included, so the runs submitted at once would
// each wait for the others' flushes. Submit wakes the replicas' fetchers
// after its commit instead (jobs.wakeFetchers); a notification that is
// lost costs a fetch poll.
type quietInserts struct{ *riverpgxv5.Driver }

// SupportsListenNotify implements riverdriver.Driver: inserts notify
// nothing.
func (quietInserts) SupportsListenNotify() bool { return false }

// SupportsListener implements riverdriver.Driver: the client of inserts
// listens to nothing.
func (quietInserts) SupportsListener() bool { return false }

// pruneJob deletes the events of runs that ended over eventRetention ago.
type pruneJob struct{}

// Kind implements river.JobArgs.
func (pruneJob) Kind() string { return "loom_prune_events" }

// jobSpec is what a replica needs to execute a run, kept with its record.
type jobSpec struct {
	Input    graph.JSONInput `json:"input"`
	Owner    string          `json:"owner,omitempty"`
	From     string          `json:"from,omitempty"`
	Rollback string          `json:"rollback,omitempty"`
	Temp     bool            `json:"temp,omitempty"`
	Modes    []string        `json:"modes,omitempty"`
	Config   json.RawMessage `json:"config,omitempty"`
	Webhook  string          `json:"webhook,omitempty"`
	User     *User           `json:"user,omitempty"`
	// Assistant is the assistant a key created that the run was
	// started with ("" for the agent's own).
	Assistant string `json:"assistant,omitempty"`
}

// jobs executes runs as River jobs.
type jobs struct {
	s      *Server
	pool   *pgxpool.Pool
	client *river.Client[pgx.Tx]
	// inserts inserts the jobs of submitted runs without River's
	// notification in their transaction (see quietInserts).
	inserts *river.Client[pgx.Tx]
	channel string // the LISTEN/NOTIFY channel of this schema
	// fetchers is River's insert channel, whose notifications wake the
	// replicas' fetchers; woken is when submit last sent one (Unix ns).
	fetchers string
	woken    atomic.Int64
	hub      *hub
	notes    *notifier

	stopHub  context.CancelFunc
	hubDone  chan struct{}
	stopOnce sync.Once
	draining atomic.Bool

	mu       sync.Mutex
	running  map[string]*run   // runs this replica executes now
	attempts map[int64]attempt // the jobs it works, for the heartbeat
	// unclaimed are the runs asked to cancel that this replica did not
	// execute then, with when: one it was about to register takes its
	// cancel from here (see execute). Kept a minute.
	unclaimed map[string]time.Time
}

// currentSchema returns the schema the pool's connections create tables
// in (the first of search_path), for River and the notification channel.
func currentSchema(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	var schema *string
	if err := pool.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return "", fmt.Errorf("read current schema: %w", err)
	}
	if schema == nil {
		return "", errors.New("read current schema: no schema of search_path exists")
	}
	return *schema, nil
}

// migrateQueue applies River's migrations that the database lacks, and
// returns the version of River's tables. Replicas starting at once apply
// each migration once.
func migrateQueue(ctx context.Context, db *store.DB) (int, error) {
	pool := db.Pool()
	schema, err := currentSchema(ctx, pool)
	if err != nil {
		return 0, fmt.Errorf("migrate job queue: %w", err)
	}
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: schema, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return 0, fmt.Errorf("migrate job queue: %w", err)
	}
	// River's migrations each take a transaction of their own (one adds an
	// enum value that a later statement uses), so the lock that keeps
	// replicas from migrating at once is a session lock on a connection
	// held meanwhile.
	h := fnv.New64a()
	h.Write([]byte("loom migrate river"))
	version := 0
	err = pool.AcquireFunc(ctx, func(c *pgxpool.Conn) error {
		if _, err := c.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(h.Sum64())); err != nil {
			return err
		}
		defer c.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(h.Sum64()))
		if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
			return err
		}
		vs, err := m.ExistingVersions(ctx)
		if len(vs) > 0 {
			version = vs[len(vs)-1].Version
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("migrate job queue on %s: %w", db, err)
	}
	return version, nil
}

// startJobs migrates the job queue, listens for notifications and starts
// working jobs.
func startJobs(ctx context.Context, s *Server) (*jobs, error) {
	if _, err := migrateQueue(ctx, s.db); err != nil {
		return nil, err
	}
	pool := s.db.Pool()
	schema, err := currentSchema(ctx, pool)
	if err != nil {
		return nil, err
	}
	j := &jobs{s: s, pool: pool, channel: "loom_runs_" + schema, running: map[string]*run{}, attempts: map[int64]attempt{}}
	j.notes = startNotifier(pool, j.channel, s.log)
	j.fetchers = schema + "." + riverInsertTopic
	j.hub = &hub{waiters: map[string]chan struct{}{}, enders: map[string]*ending{}, cancel: j.cancelLocal}
	hubCtx, stopHub := context.WithCancel(context.Background())
	j.stopHub, j.hubDone = stopHub, make(chan struct{})
	ready := make(chan struct{})
	go func() {
		defer close(j.hubDone)
		var beats sync.WaitGroup
		beats.Go(func() { j.heartbeat(hubCtx, pool.Config().ConnConfig) })
		j.hub.listen(hubCtx, pool.Config().ConnConfig, j.channel, s.log, ready)
		beats.Wait()
	}()
	select {
	case <-ready:
	case <-ctx.Done():
		stopHub()
		j.notes.close()
		return nil, fmt.Errorf("listen on %s: %w", j.channel, ctx.Err())
	}

	workers := river.NewWorkers()
	river.AddWorker(workers, &threadWorker{j: j})
	river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, _ *river.Job[pruneJob]) error { return j.prune(ctx) }))
	poll := min(time.Second, max(s.opts.Lease/4, 20*time.Millisecond))
	j.client, err = river.NewClient(riverpgxv5.New(pool), &river.Config{
		Queues:               map[string]river.QueueConfig{queueName: {MaxWorkers: s.opts.Workers}},
		Workers:              workers,
		JobTimeout:           s.opts.RescueAfter, // see threadWorker.Timeout
		RescueStuckJobsAfter: s.opts.RescueAfter,
		RetryPolicy:          retrySoon{},
		FetchCooldown:        min(poll, fetchCooldown),
		FetchPollInterval:    poll,
		Schema:               schema,
		Logger:               slog.New(quiet{s.log.Handler()}),
		PeriodicJobs: []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(10*time.Minute),
			func() (river.JobArgs, *river.InsertOpts) { return pruneJob{}, nil }, nil), tickPeriodic(s, workers)},
	})
	if err == nil {
		j.inserts, err = river.NewClient[pgx.Tx](quietInserts{riverpgxv5.New(pool)}, &river.Config{
			Workers: workers,
			Schema:  schema,
			Logger:  slog.New(quiet{s.log.Handler()}),
		})
	}
	if err == nil {
		err = j.client.Start(context.WithoutCancel(ctx))
	}
	if err != nil {
		stopHub()
		<-j.hubDone
		j.notes.close()
		return nil, fmt.Errorf("start job queue: %w", err)
	}
	return j, nil
}

// drain implements executor: it stops fetching jobs; runs going on hand
// their threads back to the queue at their next step boundary, for other
// replicas to go on with. After grace it cancels what is still going.
func (j *jobs) drain(grace time.Duration) {
	j.stopOnce.Do(func() {
		j.s.setClosing()
		j.draining.Store(true)
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		if err := j.client.Stop(ctx); err != nil {
			j.s.log.Warn("runs still going after the shutdown grace period; cancelling them", "grace", grace, "err", err)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if err := j.client.StopAndCancel(ctx); err != nil {
				j.s.log.Error("job queue did not stop", "err", err)
			}
		}
	})
}

// close implements executor: it drains (at once, when Serve did not)
// and stops listening.
func (j *jobs) close() error {
	j.drain(j.s.opts.Grace)
	j.notes.close()
	j.stopHub()
	<-j.hubDone
	return nil
}

// feed returns where run id's events are read.
func (j *jobs) feed(id string) feed { return &pgFeed{j: j, run: id} }

// ---- submitting and cancelling ----

// lockThread locks the thread's row to the end of tx: submitting,
// finishing and cancelling runs of one thread go one at a time.
func lockThread(ctx context.Context, tx pgx.Tx, thread string) error {
	return scanLock(tx.QueryRow(ctx, lockThreadSQL, thread), thread, new(int64))
}

// unfinishedSQL selects a thread's pending and running runs, oldest first.
const unfinishedSQL = `SELECT ` + runCols + ` FROM loom_runs WHERE thread = $1 AND status IN ('pending', 'running') ORDER BY created, id`

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// unfinished returns a thread's pending and running runs, oldest first.
func unfinished(ctx context.Context, q querier, thread string) ([]*RunRecord, error) {
	rows, err := q.Query(ctx, unfinishedSQL, thread)
	if err != nil {
		return nil, fmt.Errorf("runs of thread %s: %w", thread, err)
	}
	return scanRuns(rows, thread)
}

// scanRuns reads the rows of unfinishedSQL and closes them.
func scanRuns(rows pgx.Rows, thread string) ([]*RunRecord, error) {
	defer rows.Close()
	var out []*RunRecord
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("runs of thread %s: %w", thread, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// submit implements executor: it records r and inserts its thread's job,
// in one transaction; on a busy thread it first does what r's strategy
// says. The transaction takes three round trips: its locks and reads go
// out with its BEGIN, the job's insert on its own (River's), and the
// run's record with its COMMIT, followed in that batch by the
// notification that wakes the replicas' fetchers (see wakeFetchers).
func (j *jobs) submit(ctx context.Context, r *run) error {
	if j.draining.Load() {
		return ErrClosing
	}
	spec := r.spec()
	seq, err := j.s.checkPending(ctx, r)
	if err != nil {
		return err
	}
	// Its end is waited for from now, so that a wait for it need not read
	// before the run can have ended (see pgFeed.end).
	if f, ok := r.feed.(*pgFeed); ok {
		f.armed = j.hub.waitEnd(r.id)
	}
	var notes []string
	err = inBatchTx(ctx, j.pool, func(tx *batchTx) error {
		var busy []*RunRecord
		var answered, moved bool
		var worker int64
		b := &pgx.Batch{}
		b.Queue("BEGIN")
		b.Queue(holdLockSQL, r.thread) // waits for a turn (HoldThread)
		b.Queue(lockThreadSQL, r.thread).QueryRow(func(row pgx.Row) error { return scanLock(row, r.thread, &worker) })
		b.Queue(unfinishedSQL, r.thread).Query(func(rows pgx.Rows) error {
			var err error
			busy, err = scanRuns(rows, r.thread)
			return err
		})
		if r.input.Interrupt != "" {
			b.Queue(answeredSQL, r.thread, r.input.Interrupt).QueryRow(func(row pgx.Row) error { return row.Scan(&answered) })
			b.Queue(movedSQL, r.thread, seq).QueryRow(func(row pgx.Row) error { return row.Scan(&moved) })
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			if errors.Is(err, ErrNotFound) {
				return err
			}
			return fmt.Errorf("run on thread %s: %w", publicID(r.thread), err)
		}
		// A resume whose question another run answers, or answered, is
		// refused: with runs busy, one of them names the same interrupt;
		// without, no run holds the thread, so its head must still be the
		// one, of sequence number seq, on which the question was found
		// pending before the transaction (the head is read outside it: the
		// saver's reads take connections of their own, which submits
		// waiting on the lock could leave none of).
		if refused := (len(busy) > 0 && answered) || (len(busy) == 0 && moved); r.input.Interrupt != "" && refused {
			return errAnswered(r)
		}
		if len(busy) > 0 {
			switch r.strategy {
			case strategyReject:
				return fmt.Errorf("run on thread %s: %w (multitask_strategy reject; use enqueue, interrupt or rollback)", publicID(r.thread), ErrBusy)
			case strategyInterrupt, strategyRollback:
				for _, b := range busy {
					if b.Status == runRunning && r.strategy == strategyRollback {
						spec.Rollback = b.ID
					}
					note, err := j.cancelIn(ctx, tx, b.ID, "cancelled by a newer run on the thread (multitask_strategy "+r.strategy+")")
					if err != nil {
						return err
					}
					notes = append(notes, note)
				}
			}
		}
		job, err := encodeSpec(j.s.records.codec, spec)
		if err != nil {
			return fmt.Errorf("encode run %s: %w", r.id, err)
		}
		// A thread has one job at a time: the one its record names, which
		// takes this run before it leaves the thread (see idleSQL), or,
		// when none works it, a new one.
		if worker == 0 {
			res, err := j.inserts.InsertTx(ctx, tx, threadJob{Thread: r.thread}, nil)
			if err != nil {
				return fmt.Errorf("queue run %s: %w", r.id, err)
			}
			worker = res.Job.ID
		}
		b = &pgx.Batch{}
		b.Queue(`INSERT INTO loom_runs (`+runCols+`, job) VALUES ($1, $2, $3, $4, $5, $6, '', $7, $7, $8)`,
			r.id, r.thread, r.agent, runPending, r.strategy, string(orEmptyObject(r.metadata)), ms(r.created), job)
		b.Queue(`UPDATE loom_threads SET status = $2, agent = $3, updated = $4, job = $5 WHERE id = $1`, r.thread, StatusBusy, r.agent, ms(r.created), worker)
		b.Queue("COMMIT")
		j.wakeFetchers(b)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("record run %s: %w", r.id, err)
		}
		return nil
	})
	if err != nil {
		j.hub.forget(r.id)
		return err
	}
	j.notify(ctx, notes...)
	return nil
}

// wakeFetchers queues in b, after its COMMIT, River's notification that
// a job of the server's queue was inserted, at most once a fetchCooldown
// (as River's inserts do): it runs in a transaction of its own that
// writes nothing, so it waits for no WAL flush, and none waits for it.
// A notification that fails is logged, not the submit's error (the run
// was committed); its job waits for the next fetch poll.
func (j *jobs) wakeFetchers(b *pgx.Batch) {
	now, last := time.Now().UnixNano(), j.woken.Load()
	if now-last < int64(fetchCooldown) || !j.woken.CompareAndSwap(last, now) {
		return
	}
	q := b.Queue(`SELECT pg_notify($1, $2)`, j.fetchers, `{"queue": "`+queueName+`"}`)
	q.Fn = func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			j.s.log.Warn("notify the job fetchers", "channel", j.fetchers, "err", err)
		}
		return nil
	}
}

// lockThreadSQL locks a thread's row (see lockThread), and reads the job
// that works its runs.
const lockThreadSQL = "SELECT job FROM loom_threads WHERE id = $1 FOR UPDATE"

// holdLockSQL takes a thread's turn lock (see holdLock).
const holdLockSQL = `SELECT pg_advisory_xact_lock(hashtextextended($1, 7))`

// answeredSQL says whether a pending or running run of thread $1
// answers interrupt $2.
const answeredSQL = `SELECT EXISTS (SELECT 1 FROM loom_runs WHERE thread = $1 AND status IN ('pending', 'running')
	AND convert_from(job, 'UTF8')::jsonb -> 'input' ->> 'interrupt' = $2)`

// movedSQL says whether thread $1's head is no longer the checkpoint of
// sequence number $2.
const movedSQL = `SELECT coalesce(max(seq), -1) <> $2 FROM loom_checkpoints WHERE thread = $1`

// errAnswered is the error of a run that answers a question another run
// answers, or answered.
func errAnswered(r *run) error {
	return fmt.Errorf("resume thread %s: interrupt %s was answered meanwhile: %w", publicID(r.thread), r.input.Interrupt, graph.ErrNoInterrupt)
}

// scanLock reads the row of lockThreadSQL: the thread's job to worker.
func scanLock(row pgx.Row, thread string, worker *int64) error {
	err := row.Scan(worker)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("thread %s: %w", publicID(thread), ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("lock thread %s: %w", thread, err)
	}
	return nil
}

// holdLock takes thread's turn lock in tx, until tx ends: a transaction
// advisory lock that HoldThread keeps for a turn and every submit takes
// first, so that submits wait for turns. It is not the thread's row lock,
// because the turn itself updates the row.
func holdLock(ctx context.Context, tx pgx.Tx, thread string) error {
	if _, err := tx.Exec(ctx, holdLockSQL, thread); err != nil {
		return fmt.Errorf("hold thread %s: %w", thread, err)
	}
	return nil
}

// hold implements executor: it holds thread's turn lock (holdLock) until
// release, once no run of the thread is pending or running.
func (j *jobs) hold(ctx context.Context, thread, public string) (release func(), err error) {
	tx, err := j.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("hold thread %s: %w", thread, err)
	}
	fail := func(err error) (func(), error) {
		tx.Rollback(context.WithoutCancel(ctx))
		return nil, err
	}
	if err := holdLock(ctx, tx, thread); err != nil {
		return fail(err)
	}
	busy, err := unfinished(ctx, tx, thread)
	if err != nil {
		return fail(err)
	}
	if len(busy) > 0 {
		return fail(fmt.Errorf("thread %s: %w (a run is going on it)", public, ErrBusy))
	}
	var once sync.Once
	return func() { once.Do(func() { tx.Rollback(context.WithoutCancel(ctx)) }) }, nil
}

// cancel implements executor: a pending run ends at once; a running one
// is flagged, and the replica that executes it is told.
func (j *jobs) cancel(ctx context.Context, r *run) error {
	thread, id := r.thread, r.id
	// The thread's status when nothing else runs on it: a question may
	// still wait for an answer.
	st := StatusIdle
	if cp, err := j.s.saver.Get(ctx, thread, ""); err == nil && cp.Interrupt != nil {
		st = StatusInterrupted
	}
	var note string
	err := pgx.BeginFunc(ctx, j.pool, func(tx pgx.Tx) error {
		if err := lockThread(ctx, tx, thread); err != nil {
			return err
		}
		var err error
		if note, err = j.cancelIn(ctx, tx, id, "cancelled before it started"); err != nil {
			return err
		}
		return settleThread(ctx, tx, thread, st, "", time.Now())
	})
	if err != nil {
		return err
	}
	j.notify(ctx, note)
	return nil
}

// notify wakes this replica's waiters for what payloads announce at
// once, and sends the notifications on the server's channel, for the
// other replicas, in the background (see notifier). It is called after
// the transaction that wrote what they announce has committed, never in
// it: Postgres serialises the commits of notifying transactions on one
// lock, WAL flush included, which would make every event write wait for
// every other. A notification that is lost (the database went away) is
// made up for by readers reading again when the listener reconnects, and
// at every heartbeat; one that comes back to this replica through the
// listener wakes its waiters a second time, to read nothing new.
func (j *jobs) notify(_ context.Context, payloads ...string) {
	for _, p := range payloads {
		j.hub.dispatch(p)
	}
	if len(payloads) > 0 {
		j.notes.send(payloads...)
	}
}

// cancelIn, in a transaction that holds the thread's lock, ends run id
// when it has not started, or asks the replica that executes it to stop
// (a flag on the run, which a replica taking the run up later sees too).
// It returns the notification to send once the transaction committed.
func (j *jobs) cancelIn(ctx context.Context, tx pgx.Tx, id, why string) (string, error) {
	now := time.Now()
	tag, err := tx.Exec(ctx, `UPDATE loom_runs SET status = $2, error = $3, updated = $4 WHERE id = $1 AND status = $5`,
		id, runInterrupted, why, ms(now), runPending)
	if err != nil {
		return "", fmt.Errorf("cancel run %s: %w", id, err)
	}
	if tag.RowsAffected() == 1 {
		return "E " + id, j.insertEnd(ctx, tx, id, event{Kind: graph.KindError, ErrCode: "cancelled", Err: why, Time: now})
	}
	if _, err = tx.Exec(ctx, `UPDATE loom_runs SET cancel = $2 WHERE id = $1 AND status = $3`, id, why, runRunning); err != nil {
		return "", fmt.Errorf("cancel run %s: %w", id, err)
	}
	return "c " + id, nil
}

// cancelLocal stops run id if this replica executes it.
// A run it is about to register (marked running, not registered yet)
// finds the cancel kept in unclaimed.
func (j *jobs) cancelLocal(id string) {
	j.mu.Lock()
	r := j.running[id]
	if r == nil {
		now := time.Now()
		for k, at := range j.unclaimed {
			if now.Sub(at) > time.Minute {
				delete(j.unclaimed, k)
			}
		}
		if j.unclaimed == nil {
			j.unclaimed = map[string]time.Time{}
		}
		j.unclaimed[id] = now
	}
	j.mu.Unlock()
	if r != nil {
		r.cancel(errCancelled)
	}
}

// settleThread sets a thread's status after one of its runs ended: busy
// while others are pending or running, else st.
func settleThread(ctx context.Context, tx pgx.Tx, thread, st, errText string, at time.Time) error {
	_, err := tx.Exec(ctx, settleThreadSQL, thread, st, errText, ms(at))
	if err != nil {
		return fmt.Errorf("update thread %s: %w", thread, err)
	}
	return nil
}

// settleThreadSQL sets thread $1's status after one of its runs ended
// (see settleThread).
const settleThreadSQL = `
UPDATE loom_threads SET
	status = CASE WHEN EXISTS (SELECT 1 FROM loom_runs WHERE thread = $1 AND status IN ('pending', 'running')) THEN 'busy' ELSE $2 END,
	error = $3, updated = $4
WHERE id = $1`

// insertEndSQL writes run $1's terminal event $2 after its others, and
// returns its number.
const insertEndSQL = `
INSERT INTO loom_run_events (run_id, seq, terminal, body)
SELECT $1, coalesce(max(seq), 0) + 1, true, $2 FROM loom_run_events WHERE run_id = $1
RETURNING seq`

// insertEnd writes a run's terminal event after its others.
func (j *jobs) insertEnd(ctx context.Context, tx pgx.Tx, id string, end event) error {
	body, err := json.Marshal(end)
	if err != nil {
		return fmt.Errorf("encode end of run %s: %w", id, err)
	}
	_, err = tx.Exec(ctx, insertEndSQL, id, body)
	if err != nil {
		return fmt.Errorf("record end of run %s: %w", id, err)
	}
	return nil
}

// ---- reading ----

// view is a run of the database as the API handlers see it, reading its
// events from the table.
func (j *jobs) view(ctx context.Context, rec *RunRecord) (*run, error) {
	var raw []byte
	if err := j.pool.QueryRow(ctx, `SELECT job FROM loom_runs WHERE id = $1`, rec.ID).Scan(&raw); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("read run %s: %w", rec.ID, err)
	}
	var spec jobSpec
	_ = decodeSpec(j.s.records.codec, raw, &spec) // a run recorded by SQLite mode has none
	return &run{id: rec.ID, thread: rec.Thread, agent: rec.Agent, owner: spec.Owner, strategy: rec.Strategy, metadata: rec.Metadata,
		created: rec.Created, input: spec.Input, from: spec.From, rollbackID: spec.Rollback, temp: spec.Temp, modes: spec.Modes, config: spec.Config, webhook: spec.Webhook, user: spec.User, assistant: spec.Assistant,
		status: rec.Status, feed: j.feed(rec.ID)}, nil
}

// current implements executor: the thread's oldest unfinished run, or
// nil.
func (j *jobs) current(ctx context.Context, thread string) (*run, error) {
	recs, err := unfinished(ctx, j.pool, thread)
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	return j.view(ctx, recs[0])
}

// prepare implements executor: a run's events are read from the events
// table, on any replica; its context is made by the replica that
// executes it.
func (j *jobs) prepare(r *run) { r.feed = j.feed(r.id) }

// find implements executor: the records are up to date on the job queue.
func (j *jobs) find(ctx context.Context, thread, id string) (*run, *RunRecord, error) {
	rec, err := j.s.records.run(ctx, thread, id)
	if err != nil {
		return nil, nil, err
	}
	if rec.Status == runPending || rec.Status == runRunning {
		r, err := j.view(ctx, rec)
		return r, rec, err
	}
	return nil, rec, nil
}

// kept implements executor: the events of a run that is over are kept a
// while (eventRetention), so a client that reconnects after the end
// still gets what it missed.
func (j *jobs) kept(ctx context.Context, rec *RunRecord) (*run, error) { return j.view(ctx, rec) }

// held implements executor: none; the records say all.
func (j *jobs) held(string) []*run { return nil }

// busyThreads implements executor: a busy thread's record says so.
func (j *jobs) busyThreads() ([]string, bool) { return nil, false }

// usage implements executor, from the runs table, where a thread's
// oldest unfinished run is the one it runs and the others wait.
func (j *jobs) usage(ctx context.Context, owner, thread string) (usage, error) {
	var u usage
	var runs int
	err := j.pool.QueryRow(ctx, `SELECT count(DISTINCT r.thread), count(*), count(*) FILTER (WHERE r.thread = $2)
FROM loom_runs r JOIN loom_threads t ON t.id = r.thread
WHERE t.owner = $1 AND r.status IN ('pending', 'running')`, owner, thread).Scan(&u.running, &runs, &u.waiting)
	if err != nil {
		return u, fmt.Errorf("count runs of the caller: %w", err)
	}
	u.queued = runs - u.running
	u.busy = u.waiting > 0
	u.waiting = max(u.waiting-1, 0)
	return u, nil
}

// pgFeed reads a run's events from loom_run_events.
type pgFeed struct {
	j   *jobs
	run string
	// armed, set before the run was submitted, is done when its end is
	// notified: the first wait for the end waits for it before it reads,
	// as the run cannot have ended before (waited says it did).
	armed  *ending
	waited atomic.Bool
}

// closedChan is a channel that is always ready.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// since implements feed.
func (f *pgFeed) since(ctx context.Context, after int) ([]event, <-chan struct{}, bool, error) {
	wake := f.j.hub.wait(f.run) // before reading: a notification after the read wakes us
	rows, err := f.j.pool.Query(ctx, `SELECT seq, terminal, body FROM loom_run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
		f.run, after, eventBatch)
	if err != nil {
		return nil, nil, false, fmt.Errorf("read events of run %s: %w", f.run, err)
	}
	defer rows.Close()
	var out []event
	closed := false
	for rows.Next() {
		var seq int
		var body []byte
		if err := rows.Scan(&seq, &closed, &body); err != nil {
			return nil, nil, false, fmt.Errorf("read events of run %s: %w", f.run, err)
		}
		var e event
		if err := json.Unmarshal(body, &e); err != nil {
			return nil, nil, false, fmt.Errorf("read event %d of run %s: %w", seq, f.run, err)
		}
		e.Seq = seq
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, false, fmt.Errorf("read events of run %s: %w", f.run, err)
	}
	switch {
	case closed:
		f.j.hub.forget(f.run)
	case len(out) == eventBatch:
		wake = closedChan // more are there already
	}
	return out, wake, closed, nil
}

// handed returns the terminal event that this replica handed to w when
// it ended the run (see hub.ended); ok is false when it did not.
func (f *pgFeed) handed(w *ending) (e event, ok bool) {
	if w.end == nil {
		return event{}, false
	}
	f.j.hub.forget(f.run)
	return *w.end, true
}

// end waits for the run's terminal event and returns it; a wait reads
// the table once per NOTIFY of an end, not once per batch of events, and
// not at all when this replica ended the run (it hands the event over).
func (f *pgFeed) end(ctx context.Context) (event, error) {
	var down time.Time
	if f.armed != nil && !f.waited.Swap(true) {
		select {
		case <-f.armed.done:
			if e, ok := f.handed(f.armed); ok {
				return e, nil
			}
		case <-time.After(outage / 2): // in case the notification was lost
		case <-ctx.Done():
			return event{}, ctx.Err()
		}
	}
	for {
		wake := f.j.hub.waitEnd(f.run)
		var seq int
		var body []byte
		err := f.j.pool.QueryRow(ctx, `SELECT seq, body FROM loom_run_events WHERE run_id = $1 AND terminal`, f.run).Scan(&seq, &body)
		var retry <-chan time.Time
		switch {
		case err == nil:
			f.j.hub.forget(f.run)
			var e event
			if err := json.Unmarshal(body, &e); err != nil {
				return event{}, fmt.Errorf("read end of run %s: %w", f.run, err)
			}
			e.Seq = seq
			return e, nil
		case errors.Is(err, pgx.ErrNoRows):
			down = time.Time{}
			retry = time.After(outage / 2) // in case a notification was lost
		case ctx.Err() != nil:
			return event{}, ctx.Err()
		case !store.IsUnavailable(err) || (!down.IsZero() && time.Since(down) > outage):
			return event{}, fmt.Errorf("read end of run %s: %w", f.run, err)
		default:
			if down.IsZero() {
				down = time.Now()
			}
			retry = time.After(250 * time.Millisecond)
		}
		select {
		case <-wake.done:
			if e, ok := f.handed(wake); ok {
				return e, nil
			}
		case <-retry:
		case <-ctx.Done():
			return event{}, ctx.Err()
		}
	}
}
