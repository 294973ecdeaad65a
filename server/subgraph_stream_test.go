package server_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/loomkit/loom/server"
)

// updatesOf reads a stream's updates events as "event: node" lines, one
// per node the update is keyed by.
func updatesOf(t *testing.T, events []sseEvent) []string {
	t.Helper()
	var out []string
	for _, e := range events {
		if e.event != "updates" && !strings.HasPrefix(e.event, "updates|") {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(e.data), &m); err != nil {
			t.Fatalf("%s: %v in %s", e.event, err, e.data)
		}
		for k := range m {
			out = append(out, e.event+": "+k)
		}
	}
	return out
}

// stream_subgraphs streams the steps inside subgraphs with LangGraph's
// namespaced event names; without it only the agent's own steps are
// streamed. A resume continues inside the subgraph at the node that
// asked: the steps before it are not run (nor streamed) again.
func TestStreamSubgraphs(t *testing.T) {
	ts := startServer(t, server.Options{Agents: subgraphAgents(t)})
	run := func(thread string, body map[string]any) []string {
		t.Helper()
		body["assistant_id"], body["stream_mode"] = "outer", []string{"updates"}
		resp := do(t, "POST", ts.URL+"/threads/"+thread+"/runs/stream", "", body)
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("stream: %d", resp.StatusCode)
		}
		events, _ := readSSE(t, resp.Body, nil)
		return updatesOf(t, events)
	}
	input := map[string]any{"title": "trip"}

	plain := run(createThread(t, ts.URL, ""), map[string]any{"input": input})
	if !slices.Equal(plain, []string{"updates: __interrupt__"}) {
		t.Errorf("without stream_subgraphs: %q, want only the outer node's question", plain)
	}

	thread := createThread(t, ts.URL, "")
	got := run(thread, map[string]any{"input": input, "stream_subgraphs": true})
	for _, want := range []string{"updates|run: draft", "updates|run|review: check", "updates: __interrupt__"} {
		if !slices.Contains(got, want) {
			t.Errorf("with stream_subgraphs: %q, want %q among them", got, want)
		}
	}
	if slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "/") }) {
		t.Errorf("with stream_subgraphs: %q names a node by its path", got)
	}
	got = run(thread, map[string]any{"command": map[string]any{"resume": map[string]any{"accept": true}}, "stream_subgraphs": true})
	if want := []string{"updates|run: confirm", "updates: run"}; !slices.Equal(got, want) {
		t.Errorf("resumed: %q, want %q: the subgraph goes on at confirm", got, want)
	}
}
