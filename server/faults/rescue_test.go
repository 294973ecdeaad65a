package faults

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/loomkit/loom/store"
	"github.com/loomkit/loom/store/storetest"
)

// With the default lease and rescue settings, a run whose replica is
// SIGKILLed mid-step goes on on the other replica, from its last
// checkpoint, and ends with the state of an uninterrupted run. How long
// the run stood still is logged (the heartbeat and rescue bound it at
// about RescueAfter, 20 s, plus the rescuer's 30 s period); the test
// asserts only that it went on, never how fast.
func TestDefaultRescue(t *testing.T) {
	gate(t)
	dbURL := storetest.PostgresURL(t)
	c := newCluster(t, 2, "LOOM_DATABASE_URL="+dbURL) // default Lease and RescueAfter
	const ms = 400                                    // fifty steps of 400 ms: 20 s in all
	th, r, steps := startChain(t, c, 7, ms)
	if !until(time.Minute, func() bool { return len(c.busy()) == 1 && steps() >= 3 }) {
		t.Fatal("the run did not start")
	}
	victim := c.busy()[0]
	before := steps()
	c.kill(victim)
	killed := time.Now()
	if !until(3*time.Minute, func() bool { return steps() > before+1 }) {
		t.Fatalf("the run stood still for 3 minutes after its replica was killed at step %d", before)
	}
	t.Logf("killed at step %d; the run went on after %v", before, time.Since(killed).Round(time.Second))
	if !until(3*time.Minute, func() bool {
		_, b, _ := c.call("GET", "/threads/"+th+"/runs/"+r, nil)
		var run struct{ Status string }
		json.Unmarshal(b, &run)
		return run.Status == "success"
	}) {
		t.Fatal("the run did not end")
	}
	if got, w := steps(), want(t, 7, ms).Steps; got != w {
		t.Errorf("steps = %d, want %d", got, w)
	}
	db, err := store.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checkHistory(t, db.Saver(), th, r)
}

// When the queue gives a live replica's job to another attempt — the
// rescuer does when a heartbeat comes later than RescueAfter — the first
// attempt stops at its next beat, a step it loses to the other attempt is
// handed back rather than failing the run, and the run ends once, every
// step applied once. The test does what the rescuer does to the job's
// row, so that it need not stall a heartbeat for RescueAfter.
func TestRescuedAttemptStops(t *testing.T) {
	gate(t)
	dbURL := storetest.PostgresURL(t)
	c := newCluster(t, 2, "LOOM_DATABASE_URL="+dbURL, "LOOM_FAULTS_LEASE=1m", "LOOM_FAULTS_RESCUE=10s")
	db, err := store.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const ms = 200
	th, r, steps := startChain(t, c, 3, ms)
	if !until(time.Minute, func() bool { return steps() >= 3 }) {
		t.Fatal("the run did not start")
	}
	// The rescuer's move: the running job is available again, and the
	// next fetch starts attempt 2 while attempt 1 still runs.
	tag, err := db.Pool().Exec(context.Background(), `UPDATE river_job SET state = 'available', scheduled_at = now() WHERE kind = 'loom_thread' AND state = 'running'`)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("rescue the running job: %v, %d rows", err, tag.RowsAffected())
	}
	var status string
	if !until(2*time.Minute, func() bool {
		_, b, _ := c.call("GET", "/threads/"+th+"/runs/"+r, nil)
		var run struct{ Status string }
		json.Unmarshal(b, &run)
		status = run.Status
		return status != "pending" && status != "running"
	}) || status != "success" {
		t.Fatalf("run %s: %s, want success", r, status)
	}
	var attempts int
	if err := db.Pool().QueryRow(context.Background(), `SELECT max(attempt) FROM river_job WHERE kind = 'loom_thread'`).Scan(&attempts); err != nil || attempts < 2 {
		t.Fatalf("attempts of the job: %d, %v; want the rescue to have started a second", attempts, err)
	}
	if got, w := steps(), want(t, 3, ms).Steps; got != w {
		t.Errorf("steps = %d, want %d", got, w)
	}
	checkHistory(t, db.Saver(), th, r)
}

// startChain starts a run of the chain agent with seed and ms on a new
// thread, and returns the thread, the run and how to read how many steps
// the thread's state has taken.
func startChain(t *testing.T, c *cluster, seed, ms int) (thread, run string, steps func() int) {
	t.Helper()
	_, b, err := c.call("POST", "/threads", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var th struct {
		ID string `json:"thread_id"`
	}
	json.Unmarshal(b, &th)
	st, b, err := c.call("POST", "/threads/"+th.ID+"/runs", map[string]any{"assistant_id": "chain", "input": map[string]int{"seed": seed, "ms": ms}})
	if err != nil || st != 200 {
		t.Fatalf("start run: %d %s %v", st, b, err)
	}
	var r struct {
		ID string `json:"run_id"`
	}
	json.Unmarshal(b, &r)
	return th.ID, r.ID, func() int {
		_, b, _ := c.call("GET", "/threads/"+th.ID+"/state", nil)
		var s struct{ Values chainState }
		json.Unmarshal(b, &s)
		return s.Values.Steps
	}
}
