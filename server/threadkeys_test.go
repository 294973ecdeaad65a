package server_test

import (
	"database/sql"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/loomkit/loom/server"
)

// TestThreadIDsPerKey: each key has its own thread ids. Two keys both
// create a thread "alice", run on it and read it back, and each sees only
// its own, under the id it gave, in every response that names a thread;
// a 409 for an id is about the caller's own thread only.
func TestThreadIDsPerKey(t *testing.T) {
	const keyA, keyB = "key-a", "key-b"
	ts := startServer(t, server.Options{Keys: []string{keyA, keyB}})
	for _, key := range []string{keyA, keyB} {
		st, b := call(t, "POST", ts.URL+"/threads", key, map[string]any{"thread_id": "alice"})
		if st != 200 || mustJSON(t, b)["thread_id"] != "alice" {
			t.Fatalf("%s creates alice: %d %s", key, st, b)
		}
	}
	st, b := call(t, "POST", ts.URL+"/threads", keyA, map[string]any{"thread_id": "alice"})
	if st != http.StatusConflict || !strings.Contains(string(b), "thread alice exists already") {
		t.Fatalf("A creates alice again: %d %s", st, b)
	}

	title := map[string]string{keyA: "A's list", keyB: "B's list"}
	for _, key := range []string{keyA, keyB} {
		resp := do(t, "POST", ts.URL+"/threads/alice/runs/wait", key, map[string]any{"assistant_id": "demo", "input": map[string]any{"title": title[key]}})
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s runs on alice: %d", key, resp.StatusCode)
		}
		if loc := resp.Header.Get("Content-Location"); !strings.HasPrefix(loc, "/threads/alice/runs/") {
			t.Errorf("%s: Content-Location %q, want /threads/alice/runs/…", key, loc)
		}
	}
	for _, key := range []string{keyA, keyB} {
		st, b := call(t, "GET", ts.URL+"/threads/alice/state", key, nil)
		if st != 200 {
			t.Fatalf("%s reads alice: %d %s", key, st, b)
		}
		var state struct {
			Values     struct{ Title string }
			Checkpoint struct {
				ThreadID string `json:"thread_id"`
			}
		}
		if err := json.Unmarshal(b, &state); err != nil {
			t.Fatal(err)
		}
		if state.Values.Title != title[key] || state.Checkpoint.ThreadID != "alice" {
			t.Errorf("%s's alice: title %q, checkpoint thread %q; want %q on alice", key, state.Values.Title, state.Checkpoint.ThreadID, title[key])
		}

		st, b = call(t, "GET", ts.URL+"/threads/alice/runs", key, nil)
		var runs []struct {
			ThreadID string `json:"thread_id"`
		}
		if err := json.Unmarshal(b, &runs); st != 200 || err != nil || len(runs) != 1 || runs[0].ThreadID != "alice" {
			t.Errorf("%s lists alice's runs: %d %s", key, st, b)
		}

		st, b = call(t, "POST", ts.URL+"/threads/search", key, map[string]any{"ids": []string{"alice"}})
		var found []struct {
			ThreadID string `json:"thread_id"`
			Values   struct{ Title string }
		}
		if err := json.Unmarshal(b, &found); st != 200 || err != nil || len(found) != 1 || found[0].ThreadID != "alice" || found[0].Values.Title != title[key] {
			t.Errorf("%s searches for alice: %d %s", key, st, b)
		}

		st, b = call(t, "POST", ts.URL+"/v1/chat/completions", key, map[string]any{"model": "demo", "thread_id": "chat",
			"messages": []map[string]string{{"role": "user", "content": title[key]}}})
		if st != 200 || mustJSON(t, b)["thread_id"] != "chat" {
			t.Errorf("%s chats on thread chat: %d %s", key, st, b)
		}
	}

	// Deleting A's alice leaves B's.
	if st, b := call(t, "DELETE", ts.URL+"/threads/alice", keyA, nil); st != http.StatusNoContent {
		t.Fatalf("A deletes alice: %d %s", st, b)
	}
	if st, _ := call(t, "GET", ts.URL+"/threads/alice", keyA, nil); st != http.StatusNotFound {
		t.Errorf("A's deleted alice: %d, want 404", st)
	}
	if st, b := call(t, "GET", ts.URL+"/threads/alice/state", keyB, nil); st != 200 || !strings.Contains(string(b), title[keyB]) {
		t.Errorf("B's alice after A deleted its own: %d %s", st, b)
	}
}

// TestThreadIDsPerKeyMigrate: a database whose keyed threads were stored
// under their bare ids, as before ids were per key, is migrated: the owner
// still reads its thread, with its runs and checkpoints, under its id.
func TestThreadIDsPerKeyMigrate(t *testing.T) {
	const key = "key-a"
	ts := startServer(t, server.Options{Keys: []string{key}})
	resp := do(t, "POST", ts.URL+"/runs/wait", key, map[string]any{"assistant_id": "demo", "input": map[string]any{"title": "old list"}})
	resp.Body.Close()
	st, b := call(t, "POST", ts.URL+"/threads", key, map[string]any{"thread_id": "old"})
	if st != 200 {
		t.Fatalf("create thread: %d %s", st, b)
	}
	resp = do(t, "POST", ts.URL+"/threads/old/runs/wait", key, map[string]any{"assistant_id": "demo", "input": map[string]any{"title": "old list"}})
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("run: %d", resp.StatusCode)
	}
	ts.shutdown()

	// Put the thread back as an earlier build stored it.
	db, err := sql.Open("sqlite", ts.Path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE checkpoints SET thread = 'old' WHERE thread LIKE '%/old'`,
		`UPDATE loom_runs SET thread = 'old' WHERE thread LIKE '%/old'`,
		`UPDATE loom_threads SET id = 'old' WHERE id LIKE '%/old'`,
		`DELETE FROM loom_schema_migrations WHERE component = 'server' AND version >= 3`,
	} {
		if res, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		} else if n, _ := res.RowsAffected(); n == 0 {
			t.Fatalf("%s changed nothing", q)
		}
	}
	for _, q := range []string{ // what migrations after 3 added
		`ALTER TABLE loom_runs DROP COLUMN recoveries`,
		`ALTER TABLE loom_runs DROP COLUMN recovered_from`,
		`DROP TABLE loom_probe`,
		`ALTER TABLE loom_threads DROP COLUMN job`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	ts = startServer(t, server.Options{Keys: []string{key}, Database: ts.Path})
	st, b = call(t, "GET", ts.URL+"/threads/old/state", key, nil)
	if st != 200 || !strings.Contains(string(b), "old list") {
		t.Fatalf("the migrated thread's state: %d %s", st, b)
	}
	st, b = call(t, "GET", ts.URL+"/threads/old/runs", key, nil)
	if st != 200 || !strings.Contains(string(b), `"thread_id":"old"`) {
		t.Errorf("the migrated thread's runs: %d %s", st, b)
	}
}
