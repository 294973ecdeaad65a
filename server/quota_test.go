package server_test

import (
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/store/storetest"
)

// storedRows counts the threads, runs and checkpoints ts's database
// holds, SQLite or Postgres.
func storedRows(t *testing.T, ts *testServer) rows {
	t.Helper()
	if !strings.HasPrefix(ts.Path, "postgres") {
		return countRows(t, ts.Path, "")
	}
	db, err := sql.Open("pgx", ts.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var r rows
	err = db.QueryRow(`SELECT (SELECT count(*) FROM loom_threads), (SELECT count(*) FROM loom_runs), (SELECT count(*) FROM loom_checkpoints)`).
		Scan(&r.threads, &r.runs, &r.checkpoints)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// refused makes a request that a quota must refuse: it wants status
// (429 with Retry-After, or 413) with the error code of that status, and
// the database as it was.
func refused(t *testing.T, ts *testServer, status int, method, path, key string, body any) string {
	t.Helper()
	before := storedRows(t, ts)
	resp := do(t, method, ts.URL+path, key, body)
	b := readBody(t, resp)
	code, _ := mustJSON(t, b)["error"].(map[string]any)["code"].(string)
	want := map[int]string{http.StatusTooManyRequests: "quota_exceeded", http.StatusRequestEntityTooLarge: "too_large"}[status]
	if resp.StatusCode != status || code != want {
		t.Errorf("%s %s: %d %s, want %d %s", method, path, resp.StatusCode, b, status, want)
	}
	if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); status == http.StatusTooManyRequests && (err != nil || ra < 1) {
		t.Errorf("%s %s: Retry-After %q, want whole seconds", method, path, resp.Header.Get("Retry-After"))
	}
	if after := storedRows(t, ts); after != before {
		t.Errorf("%s %s wrote: %+v before, %+v after", method, path, before, after)
	}
	return string(b)
}

func readBody(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mustOK makes a request that must succeed and returns its JSON object.
func mustOK(t *testing.T, method, url, key string, body any) map[string]any {
	t.Helper()
	st, b := call(t, method, url, key, body)
	if st != 200 {
		t.Fatalf("%s %s: %d %s", method, url, st, b)
	}
	return mustJSON(t, b)
}

// quotaOptions are small counts for keys a and b, without a rate limit.
func quotaOptions() server.Options {
	return server.Options{Keys: []string{"key-a", "key-b"}, Grace: 100 * time.Millisecond,
		Quotas: server.Quotas{ThreadsPerKey: 5, RunningPerKey: 2, QueuedPerThread: 2, QueuedPerKey: 3, RatePerKey: -1}}
}

// Each count quota refuses with 429, Retry-After and nothing written, for
// its key only; on SQLite (run lanes) and on Postgres (runs table).
func TestQuotaCounts(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testQuotaCounts(t, startServer(t, quotaOptions())) })
	t.Run("postgres", func(t *testing.T) {
		opts := quotaOptions()
		opts.Database = storetest.PostgresURL(t)
		testQuotaCounts(t, startServer(t, opts))
	})
}

