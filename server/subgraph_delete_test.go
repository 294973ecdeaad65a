package server_test

import (
	"errors"
	"testing"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/server"
)

// Deleting a thread deletes the checkpoints its subgraphs kept on their
// own threads ("T|run", and "T|run|review" nested in it), whether the
// thread goes by DELETE /threads/{id} or by POST /threads/prune.
func TestDeleteThreadDeletesSubgraphThreads(t *testing.T) {
	ts := startServer(t, server.Options{Agents: subgraphAgents(t)})
	saver := ts.srv.Saver()
	asked := func() string {
		t.Helper()
		thread := createThread(t, ts.URL, "")
		st, b := call(t, "POST", ts.URL+"/threads/"+thread+"/runs/wait", "",
			map[string]any{"assistant_id": "outer", "input": map[string]any{"title": "trip"}})
		if st != 200 {
			t.Fatalf("run: %d %s", st, b)
		}
		for _, inner := range []string{thread + "|run", thread + "|run|review"} {
			if _, err := saver.Get(t.Context(), inner, ""); err != nil {
				t.Fatalf("before the delete, subgraph thread %s: %v", inner, err)
			}
		}
		return thread
	}
	gone := func(how, thread string) {
		t.Helper()
		for _, th := range []string{thread, thread + "|run", thread + "|run|review"} {
			switch cp, err := saver.Get(t.Context(), th, ""); {
			case err == nil:
				t.Errorf("after %s, thread %s still has checkpoint %s", how, th, cp.ID)
			case !errors.Is(err, checkpoint.ErrNotFound):
				t.Errorf("after %s, thread %s: %v; want it not found", how, th, err)
			}
		}
	}

	thread := asked()
	if st, b := call(t, "DELETE", ts.URL+"/threads/"+thread, "", nil); st != 204 {
		t.Fatalf("delete: %d %s", st, b)
	}
	gone("DELETE", thread)

	thread = asked()
	st, b := call(t, "POST", ts.URL+"/threads/prune", "", map[string]any{"thread_ids": []string{thread}})
	if st != 200 || mustJSON(t, b)["pruned_count"] != float64(1) {
		t.Fatalf("prune: %d %s", st, b)
	}
	gone("prune", thread)
}
