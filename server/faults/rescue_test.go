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
	_, b, err := c.call("POST", "/threads", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var th struct {
		ID string `json:"thread_id"`
	}
	json.Unmarshal(b, &th)
	st, b, err := c.call("POST", "/threads/"+th.ID+"/runs", map[string]any{"assistant_id": "chain", "input": map[string]int{"seed": 7, "ms": ms}})
	if err != nil || st != 200 {
		t.Fatalf("start run: %d %s %v", st, b, err)
	}
	var r struct {
		ID string `json:"run_id"`
	}
	json.Unmarshal(b, &r)
	steps := func() int {
		_, b, _ := c.call("GET", "/threads/"+th.ID+"/state", nil)
		var s struct{ Values chainState }
		json.Unmarshal(b, &s)
		return s.Values.Steps
	}
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
		_, b, _ := c.call("GET", "/threads/"+th.ID+"/runs/"+r.ID, nil)
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
	checkHistory(t, db.Saver(), th.ID, r.ID)
}
