package server

import (
	"maps"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/loomkit/loom/store"
	"github.com/loomkit/loom/store/storetest"
)

// A beat keeps the jobs that still run under this replica's attempts,
// and takes for rescued only those the queue gave back or to another
// attempt: not a job that its attempt here has just completed (the run's
// last transaction does, before the attempt returns), which under load a
// beat used to find and log as "job rescued while this replica worked it".
func TestBeatTellsRescuedFromCompleted(t *testing.T) {
	ctx := t.Context()
	u := storetest.PostgresURL(t)
	db, err := store.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := migrateQueue(ctx, db); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	job := func(state string, attempt int) int64 {
		var id int64
		err := conn.QueryRow(ctx, `INSERT INTO river_job (args, kind, max_attempts, queue, state, attempt, attempted_at, finalized_at)
VALUES ('{}', 'loom_thread', 10, 'loom', $1::river_job_state, $2, now() - interval '1 minute', CASE WHEN $1::text = 'completed' THEN now() END) RETURNING id`, state, attempt).Scan(&id)
		if err != nil {
			t.Fatalf("insert a %s job: %v", state, err)
		}
		return id
	}
	running, completed, retryable, retaken := job("running", 1), job("completed", 1), job("retryable", 1), job("running", 2)
	ids := []int64{running, completed, retryable, retaken}
	numbers := []int32{1, 1, 1, 1} // the attempts this replica works
	alive, err := beat(ctx, conn, ids, numbers)
	if err != nil {
		t.Fatal(err)
	}
	if err := endedHere(ctx, conn, ids, numbers, alive); err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(maps.Keys(alive))
	if want := []int64{running, completed}; !slices.Equal(got, want) {
		t.Errorf("jobs not rescued %v, want %v (running %d, completed %d, retryable %d, retaken %d)", got, want, running, completed, retryable, retaken)
	}
	var beaten bool
	if err := conn.QueryRow(ctx, `SELECT attempted_at > now() - interval '10 seconds' FROM river_job WHERE id = $1`, running).Scan(&beaten); err != nil || !beaten {
		t.Errorf("the running job's attempted_at was not moved on: %v %v", beaten, err)
	}
}
