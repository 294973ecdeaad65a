package server_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/loomkit/loom/checkpoint/sqlite"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/store"
	"github.com/loomkit/loom/store/storetest"
)

// refuseWrites makes the server's SQLite database refuse every write
// from now on, as a read-only file or a full disk would: PRAGMA
// query_only on the connection all its writes go through, so SQLite
// itself answers "attempt to write a readonly database" (SQLITE_READONLY).
// Unlike a file's permissions it holds for root, who runs CI.
func refuseWrites(t *testing.T, ts *testServer) {
	t.Helper()
	s, ok := ts.srv.Saver().(*sqlite.Saver)
	if !ok {
		t.Fatalf("saver is %T, want *sqlite.Saver", ts.srv.Saver())
	}
	err := s.Write(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `PRAGMA query_only = 1`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A database that stops taking writes while the server runs: reads go
// on; writes answer 503 database_unavailable with Retry-After and a
// message that names no file; /healthz and /readyz stop saying all is
// well.
func TestReadOnlyDatabase(t *testing.T) {
	ts := startServer(t, server.Options{})
	thread := createThread(t, ts.URL, "")
	for _, path := range []string{"/healthz", "/readyz"} {
		if st, b := call(t, "GET", ts.URL+path, "", nil); st != 200 {
			t.Fatalf("%s before: %d %s", path, st, b)
		}
	}

	refuseWrites(t, ts)

	// The checks see it once their last answer is stale (a second or two).
	waitFor(t, "healthz to report the database", func() bool {
		st, _ := call(t, "GET", ts.URL+"/healthz", "", nil)
		return st != 200
	})
	resp := do(t, "GET", ts.URL+"/healthz", "", nil)
	var health struct {
		Status   string   `json:"status"`
		Problems []string `json:"problems"`
	}
	json.NewDecoder(resp.Body).Decode(&health)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || health.Status != "degraded" || len(health.Problems) == 0 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("healthz: %d %+v, Retry-After %q; want 503 degraded naming the database, with Retry-After", resp.StatusCode, health, resp.Header.Get("Retry-After"))
	}
	st, b := call(t, "GET", ts.URL+"/readyz", "", nil)
	if ready := mustJSON(t, b); st != http.StatusServiceUnavailable || ready["status"] != "not_ready" || ready["database"] == "ok" {
		t.Errorf("readyz: %d %s; want 503 not_ready naming the database", st, b)
	}

	writes := []struct {
		name, method, path string
		body               any
	}{
		{"create a thread", "POST", "/threads", map[string]any{}},
		{"start a run", "POST", "/threads/" + thread + "/runs/wait", map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "hi"}}},
		{"update metadata", "PATCH", "/threads/" + thread, map[string]any{"metadata": map[string]any{"a": 1}}},
	}
	for _, w := range writes {
		resp := do(t, w.method, ts.URL+w.path, "", w.body)
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || e.Error.Code != "database_unavailable" {
			t.Errorf("%s: %d %+v; want 503 database_unavailable", w.name, resp.StatusCode, e.Error)
		}
		if resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s: no Retry-After", w.name)
		}
		for _, leak := range []string{ts.Path, "loom.db", "readonly", "sqlite"} {
			if strings.Contains(e.Error.Message, leak) {
				t.Errorf("%s: the message %q names %q", w.name, e.Error.Message, leak)
			}
		}
	}

	// Reads are served.
	if st, b := call(t, "GET", ts.URL+"/threads/"+thread, "", nil); st != 200 {
		t.Errorf("read a thread: %d %s", st, b)
	}
}

// /readyz names an agent whose Ready fails, with its reason on a server
// without keys (only its operator, on loopback, reaches it) and without
// it on one with keys; /healthz does not depend on agents.
func TestReadyzNamesAgentsNotReady(t *testing.T) {
	for _, keys := range [][]string{nil, {"key-a"}} {
		reg := testAgents(t)
		err := reg.Register(server.Agent{
			Name: "reports", Description: "depends on a source that is down",
			Build: server.Compile(echoGraph()),
			Ready: func(context.Context) error { return errors.New("source sales is unavailable: connection refused") },
		})
		if err != nil {
			t.Fatal(err)
		}
		ts := startServer(t, server.Options{Agents: reg, Keys: keys})
		st, b := call(t, "GET", ts.URL+"/readyz", "", nil)
		var ready struct {
			Status   string            `json:"status"`
			Database string            `json:"database"`
			Agents   map[string]string `json:"agents"`
		}
		if err := json.Unmarshal(b, &ready); err != nil {
			t.Fatalf("readyz: %v: %s", err, b)
		}
		if st != http.StatusServiceUnavailable || ready.Status != "not_ready" || ready.Database != "ok" || ready.Agents["echo"] != "ready" ||
			!strings.HasPrefix(ready.Agents["reports"], "not ready") {
			t.Errorf("keys %v: readyz %d %s; want 503 naming agent reports only", keys, st, b)
		}
		if withReason := strings.Contains(ready.Agents["reports"], "connection refused"); withReason != (len(keys) == 0) {
			t.Errorf("keys %v: readyz says %q", keys, ready.Agents["reports"])
		}
		if st, b := call(t, "GET", ts.URL+"/healthz", "", nil); st != 200 {
			t.Errorf("keys %v: healthz %d %s with an agent not ready", keys, st, b)
		}
	}
}

// A server on a PostgreSQL database that refuses writes (a standby, or
// here default_transaction_read_only) is refused at start with an error
// that says the database cannot be written.
func TestReadOnlyPostgresIsRefusedAtStart(t *testing.T) {
	dbURL := storetest.PostgresURL(t)
	// Made first, so that only the write the server needs is refused.
	srv, err := server.New(context.Background(), server.Options{Agents: testAgents(t), Database: dbURL, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	sep := "?"
	if strings.Contains(dbURL, "?") {
		sep = "&"
	}
	_, err = server.New(context.Background(), server.Options{Agents: testAgents(t), Logger: slog.New(slog.DiscardHandler),
		Database: dbURL + sep + "options=-c%20default_transaction_read_only%3Don"})
	if err == nil || !strings.Contains(err.Error(), "cannot be written") || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("New on a read-only database: %v; want an error saying it cannot be written", err)
	}
}
