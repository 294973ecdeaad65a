package cabin

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/store"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newApp builds an App over a real SQLite file in t.TempDir(), its
// sessions and (unless opts has a store) its simulated data in it.
func newApp(t testing.TB, opts Options) *App {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "loom.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	opts.Saver = db.Saver()
	if opts.Store == nil {
		opts.Store = openSQLStore(t, db)
	}
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	app, err := New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	return app
}

// api is an httptest server serving Routes over an App on SQLite.
type api struct {
	t   testing.TB
	app *App
	url string
	key string // sent as a bearer token when set
}

func newAPI(t testing.TB, opts Options) *api {
	t.Helper()
	app := newApp(t, opts)
	srv := httptest.NewServer(Routes(app, nil))
	t.Cleanup(srv.Close)
	return &api{t: t, app: app, url: srv.URL}
}

// do sends a request and decodes the JSON answer into out; it returns
// the status.
func (a *api) do(method, path string, body, out any) int {
	a.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			a.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.url+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if a.key != "" {
		req.Header.Set("Authorization", "Bearer "+a.key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			a.t.Fatalf("%s %s: decode answer: %v", method, path, err)
		}
	}
	return resp.StatusCode
}

// chat posts one turn and returns the reply; the session drives a vehicle
// of its own name.
func (a *api) chat(session, text string) Reply {
	a.t.Helper()
	var r Reply
	if code := a.do("POST", "/api/v1/agent/chat", ChatRequest{SessionID: session, VehicleID: session, Text: text}, &r); code != http.StatusOK {
		a.t.Fatalf("chat %q: HTTP %d", text, code)
	}
	return r
}

// fill posts to fill-slots and returns the reply.
func (a *api) fill(req fillRequest) Reply {
	a.t.Helper()
	var r Reply
	if code := a.do("POST", "/api/v1/agent/fill-slots", req, &r); code != http.StatusOK {
		a.t.Fatalf("fill-slots %+v: HTTP %d", req, code)
	}
	return r
}

// get reads the JSON answer of GET path, which must be 200.
func get[T any](a *api, path string) T {
	a.t.Helper()
	var v T
	if code := a.do("GET", path, nil, &v); code != http.StatusOK {
		a.t.Fatalf("GET %s: HTTP %d", path, code)
	}
	return v
}

func (a *api) vehicle(id string) Vehicle { return get[Vehicle](a, "/api/v1/cabin/vehicles/"+id) }

func (a *api) order(id string) Order { return get[Order](a, "/api/v1/cabin/orders/"+id) }

func (a *api) session(id string) sessionInfo {
	return get[sessionInfo](a, "/api/v1/agent/sessions/"+id)
}

// want checks a reply's type, status and that its message holds every
// part.
func want(t testing.TB, r Reply, typ, status string, parts ...string) {
	t.Helper()
	if r.Type != typ || r.Status != status {
		t.Errorf("reply %q: %s/%s, want %s/%s (decision %s: %s)", r.Message, r.Type, r.Status, typ, status, r.Debug.Decision, r.Debug.DecisionReason)
	}
	for _, p := range parts {
		if !strings.Contains(r.Message, p) {
			t.Errorf("reply %q lacks %q", r.Message, p)
		}
	}
}

// openSQLStore is the SQL store on db, its migrations applied as the server
// applies them.
func openSQLStore(t testing.TB, db *store.DB) *sqlStore {
	t.Helper()
	if err := db.Migrate(context.Background(), agentName, migrations); err != nil {
		t.Fatal(err)
	}
	return newSQLStore(db)
}
