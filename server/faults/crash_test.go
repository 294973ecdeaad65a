package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/store"
	"github.com/loomkit/loom/store/storetest"
)

// One server, on SQLite and on Postgres, SIGKILLed and started again
// five times while 30 clients each start review runs (three slow steps,
// then a question), wait for the question, and answer it. Every run that
// was answered 200 exists afterwards and ends (none is lost, none stays
// pending or running), no thread stays busy, every answer that was
// acknowledged is in its thread's state, and every thread's history is
// an unbroken chain.
func TestCrashLosesNoAcceptedRun(t *testing.T) {
	gate(t)
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			dbURL := filepath.Join(t.TempDir(), "loom.db")
			if backend == "postgres" {
				dbURL = storetest.PostgresURL(t)
			}
			crashTest(t, dbURL)
		})
	}
}

// acked is what a client was told: the runs accepted on its thread and
// the note of the answer accepted, if one was.
type acked struct {
	thread string
	runs   []string
	note   string
}

func crashTest(t *testing.T, dbURL string) {
	const clients, kills = 30, 5
	c := newCluster(t, 1, "LOOM_DATABASE_URL="+dbURL, "LOOM_FAULTS_LEASE=1s", "LOOM_FAULTS_RESCUE=4s")
	ctx, stop := context.WithCancel(context.Background())
	var mu sync.Mutex
	var all []*acked
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				a := &acked{}
				mu.Lock()
				all = append(all, a)
				mu.Unlock()
				review(ctx, c, a, fmt.Sprintf("c%d-%d", i, n))
			}
		}()
	}
	for k := range kills {
		time.Sleep(time.Duration(1500+500*k) * time.Millisecond)
		c.kill(0)
		c.start(0)
	}
	time.Sleep(time.Second)
	stop()
	wg.Wait()

	// Every run that was acknowledged ends, wherever the server was
	// killed.
	runs, answers := 0, 0
	for _, a := range all {
		for _, id := range a.runs {
			runs++
			var st string
			if !until(2*time.Minute, func() bool {
				code, body, err := c.call("GET", "/threads/"+a.thread+"/runs/"+id, nil)
				if err != nil || code != 200 {
					st = fmt.Sprintf("HTTP %d %s %v", code, body, err)
					return code == 404 // lost: no point in waiting
				}
				var r struct{ Status string }
				json.Unmarshal(body, &r)
				st = r.Status
				return st != "pending" && st != "running"
			}) || (st != "success" && st != "interrupted") {
				t.Errorf("run %s of thread %s: %s, want success or interrupted", id, a.thread, st)
			}
		}
	}
	if runs == 0 {
		t.Fatal("no run was accepted")
	}
	db, err := store.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, a := range all {
		if a.thread == "" {
			continue
		}
		var code int
		var th struct{ Status string }
		var err error
		until(2*time.Minute, func() bool { // a run the client never heard of may still go on
			var body []byte
			code, body, err = c.call("GET", "/threads/"+a.thread, nil)
			json.Unmarshal(body, &th)
			return th.Status != "busy"
		})
		if err != nil || code != 200 || th.Status == "busy" || th.Status == "error" {
			t.Errorf("thread %s: HTTP %d, status %q, %v", a.thread, code, th.Status, err)
		}
		hist, err := db.Saver().List(context.Background(), a.thread, 0)
		if err != nil {
			t.Fatalf("history of %s: %v", a.thread, err)
		}
		unbroken(t, a.thread, hist)
		if a.note == "" {
			continue
		}
		answers++
		var s reviewState
		if len(hist) > 0 {
			json.Unmarshal(hist[0].State, &s)
		}
		if s.Note != a.note || !s.Done || !slices.Equal(s.Trail, []string{"draft1", "draft2", "draft3", "confirm"}) {
			t.Errorf("thread %s: state %+v, want the acknowledged answer %q applied once after three drafts", a.thread, s, a.note)
		}
	}
	t.Logf("%d threads, %d runs acknowledged, %d answers acknowledged, %d kills", len(all), runs, answers, kills)
	if answers == 0 {
		t.Fatal("no answer was acknowledged")
	}
}

// unbroken fails the test unless hist (newest first) is a chain: each
// checkpoint's parent is the one before it, sequence numbers without a gap.
func unbroken(t *testing.T, thread string, hist []*checkpoint.Checkpoint) {
	t.Helper()
	for i, cp := range hist {
		seq := int64(len(hist) - 1 - i)
		if cp.Seq != seq || (i+1 < len(hist) && cp.ParentID != hist[i+1].ID) {
			t.Errorf("thread %s: checkpoint %s (seq %d, parent %s) breaks the chain at seq %d", thread, cp.ID, cp.Seq, cp.ParentID, seq)
			return
		}
	}
}

// review is one client's conversation: a thread, a run to the question,
// and the answer. It records what the server acknowledged in a.
func review(ctx context.Context, c *cluster, a *acked, name string) {
	code, body, err := c.call("POST", "/threads", map[string]any{})
	if err != nil || code != 200 {
		return
	}
	var th struct {
		ID string `json:"thread_id"`
	}
	json.Unmarshal(body, &th)
	a.thread = th.ID
	start := func(req map[string]any) bool {
		req["assistant_id"] = "review"
		req["multitask_strategy"] = "reject"
		code, body, err := c.call("POST", "/threads/"+a.thread+"/runs", req)
		if err != nil || code != 200 {
			return false
		}
		var r struct {
			ID string `json:"run_id"`
		}
		json.Unmarshal(body, &r)
		a.runs = append(a.runs, r.ID)
		return true
	}
	status := func() string {
		_, body, _ := c.call("GET", "/threads/"+a.thread, nil)
		var t struct{ Status string }
		json.Unmarshal(body, &t)
		return t.Status
	}
	if !start(map[string]any{"input": map[string]any{"title": name, "ms": 150}}) {
		return
	}
	for status() != "interrupted" {
		if ctx.Err() != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	note := "ok " + name
	if start(map[string]any{"command": map[string]any{"resume": map[string]any{"accept": true, "note": note}}}) {
		a.note = note
	}
	for ctx.Err() == nil && status() != "idle" {
		time.Sleep(100 * time.Millisecond)
	}
}
