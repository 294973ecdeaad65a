package server

import (
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/loomkit/loom/graph"
)

// TestThreadHasOneJob: a thread's record names the job that works its
// runs. A run submitted while a job works the thread inserts no other;
// a job that is not the thread's (one River rescued after the thread
// got a new job, say) leaves its runs alone; the thread's job takes
// them, and leaves the thread when none is left, so the next run
// inserts a new job.
func TestThreadHasOneJob(t *testing.T) {
	s, j, u := startPostgresJobs(t)
	ctx := t.Context()
	th, err := s.newThread(ctx, "one", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	named := func() (job int64) {
		t.Helper()
		if err := conn.QueryRow(ctx, `SELECT job FROM loom_threads WHERE id = $1`, th.ID).Scan(&job); err != nil {
			t.Fatal(err)
		}
		return job
	}
	jobs := func() (n int) {
		t.Helper()
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE args->>'thread' = $1`, th.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	status := func(r *run) (st string) {
		t.Helper()
		if err := conn.QueryRow(ctx, `SELECT status FROM loom_runs WHERE id = $1`, r.id).Scan(&st); err != nil {
			t.Fatal(err)
		}
		return st
	}

	runOn(t, s, th.ID)
	if got, n := named(), jobs(); got != 0 || n != 1 {
		t.Fatalf("after a run: the thread names job %d and has %d jobs, want 0 and 1", got, n)
	}

	// Another job works the thread (one this test plays): a new run
	// inserts none.
	const theirs, stale = 1 << 40, 1<<40 + 1
	if _, err := conn.Exec(ctx, `UPDATE loom_threads SET job = $2 WHERE id = $1`, th.ID, int64(theirs)); err != nil {
		t.Fatal(err)
	}
	r := s.newRun(th.ID, "nothing", "", strategyEnqueue, nil, graph.JSONInput{Update: json.RawMessage(`{}`)})
	if err := s.exec.submit(ctx, r); err != nil {
		t.Fatal(err)
	}
	if n := jobs(); n != 1 {
		t.Errorf("a run on a thread that a job works inserted a job: %d jobs", n)
	}
	w := &threadWorker{j: j}
	work := func(id int64) error {
		return w.Work(ctx, &river.Job[threadJob]{JobRow: &rivertype.JobRow{ID: id, Attempt: 1}, Args: threadJob{Thread: th.ID}})
	}
	if err := work(stale); err != nil {
		t.Fatalf("a job that is not the thread's: %v", err)
	}
	if st, got := status(r), named(); st != runPending || got != theirs {
		t.Fatalf("a job that is not the thread's left the run %s and the thread to job %d, want %s and %d", st, got, runPending, int64(theirs))
	}
	if err := work(theirs); err != nil {
		t.Fatalf("the thread's job: %v", err)
	}
	if st, got := status(r), named(); st != runSuccess || got != 0 {
		t.Errorf("after the thread's job: run %s, the thread names job %d; want %s and 0", st, got, runSuccess)
	}

	runOn(t, s, th.ID)
	if n := jobs(); n != 2 {
		t.Errorf("a run on a thread no job works: %d jobs, want a second", n)
	}
}
