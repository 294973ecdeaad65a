package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/loomkit/loom/server"
)

// TestRunBatch: a batch starts each run on a thread of its own, in order;
// a batch with a bad item starts none and names the item.
func TestRunBatch(t *testing.T) {
	ts := startServer(t, server.Options{Agents: toneAgents(t)})
	st, b := call(t, "POST", ts.URL+"/runs/batch", "", []map[string]any{
		{"assistant_id": "tone", "input": map[string]any{"text": "a"}, "context": map[string]any{"tone": "loud"}, "on_completion": "keep"},
		// As the official JS client sends it: camelCase beside assistant_id.
		{"assistantId": "echo", "assistant_id": "echo", "input": map[string]any{"text": "b"}, "onCompletion": "keep"},
	})
	var runs []map[string]any
	if st != 200 || json.Unmarshal(b, &runs) != nil || len(runs) != 2 {
		t.Fatalf("batch: %d %s", st, b)
	}
	if runs[0]["assistant_id"] != "tone" || runs[1]["assistant_id"] != "echo" || runs[0]["thread_id"] == runs[1]["thread_id"] {
		t.Fatalf("batch runs %s: want tone then echo, each on its own thread", b)
	}
	st, b = call(t, "GET", ts.URL+"/threads/"+runs[0]["thread_id"].(string)+"/runs/"+runs[0]["run_id"].(string)+"/join", "", nil)
	if st != 200 || mustJSON(t, b)["reply"] != "loud:a" {
		t.Fatalf("join the first: %d %s, want loud:a", st, b)
	}
	// The second runs on: join it too, so that what it writes is counted
	// before the refused batches below, not taken for theirs.
	if st, b = call(t, "GET", ts.URL+"/threads/"+runs[1]["thread_id"].(string)+"/runs/"+runs[1]["run_id"].(string)+"/join", "", nil); st != 200 {
		t.Fatalf("join the second: %d %s", st, b)
	}

	before := countRows(t, ts.Path, "")
	for _, c := range []struct {
		body any
		want string
	}{
		{[]map[string]any{{"assistant_id": "tone", "input": map[string]any{"text": "a"}}, {"assistant_id": "tone", "context": map[string]any{"tone": "x"}}}, "runs[1]"},
		{[]map[string]any{{"assistant_id": "tone", "colour": 1}}, `runs[0] field \"colour\"`},
		{[]map[string]any{{"input": map[string]any{}}}, "assistant_id"},
		{[]map[string]any{}, "1 to 100"},
		{map[string]any{"assistant_id": "tone"}, "malformed"},
	} {
		st, b := call(t, "POST", ts.URL+"/runs/batch", "", c.body)
		if st < 400 || st >= 500 || !strings.Contains(string(b), c.want) {
			t.Errorf("%v: %d %s, want a 4xx with %s", c.body, st, b, c.want)
		}
	}
	if after := countRows(t, ts.Path, ""); after != before {
		t.Fatalf("refused batches wrote: %+v, then %+v", before, after)
	}
}

// TestCancelRuns: POST /runs/cancel stops a thread's runs, or every run
// of a status, and leaves others' alone.
func TestCancelRuns(t *testing.T) {
	ts := startServer(t, server.Options{Keys: []string{"k1", "k2"}})
	start := func(key string) (string, string) {
		tid := createThread(t, ts.URL, key)
		st, b := call(t, "POST", ts.URL+"/threads/"+tid+"/runs", key, map[string]any{"assistant_id": "slow", "input": map[string]any{"steps": 1000, "ms": 20}})
		if st != 200 {
			t.Fatalf("start: %d %s", st, b)
		}
		return tid, mustJSON(t, b)["run_id"].(string)
	}
	status := func(key, tid, rid string) string {
		call(t, "GET", ts.URL+"/threads/"+tid+"/runs/"+rid+"/join", key, nil)
		_, b := call(t, "GET", ts.URL+"/threads/"+tid+"/runs/"+rid, key, nil)
		return mustJSON(t, b)["status"].(string)
	}
	t1, r1 := start("k1")
	t2, r2 := start("k1")
	t3, r3 := start("k2")
	if st, b := call(t, "POST", ts.URL+"/runs/cancel", "k1", map[string]any{"thread_id": t1, "run_ids": []string{r1}}); st != 204 {
		t.Fatalf("cancel by thread and id: %d %s", st, b)
	}
	if s := status("k1", t1, r1); s != "interrupted" {
		t.Fatalf("cancelled run is %s", s)
	}
	if st, b := call(t, "POST", ts.URL+"/runs/cancel", "k1", map[string]any{"status": "all"}); st != 204 {
		t.Fatalf("cancel all: %d %s", st, b)
	}
	if s := status("k1", t2, r2); s != "interrupted" {
		t.Fatalf("k1's other run is %s after cancelling all", s)
	}
	st, b := call(t, "GET", ts.URL+"/threads/"+t3+"/runs/"+r3, "k2", nil)
	if st != 200 || mustJSON(t, b)["status"] != "running" && mustJSON(t, b)["status"] != "pending" {
		t.Fatalf("k2's run after k1 cancelled all: %d %s, want it still going", st, b)
	}
	for _, body := range []map[string]any{{}, {"status": "done"}, {"status": "all", "thread_id": t1}, {"thread_id": t1, "colour": 1}} {
		if st, b := call(t, "POST", ts.URL+"/runs/cancel", "k1", body); st != 422 {
			t.Errorf("cancel %v: %d %s, want 422", body, st, b)
		}
	}
	if st, b := call(t, "POST", ts.URL+"/runs/cancel", "k1", map[string]any{"thread_id": t3}); st != 404 {
		t.Fatalf("k1 cancels k2's thread: %d %s, want 404", st, b)
	}
	call(t, "POST", ts.URL+"/runs/cancel", "k2", map[string]any{"thread_id": t3})
	if s := status("k2", t3, r3); s != "interrupted" {
		t.Fatalf("k2's run after cancelling its thread: %s", s)
	}
}
