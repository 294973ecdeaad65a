package server_test

import (
	"strings"
	"testing"

	"github.com/loomkit/loom/server"
)

// /metrics counts runs, steps, durations, tokens and requests in the
// Prometheus text format, behind the API key when there are keys.
func TestMetrics(t *testing.T) {
	const key = "metrics-key"
	ts := startServer(t, server.Options{Keys: []string{key}})
	thread := createThread(t, ts.URL, key)
	call(t, "POST", ts.URL+"/threads/"+thread+"/runs/wait", key, map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "a b"}})
	call(t, "POST", ts.URL+"/threads/"+thread+"/runs/wait", key, map[string]any{"assistant_id": "nope"})
	if st, _ := call(t, "GET", ts.URL+"/metrics", "", nil); st != 401 {
		t.Fatalf("metrics without a key: %d", st)
	}
	st, b := call(t, "GET", ts.URL+"/metrics", key, nil)
	if st != 200 {
		t.Fatalf("metrics: %d %s", st, b)
	}
	for _, want := range []string{
		`loom_runs_total{agent="echo",status="success"} 1`,
		`loom_steps_total{agent="echo",node="think"} 1`,
		`loom_steps_total{agent="echo",node="confirm"} 1`,
		`loom_tokens_total{agent="echo",kind="token"} 4`,
		`loom_tokens_total{agent="echo",kind="reasoning"} 1`,
		`loom_run_duration_seconds_count{agent="echo"} 1`,
		`loom_http_requests_total{code="404",route="POST /threads/{tid}/runs/wait"} 1`,
		`loom_runs_active{agent="echo"} 0`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
