package schedule

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/store"
	"github.com/loomkit/loom/tool"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// openDB opens Loom's database on the SQLite file at path, with the
// agent's Migrations applied, as the server does; the test closes it.
func openDB(t *testing.T, path string) *store.DB {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(ctx, "schedule", Migrations); err != nil {
		t.Fatal(err)
	}
	return db
}

// process is one "process" of the agent: Loom's database on one SQLite
// file (its saver and the schedule store), and the compiled graph.
type process struct {
	path  string
	db    *store.DB
	saver checkpoint.Saver
	store *Store
	agent *Agent
	graph *graph.Compiled[State]
}

// start opens path (a new file in a temp dir when empty) with the sample
// schedule, and compiles the graph on it; opts change the agent's config.
func start(t *testing.T, path string, model llm.Model, opts ...func(*Config)) *process {
	t.Helper()
	ctx := context.Background()
	if path == "" {
		path = filepath.Join(t.TempDir(), "loom.db")
	}
	p := &process{path: path}
	var err error
	if p.db, err = store.Open(ctx, "sqlite://"+path); err != nil {
		t.Fatal(err)
	}
	if err := p.db.Migrate(ctx, "schedule", Migrations); err != nil {
		p.db.Close()
		t.Fatal(err)
	}
	p.saver, p.store = p.db.Saver(), NewStore(p.db)
	if _, err := p.store.EnsureSample(ctx, DefaultOwner); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Store: p.store, Model: model, Logger: quiet}
	for _, o := range opts {
		o(&cfg)
	}
	if p.agent, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	if p.graph, err = p.agent.Graph().Compile(graph.WithSaver(p.saver)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.stop)
	return p
}

// stop closes the process's files, as a killed process would leave them.
func (p *process) stop() {
	if p.db != nil {
		p.db.Close()
		p.db = nil
	}
}

// schedule loads the stored schedule.
func (p *process) schedule(t *testing.T) *Schedule {
	t.Helper()
	s, err := p.store.Load(context.Background(), DefaultOwner)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// say sends text to the thread the way a chat does: as the answer to the
// pending question (Resume) when resume is set and one is pending, else as
// a new message (Invoke).
func (p *process) say(t *testing.T, thread, text string, resume bool) *graph.Result[State] {
	t.Helper()
	ctx := context.Background()
	var res *graph.Result[State]
	var err error
	cp, gerr := p.saver.Get(ctx, thread, "")
	if resume && gerr == nil && cp.Interrupt != nil {
		ans, _ := parseAnswer(text)
		res, err = p.graph.Resume(ctx, thread, ans)
	} else {
		res, err = p.graph.Invoke(ctx, thread, func(s *State) { s.Message = text })
	}
	if err != nil {
		t.Fatalf("say %q: %v", text, err)
	}
	return res
}

// pendingKind names what a result waits on: plan, ask_user, tool:NAME,
// pause, or "" when it is done.
func pendingKind(t *testing.T, res *graph.Result[State]) string {
	t.Helper()
	if res.Status == graph.StatusDone {
		return ""
	}
	if res.Interrupt == nil {
		t.Fatalf("status %s without an interrupt", res.Status)
	}
	var c card
	if err := json.Unmarshal(res.Interrupt.Payload, &c); err != nil {
		t.Fatal(err)
	}
	switch {
	case c.Kind != "":
		return c.Kind
	case c.Tool != "":
		return "tool:" + c.Tool
	case c.Rounds > 0:
		return "pause"
	}
	return "unknown"
}

// toolCard decodes the tool card a result waits on.
func toolCard(t *testing.T, res *graph.Result[State]) (tool.ConfirmRequest, applyArgs) {
	t.Helper()
	var req tool.ConfirmRequest
	if res.Interrupt == nil || json.Unmarshal(res.Interrupt.Payload, &req) != nil || req.Tool == "" {
		t.Fatalf("not waiting on a tool card: %+v", res.Interrupt)
	}
	var args applyArgs
	if err := json.Unmarshal(req.Args, &args); err != nil {
		t.Fatal(err)
	}
	return req, args
}

// events runs the thread with in and returns the kinds of the events.
func events(t *testing.T, g *graph.Compiled[State], thread string, in graph.Input[State]) map[graph.Kind]int {
	t.Helper()
	kinds := map[graph.Kind]int{}
	for e, err := range g.Stream(context.Background(), thread, in) {
		if err != nil {
			t.Fatal(err)
		}
		kinds[e.Kind]++
	}
	return kinds
}
