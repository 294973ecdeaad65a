package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/store/storetest"
)

// nothingAgents registers one agent, "nothing": one node that does
// nothing.
func nothingAgents(t testing.TB) *Registry {
	t.Helper()
	var agents Registry
	g := graph.New[struct{}]("nothing").
		Node("n", func(_ context.Context, s struct{}) (struct{}, error) { return s, nil }).
		Edge(graph.Start, "n").Edge("n", graph.End)
	if err := agents.Register(Agent{Name: "nothing", Build: Compile(g)}); err != nil {
		t.Fatal(err)
	}
	return &agents
}

// startPostgresJobs serves the agent "nothing" with runs as jobs, on a
// schema of its own.
func startPostgresJobs(t *testing.T) (*Server, *jobs, string) {
	t.Helper()
	u := storetest.PostgresURL(t)
	s, err := New(t.Context(), Options{Database: u, Agents: nothingAgents(t), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	j, ok := s.exec.(*jobs)
	if !ok {
		t.Fatalf("runs on Postgres are executed by %T, not as jobs", s.exec)
	}
	return s, j, u
}

// runOn submits a run of agent nothing on thread and waits for its end.
func runOn(t *testing.T, s *Server, thread string) *run {
	t.Helper()
	r := s.newRun(thread, "nothing", "", strategyReject, nil, graph.JSONInput{Update: json.RawMessage(`{}`)})
	if err := s.exec.submit(t.Context(), r); err != nil {
		t.Fatalf("submit a run on %s: %v", thread, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	end, err := s.result(ctx, r)
	if err != nil || end.Kind != graph.KindRunEnd {
		t.Fatalf("run %s on %s ended with %+v, %v", r.id, thread, end, err)
	}
	return r
}

// A run's record and its thread's job are written in one transaction:
// when the record cannot be written (here its id is taken) after the
// job's insert went in, neither is kept, nor is the thread marked busy;
// and the connection that did it goes back to the pool rolled back, for
// the next run, whose job replicas learn of from a notification sent
// after its commit.
func TestSubmitKeepsRunAndJobTogether(t *testing.T) {
	s, j, u := startPostgresJobs(t)
	ctx := t.Context()
	t1, err := s.newThread(ctx, "one", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t2, err := s.newThread(ctx, "two", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	first := runOn(t, s, t1.ID)

	// Counted on the server's own connections: a tracer on a pool of
	// its own, with the server's River clients.
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		t.Fatal(err)
	}
	var trips atomic.Int64
	cfg.ConnConfig.Tracer = tripCounter{&trips}
	cfg.MaxConns = 1 // the run below reuses the connection that failed
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	counted := &jobs{s: s, pool: pool, client: j.client, inserts: j.inserts, channel: j.channel, fetchers: j.fetchers, hub: j.hub, notes: j.notes,
		running: map[string]*run{}, attempts: map[int64]attempt{}}

	dup := s.newRun(t2.ID, "nothing", "", strategyReject, nil, graph.JSONInput{Update: json.RawMessage(`{}`)})
	dup.id = first.id
	if err := counted.submit(ctx, dup); err == nil {
		t.Fatal("a run whose id is taken was accepted")
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var jobsLeft int
	var status string
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE args->>'thread' = $1`, t2.ID).Scan(&jobsLeft); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT status FROM loom_threads WHERE id = $1`, t2.ID).Scan(&status); err != nil {
		t.Fatal(err)
	}
	if jobsLeft != 0 || status != StatusIdle {
		t.Errorf("after a refused run, thread %s has %d jobs and status %s, want none and %s", t2.ID, jobsLeft, status, StatusIdle)
	}

	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{j.fetchers}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	r := s.newRun(t2.ID, "nothing", "", strategyReject, nil, graph.JSONInput{Update: json.RawMessage(`{}`)})
	before := trips.Load()
	if err := counted.submit(ctx, r); err != nil {
		t.Fatalf("submit on the connection a refused run used: %v", err)
	}
	if n := trips.Load() - before; n > 3 {
		t.Errorf("a run's submit took %d round trips, want 3: its locks and reads with BEGIN, the job's insert, its record with COMMIT", n)
	}
	wait, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	n, err := conn.WaitForNotification(wait)
	if err != nil {
		t.Fatalf("no notification of the job's insert on %s: %v", j.fetchers, err)
	}
	if n.Payload != `{"queue": "`+queueName+`"}` {
		t.Errorf("insert notification %q, want one for queue %s", n.Payload, queueName)
	}
	end, err := s.result(wait, r)
	if err != nil || end.Kind != graph.KindRunEnd {
		t.Fatalf("the run after a refused one ended with %+v, %v", end, err)
	}
}

// tripCounter counts the round trips of a connection's queries and
// batches.
type tripCounter struct{ n *atomic.Int64 }

func (c tripCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (tripCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c tripCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (tripCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (tripCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// A batchTx rolls back what it leaves open: a batch that failed after its
// BEGIN, or a caller that gave up between batches, keeps nothing, and the
// connection goes back to the pool idle; a transaction committed in its
// last batch keeps the statements of every batch and of River-style
// single queries in between.
func TestBatchTxRollsBackWhatItLeavesOpen(t *testing.T) {
	ctx := t.Context()
	cfg, err := pgxpool.ParseConfig(storetest.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE kept (x integer PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	var pid uint32
	err = inBatchTx(ctx, pool, func(tx *batchTx) error {
		pid = tx.Conn().PgConn().PID()
		b := &pgx.Batch{}
		b.Queue("BEGIN")
		b.Queue(`INSERT INTO kept VALUES (1)`)
		b.Queue(`INSERT INTO kept VALUES (1)`)
		return tx.SendBatch(ctx, b).Close()
	})
	if err == nil {
		t.Fatal("a batch with a duplicate key did not fail")
	}
	err = inBatchTx(ctx, pool, func(tx *batchTx) error {
		b := &pgx.Batch{}
		b.Queue("BEGIN")
		b.Queue(`INSERT INTO kept VALUES (2)`)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		return ErrBusy // gives up before its COMMIT
	})
	if err != ErrBusy {
		t.Fatalf("inBatchTx returned %v, want the error of its function", err)
	}
	err = inBatchTx(ctx, pool, func(tx *batchTx) error {
		if got := tx.Conn().PgConn().PID(); got != pid {
			t.Errorf("the connection was replaced (backend %d, was %d): its transaction was not rolled back", got, pid)
		}
		b := &pgx.Batch{}
		b.Queue("BEGIN")
		b.Queue(`INSERT INTO kept VALUES (3)`)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO kept VALUES ($1)`, 4); err != nil {
			return err
		}
		b = &pgx.Batch{}
		b.Queue(`INSERT INTO kept VALUES (5)`)
		b.Queue("COMMIT")
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	rows, err := pool.Query(ctx, `SELECT x FROM kept ORDER BY x`)
	if err != nil {
		t.Fatal(err)
	}
	if got, err = pgx.CollectRows(rows, pgx.RowTo[int]); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != 3 || got[1] != 4 || got[2] != 5 {
		t.Errorf("rows kept %v, want [3 4 5]", got)
	}
}