func testQuotaCounts(t *testing.T, ts *testServer) {
	const a, b = "key-a", "key-b"
	forever := map[string]any{"steps": 1, "ms": 600_000} // until cancelled
	var tids []string
	for range 4 {
		tids = append(tids, createThread(t, ts.URL, a))
	}
	// Two runs take key a's two running slots.
	var running []string
	for _, tid := range tids[:2] {
		run := mustOK(t, "POST", ts.URL+"/threads/"+tid+"/runs", a, map[string]any{"assistant_id": "slow", "input": forever})
		running = append(running, "/threads/"+tid+"/runs/"+run["run_id"].(string))
	}
	t.Cleanup(func() {
		for _, r := range running {
			call(t, "POST", ts.URL+r+"/cancel", a, nil)
		}
	})
	for _, tid := range tids[:2] { // both in their long step, checkpointed
		waitFor(t, "the run's long step", func() bool {
			st, b := call(t, "GET", ts.URL+"/threads/"+tid+"/state", a, nil)
			return st == 200 && strings.Contains(string(b), `"next":["work"]`)
		})
	}

	t.Run("running per key", func(t *testing.T) {
		msg := refused(t, ts, 429, "POST", "/threads/"+tids[2]+"/runs", a, map[string]any{"assistant_id": "slow", "input": forever})
		if !strings.Contains(msg, "running runs per key") || !strings.Contains(msg, "2 threads") {
			t.Errorf("message %s: want the quota and its limit", msg)
		}
		refused(t, ts, 429, "POST", "/runs/wait", a, map[string]any{"assistant_id": "demo", "input": map[string]any{}})
		refused(t, ts, 429, "POST", "/v1/chat/completions", a, map[string]any{"model": "echo", "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
		// Key b has slots of its own.
		threads := storedRows(t, ts).threads
		mustOK(t, "POST", ts.URL+"/runs/wait", b, map[string]any{"assistant_id": "demo", "input": map[string]any{"title": "b"}})
		// The run's temporary thread is deleted after its answer went out:
		// the next subtests count rows, so it must be gone first.
		waitFor(t, "the stateless run's thread deleted", func() bool { return storedRows(t, ts).threads == threads })
	})
	t.Run("queued per thread", func(t *testing.T) {
		queue := map[string]any{"assistant_id": "slow", "input": forever, "multitask_strategy": "enqueue"}
		for range 2 {
			run := mustOK(t, "POST", ts.URL+"/threads/"+tids[0]+"/runs", a, queue)
			running = append(running, "/threads/"+tids[0]+"/runs/"+run["run_id"].(string))
		}
		msg := refused(t, ts, 429, "POST", "/threads/"+tids[0]+"/runs", a, queue)
		if !strings.Contains(msg, "queued runs per thread") {
			t.Errorf("message %s: want the quota", msg)
		}
		// reject on a busy thread is still a 409, not a quota.
		if st, b := call(t, "POST", ts.URL+"/threads/"+tids[0]+"/runs", a, map[string]any{"assistant_id": "slow", "input": forever}); st != 409 {
			t.Errorf("reject on a busy thread: %d %s", st, b)
		}
	})
	t.Run("queued per key", func(t *testing.T) {
		body := map[string]any{"assistant_id": "slow", "input": forever, "multitask_strategy": "enqueue"}
		run := mustOK(t, "POST", ts.URL+"/threads/"+tids[1]+"/runs", a, body) // a's third waiting run
		running = append(running, "/threads/"+tids[1]+"/runs/"+run["run_id"].(string))
		msg := refused(t, ts, 429, "POST", "/threads/"+tids[1]+"/runs", a, body)
		if !strings.Contains(msg, "queued runs per key") {
			t.Errorf("message %s: want the quota", msg)
		}
	})
	t.Run("threads per key", func(t *testing.T) {
		createThread(t, ts.URL, a) // the fifth
		msg := refused(t, ts, 429, "POST", "/threads", a, map[string]any{})
		if !strings.Contains(msg, "threads per key") || !strings.Contains(msg, "5 threads") {
			t.Errorf("message %s: want the quota and its limit", msg)
		}
		refused(t, ts, 429, "POST", "/threads/"+tids[3]+"/copy", a, nil)
		refused(t, ts, 429, "POST", "/threads/new-one/runs", a, map[string]any{"assistant_id": "demo", "if_not_exists": "create"})
		createThread(t, ts.URL, b)
	})
}

// The size limits apply without keys too: 413, nothing written.
func TestQuotaSizes(t *testing.T) {
	ts := startServer(t, server.Options{Quotas: server.Quotas{MaxInput: 100, MaxMetadata: 60}})
	big := strings.Repeat("x", 100)
	refused(t, ts, 413, "POST", "/threads", "", map[string]any{"metadata": map[string]string{"note": big}})
	tid := createThread(t, ts.URL, "")
	refused(t, ts, 413, "POST", "/threads/"+tid+"/runs/wait", "", map[string]any{"assistant_id": "demo", "input": map[string]string{"title": big}})
	refused(t, ts, 413, "POST", "/threads/"+tid+"/runs/wait", "", map[string]any{"assistant_id": "demo", "input": map[string]string{}, "metadata": map[string]string{"note": big}})
	mustOK(t, "PATCH", ts.URL+"/threads/"+tid, "", map[string]any{"metadata": map[string]string{"a": strings.Repeat("x", 40)}})
	refused(t, ts, 413, "PATCH", "/threads/"+tid, "", map[string]any{"metadata": map[string]string{"b": strings.Repeat("x", 40)}}) // merged: over
	if m := mustOK(t, "GET", ts.URL+"/threads/"+tid, "", nil)["metadata"].(map[string]any); len(m) != 1 {
		t.Errorf("metadata after the refused patch: %v", m)
	}
	tid = createThread(t, ts.URL, "")
	asked := mustOK(t, "POST", ts.URL+"/threads/"+tid+"/runs/wait", "", map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "hi", "ask": true}})
	if asked["__interrupt__"] == nil {
		t.Fatalf("echo did not ask: %v", asked)
	}
	// An answer of the right shape, made long by the spaces in it.
	refused(t, ts, 413, "POST", "/threads/"+tid+"/runs/wait", "", `{"assistant_id":"echo","command":{"resume":{"accept":`+strings.Repeat(" ", 100)+`true}}}`)
	if st := mustOK(t, "GET", ts.URL+"/threads/"+tid, "", nil)["status"]; st != "interrupted" {
		t.Errorf("after the refused resume the thread is %v, want it still asking", st)
	}
}

// The rate limit is a token bucket per key: a key past its burst gets 429
// with Retry-After and writes nothing, another key is served, and a
// server without keys is not limited unless Keyless says so.
func TestQuotaRate(t *testing.T) {
	slow := server.Quotas{RatePerKey: 0.001, Burst: 3} // one request in 1,000 s after the burst
	ts := startServer(t, server.Options{Keys: []string{"key-a", "key-b"}, Quotas: slow})
	for range 3 {
		mustOK(t, "GET", ts.URL+"/assistants/demo", "key-a", nil)
	}
	msg := refused(t, ts, 429, "POST", "/threads", "key-a", map[string]any{})
	if !strings.Contains(msg, "rate limit") || !strings.Contains(msg, "0.001 requests a second") {
		t.Errorf("message %s: want the limit", msg)
	}
	createThread(t, ts.URL, "key-b")

	keyless := startServer(t, server.Options{Quotas: slow})
	for range 10 {
		mustOK(t, "GET", keyless.URL+"/assistants/demo", "", nil)
	}
	slow.Keyless = true
	limited := startServer(t, server.Options{Quotas: slow})
	for range 3 {
		mustOK(t, "GET", limited.URL+"/assistants/demo", "", nil)
	}
	refused(t, limited, 429, "POST", "/threads", "", map[string]any{})
}

// Quotas left zero take their defaults; -1 turns one off. A server gets
// them as Options.Quotas (loom serve: --max-threads, --rate, …).
func ExampleQuotas() {
	q := server.Quotas{ThreadsPerKey: 1000, RatePerKey: 20, Burst: 40, QueuedPerKey: -1}.WithDefaults()
	fmt.Println(q.ThreadsPerKey, q.RunningPerKey, q.QueuedPerThread, q.QueuedPerKey, q.RatePerKey, q.Burst, q.MaxInput, q.MaxMetadata)
	// Output: 1000 50 50 -1 20 40 262144 16384
}
