package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/store/storetest"
)

// askDemo starts the demo on a new thread and waits for its question; it
// returns the thread and the interrupt's id.
func askDemo(t *testing.T, url string) (string, string) {
	t.Helper()
	tid := createThread(t, url, "")
	st, b := call(t, "POST", url+"/threads/"+tid+"/runs/wait", "", map[string]any{"assistant_id": "demo", "input": map[string]any{"title": "launch"}})
	if st != 200 {
		t.Fatalf("start demo: %d %s", st, b)
	}
	intr, _ := mustJSON(t, b)["__interrupt__"].([]any)
	if len(intr) != 1 {
		t.Fatalf("start demo: no question: %s", b)
	}
	return tid, intr[0].(map[string]any)["id"].(string)
}

// threadStatus returns the thread's status.
func threadStatus(t *testing.T, url, tid string) string {
	t.Helper()
	st, b := call(t, "GET", url+"/threads/"+tid, "", nil)
	if st != 200 {
		t.Fatalf("get thread: %d %s", st, b)
	}
	return mustJSON(t, b)["status"].(string)
}

// A resume value is checked against the type the node asks for before
// anything runs: the wrong shape is a 422 with the schema's message and
// the question stays pending; LangGraph's id-keyed form is honoured and
// an unknown id refused.
func TestResumeIsChecked(t *testing.T) {
	ts := startServer(t, server.Options{})
	tid, id := askDemo(t, ts.URL)
	before := countRows(t, ts.Path, "")
	for _, bad := range []any{"yes", []int{1, 2}, 7, map[string]any{"accept": "yes"}} {
		st, b := call(t, "POST", ts.URL+"/threads/"+tid+"/runs/wait", "", map[string]any{"assistant_id": "demo", "command": map[string]any{"resume": bad}})
		if st != http.StatusUnprocessableEntity || !strings.Contains(string(b), "invalid_answer") || !strings.Contains(string(b), "accept") {
			t.Errorf("resume %v: %d %s, want 422 invalid_answer naming the expected fields", bad, st, b)
		}
	}
	if after := countRows(t, ts.Path, ""); after != before {
		t.Errorf("refused answers wrote: %+v → %+v", before, after)
	}
	if s := threadStatus(t, ts.URL, tid); s != "interrupted" {
		t.Fatalf("thread after refused answers: %s, want interrupted", s)
	}
	st, b := call(t, "POST", ts.URL+"/threads/"+tid+"/runs/wait", "", map[string]any{"assistant_id": "demo",
		"command": map[string]any{"resume": map[string]any{"0190c1d2-0000-7000-8000-000000000000": map[string]any{"accept": true}}}})
	if st != http.StatusConflict || !strings.Contains(string(b), "no_interrupt") {
		t.Errorf("resume naming an unknown interrupt: %d %s, want 409 no_interrupt", st, b)
	}
	st, b = call(t, "POST", ts.URL+"/threads/"+tid+"/runs/wait", "", map[string]any{"assistant_id": "demo",
		"command": map[string]any{"resume": map[string]any{id: map[string]any{"accept": true, "note": "ship it"}}}})
	if m := mustJSON(t, b); st != 200 || m["approved"] != true || m["note"] != "ship it" {
		t.Errorf("resume by interrupt id: %d %s, want approved with the note", st, b)
	}
	st, b = call(t, "POST", ts.URL+"/threads/"+tid+"/runs/wait", "", map[string]any{"assistant_id": "demo",
		"command": map[string]any{"resume": map[string]any{id: map[string]any{"accept": true}}}})
	if st != http.StatusConflict {
		t.Errorf("second answer to the same interrupt: %d %s, want 409", st, b)
	}
}

// Thirty resumes of one question at once: exactly one runs, the others
// get 409 and never run, and no thread ends in error; with reject and
// enqueue, on SQLite and on Postgres.
func TestConcurrentResumesOneWinner(t *testing.T) {
	backends := map[string]func(*testing.T) string{
		"sqlite":   func(*testing.T) string { return "" },
		"postgres": func(t *testing.T) string { return storetest.PostgresURL(t) },
	}
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			ts := startServer(t, server.Options{Database: backends[name](t)})
			for _, strategy := range []string{"reject", "enqueue"} {
				for trial := range 20 {
					tid, _ := askDemo(t, ts.URL)
					var mu sync.Mutex
					codes := map[int]int{}
					var wg sync.WaitGroup
					for i := range 30 {
						wg.Add(1)
						go func() {
							defer wg.Done()
							st, b := call(t, "POST", ts.URL+"/threads/"+tid+"/runs/wait", "", map[string]any{"assistant_id": "demo",
								"multitask_strategy": strategy, "command": map[string]any{"resume": map[string]any{"accept": true, "note": fmt.Sprint(i)}}})
							if st == 200 && strings.Contains(string(b), "__error__") {
								t.Errorf("%s trial %d: a resume ran and failed: %s", strategy, trial, b)
							}
							mu.Lock()
							codes[st]++
							mu.Unlock()
						}()
					}
					wg.Wait()
					if codes[200] != 1 || codes[409] != 29 {
						t.Fatalf("%s trial %d: statuses %v, want one 200 and 29 409", strategy, trial, codes)
					}
					if s := threadStatus(t, ts.URL, tid); s != "idle" {
						t.Fatalf("%s trial %d: thread %s, want idle", strategy, trial, s)
					}
					st, b := call(t, "GET", ts.URL+"/threads/"+tid+"/runs?limit=100", "", nil)
					if n := strings.Count(string(b), `"run_id"`); st != 200 || n != 2 {
						t.Fatalf("%s trial %d: %d runs on the thread, want 2 (the start and the one answer): %s", strategy, trial, n, b)
					}
				}
			}
		})
	}
}
