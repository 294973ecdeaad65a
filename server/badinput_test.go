package server_test

import (
	"strings"
	"testing"

	"github.com/loomkit/loom/server"
)

// Every bad request gets the right status and a JSON error naming the
// problem, and writes nothing: no thread, run or checkpoint.
func TestBadInput(t *testing.T) {
	const keyA, keyB = "key-a", "key-b"
	ts := startServer(t, server.Options{Keys: []string{keyA, keyB}, MaxBody: 64 << 10})
	fresh := createThread(t, ts.URL, keyA)
	busy := createThread(t, ts.URL, keyA)
	st, b := call(t, "POST", ts.URL+"/threads/"+busy+"/runs", keyA, map[string]any{"assistant_id": "slow", "input": map[string]int{"steps": 1000, "ms": 20}})
	if st != 200 {
		t.Fatalf("start busy run: %d %s", st, b)
	}
	busyRun := mustJSON(t, b)["run_id"].(string)
	defer call(t, "POST", ts.URL+"/threads/"+busy+"/runs/"+busyRun+"/cancel?wait=1", keyA, nil)

	runs := func(thread string) string { return ts.URL + "/threads/" + thread + "/runs/wait" }
	big := `{"assistant_id":"demo","input":{"title":"` + strings.Repeat("x", 100<<10) + `"}}`
	cases := []struct {
		name, method, url, key string
		body                   any
		header                 []string
		status                 int
		code, message          string
	}{
		{"malformed JSON", "POST", runs(fresh), keyA, `{"assistant_id":`, nil, 400, "malformed_json", "malformed JSON body"},
		{"trailing data", "POST", runs(fresh), keyA, `{"assistant_id":"demo"} {}`, nil, 400, "malformed_json", "data after the JSON value"},
		{"unknown agent", "POST", runs(fresh), keyA, map[string]any{"assistant_id": "nope", "input": map[string]any{}}, nil, 404, "not_found", `agent "nope" not found`},
		{"no agent", "POST", runs(fresh), keyA, map[string]any{"input": map[string]any{}}, nil, 422, "invalid_input", "assistant_id is required"},
		{"unknown thread", "POST", runs("no-such-thread"), keyA, map[string]any{"assistant_id": "demo", "input": map[string]any{}}, nil, 404, "not_found", "thread no-such-thread not found"},
		{"another key's thread", "POST", runs(fresh), keyB, map[string]any{"assistant_id": "demo", "input": map[string]any{}}, nil, 404, "not_found", "thread " + fresh + " not found"},
		{"another key's thread state", "GET", ts.URL + "/threads/" + fresh + "/state", keyB, nil, nil, 404, "not_found", "not found"},
		{"resume with nothing pending", "POST", runs(fresh), keyA, map[string]any{"assistant_id": "demo", "command": map[string]any{"resume": map[string]bool{"accept": true}}}, nil, 409, "no_interrupt", "no pending interrupt"},
		{"oversized body", "POST", runs(fresh), keyA, big, nil, 413, "too_large", "larger than 65536 bytes"},
		{"wrong content type", "POST", runs(fresh), keyA, `{"assistant_id":"demo"}`, []string{"Content-Type", "text/plain"}, 415, "unsupported_media_type", "must be application/json"},
		{"input does not fit", "POST", runs(fresh), keyA, map[string]any{"assistant_id": "demo", "input": map[string]any{"title": 5}}, nil, 422, "invalid_input", "input does not fit agent demo"},
		{"input not an object", "POST", runs(fresh), keyA, map[string]any{"assistant_id": "demo", "input": []int{1}}, nil, 422, "invalid_input", "must be a JSON object"},
		{"unknown input field", "POST", ts.URL + "/runs/wait", keyA, `{"assistant_id":"demo","input":{"titel":5}}`, nil, 422, "invalid_input", `input field "titel" is not one of agent demo's: title`},
		{"unknown input field on a thread", "POST", runs(fresh), keyA, map[string]any{"assistant_id": "demo", "input": map[string]any{"title": "x", "approved": true}}, nil, 422, "invalid_input", `input field "approved"`},
		{"bad stream mode", "POST", ts.URL + "/threads/" + fresh + "/runs/stream", keyA, map[string]any{"assistant_id": "demo", "input": map[string]any{}, "stream_mode": "everything"}, nil, 422, "invalid_stream_mode", `"everything"`},
		{"bad multitask strategy", "POST", runs(fresh), keyA, map[string]any{"assistant_id": "demo", "input": map[string]any{}, "multitask_strategy": "shove"}, nil, 422, "invalid_strategy", `"shove"`},
		{"second run on a busy thread", "POST", runs(busy), keyA, map[string]any{"assistant_id": "slow", "input": map[string]int{"steps": 1}}, nil, 409, "busy", "thread is busy"},
		{"no key", "POST", ts.URL + "/threads", "", map[string]any{}, nil, 401, "unauthorized", "missing API key"},
		{"wrong key", "POST", ts.URL + "/threads", "key-c", map[string]any{}, nil, 401, "unauthorized", "invalid API key"},
		{"bad thread id", "POST", ts.URL + "/threads", keyA, map[string]any{"thread_id": "a b/c"}, nil, 422, "invalid_thread_id", "thread id"},
		{"thread exists", "POST", ts.URL + "/threads", keyA, map[string]any{"thread_id": fresh}, nil, 409, "exists", "exists already"},
		{"unknown model", "POST", ts.URL + "/v1/chat/completions", keyA, map[string]any{"model": "gpt-9", "messages": []map[string]string{{"role": "user", "content": "hi"}}}, nil, 404, "not_found", `agent "gpt-9" not found`},
		{"chat without user message", "POST", ts.URL + "/v1/chat/completions", keyA, map[string]any{"model": "demo", "messages": []map[string]string{{"role": "system", "content": "hi"}}}, nil, 400, "invalid_messages", "no user message"},
		{"unknown route", "GET", ts.URL + "/nowhere", keyA, nil, nil, 404, "not_found", "no route for GET /nowhere"},
		{"unknown run", "GET", ts.URL + "/threads/" + fresh + "/runs/no-such-run", keyA, nil, nil, 404, "not_found", "run no-such-run"},
	}
	before := countRows(t, ts.Path, busy)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, b := call(t, c.method, c.url, c.key, c.body, c.header...)
			if st != c.status {
				t.Fatalf("status %d, want %d: %s", st, c.status, b)
			}
			e, _ := mustJSON(t, b)["error"].(map[string]any)
			if e == nil || e["code"] != c.code || !strings.Contains(e["message"].(string), c.message) {
				t.Fatalf("error %s, want code %q and a message with %q", b, c.code, c.message)
			}
			if after := countRows(t, ts.Path, busy); after != before {
				t.Fatalf("the request wrote: rows %+v, before %+v", after, before)
			}
		})
	}
}
