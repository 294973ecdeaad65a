package server_test

import (
	"encoding/json"
	"testing"

	"github.com/loomkit/loom/server"
)

// TestRunDurability: a run's durability reaches the graph. A run of the
// slow agent takes six steps (begin, five of work): with sync or async
// every step is in the thread's history after the run; with exit only the
// input and the end are.
func TestRunDurability(t *testing.T) {
	ts := startServer(t, server.Options{Agents: testAgents(t)})
	for d, want := range map[string]int{"sync": 7, "async": 7, "exit": 2, "": 7} {
		tid := createThread(t, ts.URL, "")
		st, b := call(t, "POST", ts.URL+"/threads/"+tid+"/runs/wait", "", map[string]any{
			"assistant_id": "slow", "input": map[string]any{"steps": 5, "ms": 0}, "durability": d})
		if st != 200 || mustJSON(t, b)["done"] != 5.0 {
			t.Fatalf("durability %q: %d %s, want the run done after 5 steps of work", d, st, b)
		}
		st, b = call(t, "POST", ts.URL+"/threads/"+tid+"/history", "", map[string]any{"limit": 100})
		var hist []json.RawMessage
		if err := json.Unmarshal(b, &hist); st != 200 || err != nil {
			t.Fatalf("history: %d %s", st, b)
		}
		if len(hist) != want {
			t.Errorf("durability %q: %d checkpoints, want %d", d, len(hist), want)
		}
	}
}
