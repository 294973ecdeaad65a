package server_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loomkit/loom/server"
)

// On shutdown the server stops taking requests, lets the running step
// finish and checkpoint, and returns within its bound; after a restart
// on the same file the run continues where it stopped.
func TestGracefulShutdown(t *testing.T) {
	ts := startServer(t, server.Options{Grace: 5 * time.Second})
	thread := createThread(t, ts.URL, "")
	st, b := call(t, "POST", ts.URL+"/threads/"+thread+"/runs", "", map[string]any{"assistant_id": "slow", "input": map[string]int{"steps": 30, "ms": 30}})
	if st != 200 {
		t.Fatalf("start run: %d %s", st, b)
	}
	run := mustJSON(t, b)["run_id"].(string)
	waitFor(t, "three steps", func() bool {
		_, b := call(t, "GET", ts.URL+"/threads/"+thread+"/state", "", nil)
		var s struct{ Values struct{ Done int } }
		json.Unmarshal(b, &s)
		return s.Values.Done >= 3
	})

	began := time.Now()
	ts.stop()
	select {
	case err := <-ts.done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return within 10s of the shutdown")
	}
	took := time.Since(began)
	ts.srv.Close()
	ts.srv = nil

	hist := checkHistory(t, ts.Path, thread, -1)
	head := hist[0]
	var s struct{ Done, Steps int }
	json.Unmarshal(head.State, &s)
	if s.Done < 3 || s.Done >= 30 || !slices.Equal(head.Next, []string{"work"}) {
		t.Fatalf("head after shutdown: done %d, next %v", s.Done, head.Next)
	}
	if want := 2 + s.Done; len(hist) != want { // input, begin, a checkpoint per step done
		t.Fatalf("%d checkpoints for %d steps done, want %d", len(hist), s.Done, want)
	}
	t.Logf("shutdown took %v; the run stopped after step %d of 30", took.Round(time.Millisecond), s.Done)

	// Restart on the same file: the stopped run is recorded, and a run with
	// no input continues the thread to the end.
	ts2 := startServer(t, server.Options{Database: ts.Path})
	st, b = call(t, "GET", ts2.URL+"/threads/"+thread+"/runs/"+run, "", nil)
	if st != 200 || mustJSON(t, b)["status"] != "interrupted" {
		t.Fatalf("stopped run after restart: %d %s", st, b)
	}
	st, b = call(t, "POST", ts2.URL+"/threads/"+thread+"/runs/wait", "", map[string]any{"assistant_id": "slow"})
	if st != 200 || mustJSON(t, b)["done"] != float64(30) {
		t.Fatalf("continue after restart: %d %s", st, b)
	}
	ts2.shutdown()
	if got := checkHistory(t, ts.Path, thread, 32); !strings.Contains(string(got[0].State), `"done":30`) {
		t.Fatalf("final state %s", got[0].State)
	}
}

// A server without runs shuts down at once, and refuses to listen beyond
// loopback without keys.
func TestServeRefusesOpenAddress(t *testing.T) {
	srv, err := server.New(t.Context(), server.Options{Agents: testAgents(t), Database: t.TempDir() + "/x.db"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := srv.ListenAndServe(t.Context(), "0.0.0.0:0"); err == nil || !strings.Contains(err.Error(), "without API keys") {
		t.Fatalf("ListenAndServe on 0.0.0.0 without keys: %v", err)
	}
}
