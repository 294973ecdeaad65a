package server_test

import (
	"encoding/json"
	"testing"

	"github.com/loomkit/loom/server"
)

// TestUndoAndForkToNewThread: an update with no values and an older
// checkpoint is an undo; a copy from an older checkpoint with values is a
// fork to a new thread.
func TestUndoAndForkToNewThread(t *testing.T) {
	ts := startServer(t, server.Options{})
	thread := createThread(t, ts.URL, "")
	if st, b := call(t, "POST", ts.URL+"/threads/"+thread+"/runs/wait", "", map[string]any{"assistant_id": "demo", "input": map[string]any{"title": "launch"}}); st != 200 {
		t.Fatalf("run: %d %s", st, b)
	}
	st, b := call(t, "GET", ts.URL+"/threads/"+thread+"/history?limit=100", "", nil)
	if st != 200 {
		t.Fatalf("history: %d %s", st, b)
	}
	var hist []struct {
		Values     map[string]any `json:"values"`
		Checkpoint struct {
			ID string `json:"checkpoint_id"`
		} `json:"checkpoint"`
		Metadata map[string]any `json:"metadata"`
		Next     []string       `json:"next"`
	}
	if err := json.Unmarshal(b, &hist); err != nil {
		t.Fatal(err)
	}
	first := hist[len(hist)-1] // the input checkpoint
	st, b = call(t, "POST", ts.URL+"/threads/"+thread+"/state", "", map[string]any{"values": map[string]any{}, "checkpoint_id": first.Checkpoint.ID})
	if st != 200 {
		t.Fatalf("undo: %d %s", st, b)
	}
	st, b = call(t, "GET", ts.URL+"/threads/"+thread+"/state", "", nil)
	state := mustJSON(t, b)
	meta := state["metadata"].(map[string]any)
	if st != 200 || meta["loom_source"] != "undo" || state["next"].([]any)[0] != "draft" {
		t.Errorf("after undo: %d %s", st, b)
	}

	// Fork the interrupted checkpoint (the newest before the undo) to a
	// new thread with another title.
	st, b = call(t, "POST", ts.URL+"/threads/"+thread+"/copy", "", map[string]any{"checkpoint_id": hist[0].Checkpoint.ID, "values": map[string]any{"title": "forked"}})
	if st != 200 {
		t.Fatalf("fork: %d %s", st, b)
	}
	fork := mustJSON(t, b)["thread_id"].(string)
	st, b = call(t, "GET", ts.URL+"/threads/"+fork+"/state", "", nil)
	state = mustJSON(t, b)
	if st != 200 || state["values"].(map[string]any)["title"] != "forked" || state["next"].([]any)[0] != "confirm" ||
		state["metadata"].(map[string]any)["loom_source"] != "fork" {
		t.Errorf("forked thread: %d %s", st, b)
	}
	if st, b := call(t, "POST", ts.URL+"/threads/"+thread+"/copy", "", map[string]any{"checkpoint_id": "nope"}); st != 404 {
		t.Errorf("copy from an unknown checkpoint: %d %s", st, b)
	}
}
