package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"testing"

	"github.com/loomkit/loom/server"
)

// TestThreadsCarryTheirAgent: a thread the server creates for an agent
// (a run that creates its thread, a chat, an agent's own endpoint through
// TrackThread) has the agent as graph_id and assistant_id in its metadata,
// as LangGraph does, so that a search by graph_id finds it; a thread the
// client creates keeps the metadata the client gave.
func TestThreadsCarryTheirAgent(t *testing.T) {
	ts := startServer(t, server.Options{})

	code, body := call(t, http.MethodPost, ts.URL+"/threads/run-made/runs/wait", "",
		map[string]any{"assistant_id": "demo", "input": map[string]string{"title": "trip"}, "if_not_exists": "create"})
	if code != http.StatusOK {
		t.Fatalf("run that creates its thread: %d %s", code, body)
	}
	if err := ts.srv.TrackThread(context.Background(), "upload-made", "echo", ""); err != nil {
		t.Fatalf("TrackThread: %v", err)
	}
	code, body = call(t, http.MethodPost, ts.URL+"/v1/chat/completions", "",
		map[string]any{"model": "echo", "messages": []map[string]string{{"role": "user", "content": "hello"}}})
	if code != http.StatusOK {
		t.Fatalf("chat: %d %s", code, body)
	}
	code, body = call(t, http.MethodPost, ts.URL+"/threads", "", map[string]any{"thread_id": "client-made", "metadata": map[string]string{"note": "mine"}})
	if code != http.StatusOK {
		t.Fatalf("create thread: %d %s", code, body)
	}

	meta := func(id string) map[string]any {
		t.Helper()
		code, body := call(t, http.MethodGet, ts.URL+"/threads/"+id, "", nil)
		if code != http.StatusOK {
			t.Fatalf("GET /threads/%s: %d %s", id, code, body)
		}
		var th struct {
			Metadata map[string]any `json:"metadata"`
		}
		if err := json.Unmarshal(body, &th); err != nil {
			t.Fatal(err)
		}
		return th.Metadata
	}
	for id, agent := range map[string]string{"run-made": "demo", "upload-made": "echo"} {
		if m := meta(id); m["graph_id"] != agent || m["assistant_id"] != agent {
			t.Errorf("thread %s: metadata %v, want graph_id and assistant_id %s", id, m, agent)
		}
	}
	if m := meta("client-made"); len(m) != 1 || m["note"] != "mine" {
		t.Errorf("thread the client made: metadata %v, want only what the client gave", m)
	}

	search := func(graph string) []string {
		t.Helper()
		code, body := call(t, http.MethodPost, ts.URL+"/threads/search", "", map[string]any{"metadata": map[string]string{"graph_id": graph}})
		if code != http.StatusOK {
			t.Fatalf("search graph_id %s: %d %s", graph, code, body)
		}
		var found []struct {
			ThreadID string `json:"thread_id"`
		}
		if err := json.Unmarshal(body, &found); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, f := range found {
			ids = append(ids, f.ThreadID)
		}
		sort.Strings(ids)
		return ids
	}
	if got := search("demo"); len(got) != 1 || got[0] != "run-made" {
		t.Errorf("search graph_id demo found %v, want [run-made]", got)
	}
	got := search("echo") // the tracked thread and the chat's
	if len(got) != 2 || (got[0] != "upload-made" && got[1] != "upload-made") {
		t.Errorf("search graph_id echo found %v, want upload-made and the chat's thread", got)
	}
}
