package server_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/store/storetest"
)

// Query parameters and body fields out of their range get 422
// invalid_parameter naming the parameter and what it takes, never a 500,
// a panic or a silent default.
func TestBadParameters(t *testing.T) {
	const key = "key-a"
	ts := startServer(t, server.Options{Keys: []string{key}})
	tid := createThread(t, ts.URL, key)
	st, b := call(t, "POST", ts.URL+"/threads/"+tid+"/runs/wait", key, map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "hi"}})
	if st != 200 {
		t.Fatalf("run: %d %s", st, b)
	}
	st, b = call(t, "GET", ts.URL+"/threads/"+tid+"/runs", key, nil)
	var runs []struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal(b, &runs); st != 200 || err != nil || len(runs) != 1 {
		t.Fatalf("list runs: %d %s", st, b)
	}
	thread, run := ts.URL+"/threads/"+tid, ts.URL+"/threads/"+tid+"/runs/"+runs[0].RunID
	cases := []struct {
		name, method, url string
		body              any
		message           string
	}{
		{"negative offset", "GET", thread + "/runs?offset=-1", nil, `query parameter offset: want a whole number from 0 to 1073741824, not "-1"`},
		{"limit not a number", "GET", thread + "/runs?limit=abc", nil, `query parameter limit: want a whole number from 1 to 1000, not "abc"`},
		{"zero limit", "GET", thread + "/runs?limit=0", nil, `query parameter limit: want a whole number from 1 to 1000, not "0"`},
		{"limit over the maximum", "GET", thread + "/runs?limit=5000", nil, "from 1 to 1000"},
		{"huge offset", "GET", thread + "/runs?offset=99999999999999999999", nil, "query parameter offset"},
		{"unknown run status", "GET", thread + "/runs?status=done", nil, `query parameter status: want one of pending, running, success, error, interrupted, not "done"`},
		{"history limit", "GET", thread + "/history?limit=-3", nil, `query parameter limit: want a whole number from 1 to 1000, not "-3"`},
		{"history body limit", "POST", thread + "/history", map[string]int{"limit": -1}, "limit: want a whole number from 0 to 1000, not -1"},
		{"cancel wait", "POST", run + "/cancel?wait=maybe", nil, `query parameter wait: want true or false, not "maybe"`},
		{"stream cancel_on_disconnect", "GET", thread + "/stream?cancel_on_disconnect=sometimes", nil, "query parameter cancel_on_disconnect: want true or false"},
		{"search negative limit", "POST", ts.URL + "/threads/search", map[string]int{"limit": -1}, "limit: want a whole number from 0 to 1000, not -1"},
		{"search negative offset", "POST", ts.URL + "/threads/search", map[string]int{"offset": -5}, "offset: want a whole number from 0 to 1073741824, not -5"},
		{"count unknown status", "POST", ts.URL + "/threads/count", map[string]string{"status": "asleep"}, `status: want one of idle, busy, interrupted, error, not "asleep"`},
		{"search unknown sort", "POST", ts.URL + "/threads/search", map[string]string{"sort_by": "colour"}, `sort_by: want one of thread_id`},
		{"search unknown order", "POST", ts.URL + "/threads/search", map[string]string{"sort_order": "up"}, `sort_order: want one of asc, desc, not "up"`},
		{"assistants negative offset", "POST", ts.URL + "/assistants/search", map[string]int{"offset": -1}, "offset: want a whole number"},
		{"unknown if_not_exists", "POST", thread + "/runs", map[string]string{"assistant_id": "echo", "if_not_exists": "make"}, `if_not_exists: want one of create, reject, not "make"`},
		{"unknown on_disconnect", "POST", thread + "/runs/stream", map[string]string{"assistant_id": "echo", "on_disconnect": "stop"}, `on_disconnect: want one of cancel, continue, not "stop"`},
		{"unknown on_completion", "POST", ts.URL + "/runs/wait", map[string]string{"assistant_id": "echo", "on_completion": "kept"}, `on_completion: want one of delete, continue, not "kept"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, b := call(t, c.method, c.url, key, c.body)
			if st != 422 {
				t.Fatalf("status %d, want 422: %s", st, b)
			}
			e, _ := mustJSON(t, b)["error"].(map[string]any)
			if e == nil || e["code"] != "invalid_parameter" || !strings.Contains(e["message"].(string), c.message) {
				t.Fatalf("error %s, want invalid_parameter with %q", b, c.message)
			}
		})
	}
	// In range, the same parameters work.
	for _, u := range []string{thread + "/runs?offset=0&limit=1&status=success", thread + "/history?limit=2", run + "/cancel?wait=true"} {
		method := "GET"
		if strings.Contains(u, "/cancel") {
			method = "POST"
		}
		if st, b := call(t, method, u, key, nil); st >= 500 || st == 422 {
			t.Errorf("%s %s: %d %s", method, u, st, b)
		}
	}
}

// Thread searches take what clients send on SQLite and PostgreSQL alike:
// 40,000 ids, metadata keys with quotes, and no body that is not UTF-8 or
// metadata holding NUL, which PostgreSQL cannot store or compare.
func TestSearchInput(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		searchInput(t, startServer(t, server.Options{Database: filepath.Join(t.TempDir(), "loom.db")}).URL)
	})
	t.Run("postgres", func(t *testing.T) {
		searchInput(t, startServer(t, server.Options{Database: storetest.PostgresURL(t)}).URL)
	})
}

func searchInput(t *testing.T, url string) {
	meta := map[string]any{`say "hi"`: "yes", `back\slash`: 1, "plain": map[string]any{"n": 2}}
	st, b := call(t, "POST", url+"/threads", "", map[string]any{"metadata": meta})
	if st != 200 {
		t.Fatalf("create: %d %s", st, b)
	}
	id := mustJSON(t, b)["thread_id"].(string)
	other := createThread(t, url, "")
	search := func(body any) []string {
		t.Helper()
		st, b := call(t, "POST", url+"/threads/search", "", body)
		var ts []struct {
			ThreadID string `json:"thread_id"`
		}
		if err := json.Unmarshal(b, &ts); st != 200 || err != nil {
			t.Fatalf("search %v: %d %s", body, st, b)
		}
		var ids []string
		for _, th := range ts {
			ids = append(ids, th.ThreadID)
		}
		return ids
	}
	for k, v := range meta {
		if got := search(map[string]any{"metadata": map[string]any{k: v}}); len(got) != 1 || got[0] != id {
			t.Errorf("search by metadata %q: %v, want [%s]", k, got, id)
		}
	}
	if got := search(map[string]any{"metadata": map[string]any{`say "hi"`: "no"}}); len(got) != 0 {
		t.Errorf("search by a value the thread lacks: %v", got)
	}
	ids := make([]string, 40000)
	for i := range ids {
		ids[i] = fmt.Sprint("t-", i)
	}
	ids[len(ids)-1], ids[len(ids)/2] = id, "not a thread id"
	if got := search(map[string]any{"ids": ids, "limit": 100}); len(got) != 1 || got[0] != id {
		t.Errorf("search by 40,000 ids: %v, want [%s]", got, id)
	}
	st, b = call(t, "POST", url+"/threads/count", "", map[string]any{"ids": []string{id, other, "a b"}})
	if st != 200 || strings.TrimSpace(string(b)) != "2" {
		t.Errorf("count by ids: %d %s", st, b)
	}

	for _, c := range []struct {
		name, method, path, body string
		status                   int
		code, message            string
	}{
		{"not UTF-8 in metadata", "POST", "/threads", "{\"metadata\":{\"k\":\"\xff\xfe\"}}", 400, "malformed_json", "not UTF-8"},
		{"not UTF-8 in a key", "PATCH", "/threads/" + id, "{\"metadata\":{\"\xc3\":1}}", 400, "malformed_json", "not UTF-8"},
		{"not UTF-8 in a search", "POST", "/threads/search", "{\"metadata\":{\"k\":\"\xed\xa0\x80\"}}", 400, "malformed_json", "not UTF-8"},
		{"not UTF-8 in an input", "POST", "/threads/" + other + "/runs/wait", "{\"assistant_id\":\"echo\",\"input\":{\"text\":\"\x80\"}}", 400, "malformed_json", "not UTF-8"},
		{"NUL in metadata", "POST", "/threads", `{"metadata":{"k":"a\u0000b"}}`, 422, "invalid_metadata", `metadata "k"`},
		{"NUL in a nested key", "PATCH", "/threads/" + id, `{"metadata":{"k":{"\u0000":1}}}`, 422, "invalid_metadata", "NUL"},
		{"NUL in a search", "POST", "/threads/search", `{"metadata":{"k\u0000":1}}`, 422, "invalid_metadata", "NUL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, b := call(t, c.method, url+c.path, "", c.body)
			if st != c.status {
				t.Fatalf("status %d, want %d: %s", st, c.status, b)
			}
			e, _ := mustJSON(t, b)["error"].(map[string]any)
			if e == nil || e["code"] != c.code || !strings.Contains(e["message"].(string), c.message) {
				t.Fatalf("error %s, want %s with %q", b, c.code, c.message)
			}
		})
	}
	// Characters split across the reads of a body still pass: 12 KB of
	// CJK in metadata.
	long := strings.Repeat("中文", 2000)
	if st, b := call(t, "POST", url+"/threads", "", map[string]any{"metadata": map[string]string{"long": long}}); st != 200 {
		t.Fatalf("long UTF-8 metadata: %d %.200s", st, b)
	}
	if got := search(map[string]any{"metadata": map[string]any{"long": long}}); len(got) != 1 {
		t.Errorf("search by the long value: %v", got)
	}
}

// A run without a thread keeps its thread with LangGraph's on_completion
// "keep", as with Loom's "continue", and deletes it by default.
func TestOnCompletionKeep(t *testing.T) {
	ts := startServer(t, server.Options{})
	kept := map[string]bool{}
	for _, c := range []struct {
		onCompletion string
		kept         bool
	}{{"keep", true}, {"continue", true}, {"", false}, {"delete", false}} {
		resp := do(t, "POST", ts.URL+"/runs/wait", "", map[string]any{"assistant_id": "echo", "input": map[string]string{"text": "hi"}, "on_completion": c.onCompletion})
		resp.Body.Close()
		thread, _, _ := strings.Cut(strings.TrimPrefix(resp.Header.Get("Content-Location"), "/threads/"), "/")
		if resp.StatusCode != 200 || thread == "" {
			t.Fatalf("on_completion %q: HTTP %d, Content-Location %q", c.onCompletion, resp.StatusCode, resp.Header.Get("Content-Location"))
		}
		kept[thread] = c.kept
	}
	ts.shutdown() // every run has ended, and its thread is deleted or not
	db, err := sql.Open("sqlite", ts.Path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for thread, want := range kept {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM loom_threads WHERE id = ?`, thread).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if (n == 1) != want {
			t.Errorf("thread %s: %d rows, want kept %v", thread, n, want)
		}
	}
}
