package server_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomkit/loom/apps/demo"
	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/server"
)

// testAgents are the agents the tests serve: the demo, an echo agent that
// emits every kind of event and may ask, and a slow agent for busy
// threads, cancels, disconnects and shutdowns.
func testAgents(t testing.TB) *server.Registry {
	var r server.Registry
	for _, a := range []server.Agent{
		{
			Name: "demo", Description: "the demo checklist",
			InputSchema: server.InputSchemaFor[demo.Input](),
			Build:       server.Compile(demo.Graph()),
			FromChat:    func(text string) (json.RawMessage, error) { return json.Marshal(map[string]string{"title": text}) },
		},
		{
			Name: "echo", Description: "echoes with every kind of event",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"ask":{"type":"boolean"}}}`),
			Build:       server.Compile(echoGraph()),
			FromChat: func(text string) (json.RawMessage, error) {
				return json.Marshal(map[string]any{"text": text, "ask": strings.Contains(text, "ask")})
			},
			Reply: func(state json.RawMessage, pending *checkpoint.Interrupt) string {
				if pending != nil {
					return "Send it?"
				}
				var e echoState
				json.Unmarshal(state, &e)
				return fmt.Sprintf("sent=%v", e.Approved)
			},
		},
		{
			Name: "slow", Description: "takes steps of ms milliseconds",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"steps":{"type":"integer"},"ms":{"type":"integer"}}}`),
			Build:       server.Compile(slowGraph()),
		},
	} {
		if err := r.Register(a); err != nil {
			t.Fatal(err)
		}
	}
	return &r
}

type echoState struct {
	Text     string `json:"text"`
	Ask      bool   `json:"ask"`
	Reply    string `json:"reply"`
	Approved bool   `json:"approved"`
}

func echoGraph() *graph.Graph[echoState] {
	g := graph.New[echoState]("echo")
	g.Node("think", func(ctx context.Context, s echoState) (echoState, error) {
		graph.Emit(ctx, graph.KindReasoning, "thinking about "+s.Text)
		graph.Emit(ctx, graph.KindStatus, "looking it up")
		graph.Emit(ctx, graph.KindToolCall, map[string]any{"name": "lookup", "arguments": map[string]string{"q": s.Text}})
		graph.Emit(ctx, graph.KindToolResult, map[string]any{"name": "lookup", "result": "found"})
		graph.Emit(ctx, "note", map[string]int{"x": 1})
		s.Reply = ""
		for _, w := range strings.Fields("you said: " + s.Text) {
			graph.Emit(ctx, graph.KindToken, w+" ")
			s.Reply += w + " "
		}
		return s, nil
	}).
		Node("confirm", func(ctx context.Context, s echoState) (echoState, error) {
			if !s.Ask {
				return s, nil
			}
			a, err := graph.Ask[struct {
				Accept bool `json:"accept"`
			}](ctx, map[string]string{"question": "Send it?"})
			if err != nil {
				return s, err
			}
			s.Approved = a.Accept
			return s, nil
		}).
		Edge(graph.Start, "think").Edge("think", "confirm").Edge("confirm", graph.End)
	return g
}

type slowState struct {
	Steps int `json:"steps"`
	MS    int `json:"ms"`
	Done  int `json:"done"`
}

func slowGraph() *graph.Graph[slowState] {
	g := graph.New[slowState]("slow")
	g.Node("begin", func(_ context.Context, s slowState) (slowState, error) {
		s.Done = 0
		return s, nil
	})
	g.Node("work", func(ctx context.Context, s slowState) (slowState, error) {
		select {
		case <-time.After(time.Duration(s.MS) * time.Millisecond):
		case <-ctx.Done():
			return s, ctx.Err()
		}
		s.Done++
		graph.Emit(ctx, graph.KindStatus, fmt.Sprintf("step %d of %d", s.Done, s.Steps))
		return s, nil
	}).
		Edge(graph.Start, "begin").
		Edge("begin", "work").
		Route("work", func(s slowState) string {
			if s.Done < s.Steps {
				return "work"
			}
			return graph.End
		}, "work", graph.End).
		Loop("work", "work", 100000, graph.End)
	return g
}

// testServer is a server serving on a loopback port in this process.
type testServer struct {
	URL  string
	Path string // the SQLite file
	srv  *server.Server
	stop context.CancelFunc
	done chan error
}

// startServer serves opts (testAgents and a new database by default) on
// 127.0.0.1 and stops the server when the test ends.
func startServer(t testing.TB, opts server.Options) *testServer {
	t.Helper()
	if opts.Agents == nil {
		opts.Agents = testAgents(t)
	}
	if opts.Database == "" {
		opts.Database = filepath.Join(t.TempDir(), "loom.db")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	srv, err := server.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{URL: "http://" + ln.Addr().String(), Path: opts.Database, srv: srv, stop: cancel, done: make(chan error, 1)}
	go func() { ts.done <- srv.Serve(ctx, ln) }()
	t.Cleanup(ts.shutdown)
	return ts
}

// shutdown stops the server gracefully and closes it; it may be called
// more than once.
func (ts *testServer) shutdown() {
	if ts.srv == nil {
		return
	}
	ts.stop()
	<-ts.done
	ts.srv.Close()
	ts.srv = nil
}

// call makes a request with a JSON body (a string or bytes is sent as
// is) and returns the status and body.
func call(t testing.TB, method, url, key string, body any, header ...string) (int, []byte) {
	t.Helper()
	resp := do(t, method, url, key, body, header...)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func do(t testing.TB, method, url, key string, body any, header ...string) *http.Response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// mustJSON decodes b into a map, failing the test on error.
func mustJSON(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not a JSON object: %v: %s", err, b)
	}
	return m
}

// createThread makes a thread with key and returns its id.
func createThread(t testing.TB, url, key string) string {
	t.Helper()
	st, b := call(t, "POST", url+"/threads", key, map[string]any{})
	if st != 200 {
		t.Fatalf("create thread: %d %s", st, b)
	}
	return mustJSON(t, b)["thread_id"].(string)
}

// rows counts what the database holds, for asserting that a request
// wrote nothing.
type rows struct{ threads, runs, checkpoints int }

// countRows counts the rows of every thread but except.
func countRows(t testing.TB, path, except string) rows {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var r rows
	for q, dst := range map[string]*int{
		"SELECT count(*) FROM loom_threads WHERE id != ? AND id NOT LIKE ?":        &r.threads,
		"SELECT count(*) FROM loom_runs WHERE thread != ? AND thread NOT LIKE ?":   &r.runs,
		"SELECT count(*) FROM checkpoints WHERE thread != ? AND thread NOT LIKE ?": &r.checkpoints,
	} {
		// A keyed thread's rows are under its key, owner/id.
		if err := db.QueryRow(q, except, "%/"+except).Scan(dst); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
