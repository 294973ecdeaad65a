package server_test

import (
	"context"
	"errors"
	"testing"

	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/store/storetest"
)

// A turn of an agent's own endpoint (HoldThread) and the thread's runs
// never go at once: a hold fails while a run goes on, and on SQLite a run
// submitted during a hold is refused (reject) or waits for it (enqueue);
// on Postgres it waits for the hold's lock.
func TestHoldThread(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			var opts server.Options
			if name == "postgres" {
				opts.Database = storetest.PostgresURL(t)
			}
			ts := startServer(t, opts)
			tid := createThread(t, ts.URL, "")
			st, b := call(t, "POST", ts.URL+"/threads/"+tid+"/runs", "", map[string]any{"assistant_id": "slow", "input": map[string]any{"steps": 1000, "ms": 20}})
			if st != 200 {
				t.Fatalf("start a slow run: %d %s", st, b)
			}
			run := mustJSON(t, b)["run_id"].(string)
			waitFor(t, "the run to be going", func() bool {
				_, b := call(t, "GET", ts.URL+"/threads/"+tid+"/runs/"+run, "", nil)
				return mustJSON(t, b)["status"] == "running"
			})
			if _, err := ts.srv.HoldThread(ctx, tid); !errors.Is(err, server.ErrBusy) {
				t.Fatalf("hold while a run goes on: %v, want ErrBusy", err)
			}
			if st, b := call(t, "POST", ts.URL+"/threads/"+tid+"/runs/"+run+"/cancel?wait=1", "", nil); st >= 300 {
				t.Fatalf("cancel: %d %s", st, b)
			}
			release, err := ts.srv.HoldThread(ctx, tid)
			if err != nil {
				t.Fatalf("hold an idle thread: %v", err)
			}
			if name == "sqlite" {
				st, b := call(t, "POST", ts.URL+"/threads/"+tid+"/runs", "", map[string]any{"assistant_id": "slow", "input": map[string]any{"steps": 1, "ms": 1}})
				if st != 409 {
					t.Errorf("run with reject during a hold: %d %s, want 409", st, b)
				}
				st, b = call(t, "POST", ts.URL+"/threads/"+tid+"/runs", "", map[string]any{"assistant_id": "slow", "multitask_strategy": "enqueue", "input": map[string]any{"steps": 1, "ms": 1}})
				if st != 200 {
					t.Fatalf("run with enqueue during a hold: %d %s", st, b)
				}
				queued := mustJSON(t, b)["run_id"].(string)
				_, b = call(t, "GET", ts.URL+"/threads/"+tid+"/runs/"+queued, "", nil)
				if s := mustJSON(t, b)["status"]; s != "pending" {
					t.Errorf("enqueued run during a hold: %v, want pending", s)
				}
				release()
				release() // once is enough; twice is harmless
				st, b = call(t, "GET", ts.URL+"/threads/"+tid+"/runs/"+queued+"/join", "", nil)
				if st != 200 || mustJSON(t, b)["done"] != float64(1) {
					t.Errorf("enqueued run after the hold: %d %s", st, b)
				}
				return
			}
			done := make(chan int, 1)
			go func() {
				st, _ := call(t, "POST", ts.URL+"/threads/"+tid+"/runs/wait", "", map[string]any{"assistant_id": "slow", "input": map[string]any{"steps": 1, "ms": 1}})
				done <- st
			}()
			release()
			if st := <-done; st != 200 {
				t.Errorf("run after the hold: %d", st)
			}
		})
	}
}
