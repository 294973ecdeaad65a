package cabin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomkit/loom/checkpoint/sqlite"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/server/servertest"
	"github.com/loomkit/loom/tool"
)

// stream posts to chat-stream and returns its lines and when each arrived.
func (a *api) stream(session, text string) ([]streamLine, []time.Duration) {
	a.t.Helper()
	b, _ := json.Marshal(ChatRequest{SessionID: session, Text: text})
	start := time.Now()
	resp, err := http.Post(a.url+"/api/v1/agent/chat-stream", "application/json", bytes.NewReader(b))
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		a.t.Errorf("content type %q", ct)
	}
	var lines []streamLine
	var at []time.Duration // when each line arrived
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var l streamLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			a.t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
		at = append(at, time.Since(start))
	}
	return lines, at
}

// slowTool carries out plugin: it takes d and then succeeds.
func slowTool(plugin string, d time.Duration) tool.Tool {
	return newTool(plugin, "slow", tool.Write, func(ctx context.Context, _ Args) (Result, error) {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return Result{}, ctx.Err()
		}
		return Result{Success: true, Message: "ok"}, nil
	})
}

// TestChatStream checks that a slow turn's ack reaches the client before
// the answer, served alone and mounted in Loom's server.
//
// Nothing here depends on the machine's speed: a turn that must answer
// without an ack has a minute to do so, and the slow one takes 2 s, so
// its ack comes well ahead of the answer on any machine.
func TestChatStream(t *testing.T) {
	fast := Options{AckAfter: time.Minute}
	slow := Options{AckAfter: 30 * time.Millisecond, Tools: []tool.Tool{slowTool("plugin.cabin.sunroof.open", 2*time.Second)}}
	t.Run("routes", func(t *testing.T) { chatStream(t, newAPI(t, fast), newAPI(t, slow)) })
	t.Run("loom", func(t *testing.T) { chatStream(t, mountInLoom(t, newApp(t, fast)), mountInLoom(t, newApp(t, slow))) })
}

// mountInLoom serves app's Routes through Loom's server as the agent's
// own routes, for an app built with options of a test's own.
func mountInLoom(t *testing.T, app *App) *api {
	t.Helper()
	agent := ServerAgent(ServerOptions{Logger: quiet})
	agent.Routes = func(srv *server.Server, _ graph.Runner) http.Handler { return Routes(app, srv) }
	var reg server.Registry
	if err := reg.Register(agent); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(context.Background(), server.Options{Agents: &reg, Database: filepath.Join(t.TempDir(), "loom.db"), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return &api{t: t, app: app, url: servertest.Serve(t, srv)}
}

func chatStream(t *testing.T, fast, slow *api) {
	for i, c := range []struct {
		a      *api
		text   string
		events []string
		says   string
	}{
		{fast, "打开车窗", []string{"final"}, "已打开车窗"},
		{slow, "打开天窗", []string{"ack", "final"}, "天窗已打开"},
	} {
		session := fmt.Sprint("s-", i) // a thread id in Loom's server
		lines, at := c.a.stream(session, c.text)
		var events []string
		for _, l := range lines {
			events = append(events, l.Event)
			if l.SessionID != session {
				t.Errorf("%s: line for session %q", c.text, l.SessionID)
			}
		}
		if strings.Join(events, ",") != strings.Join(c.events, ",") {
			t.Fatalf("%s: events %v, want %v", c.text, events, c.events)
		}
		final := lines[len(lines)-1].Reply
		if final == nil || !strings.Contains(final.Message, c.says) {
			t.Fatalf("%s: final %+v", c.text, final)
		}
		if len(lines) == 2 {
			if lines[0].Message == "" || final.Latency.FirstResponse >= final.Latency.Total {
				t.Errorf("ack %q; first response %.1fms, total %.1fms", lines[0].Message, final.Latency.FirstResponse, final.Latency.Total)
			}
			// The ack is flushed at once, not held back with the answer.
			if at[1]-at[0] < time.Second {
				t.Errorf("ack arrived at %v, the answer at %v: the ack was not sent ahead", at[0], at[1])
			}
		}
	}
}

func TestBadRequests(t *testing.T) {
	a := newAPI(t, Options{})
	for _, c := range []struct {
		method, path string
		body         any
		code         int
	}{
		{"POST", "/api/v1/agent/chat", map[string]string{"text": ""}, http.StatusBadRequest},
		{"POST", "/api/v1/agent/chat", map[string]any{"text": "打开车窗", "colour": "red"}, http.StatusBadRequest},
		{"POST", "/api/v1/agent/chat", "not an object", http.StatusBadRequest},
		{"GET", "/api/v1/agent/sessions/nobody", nil, http.StatusNotFound},
		{"GET", "/api/v1/cabin/orders/Z999", nil, http.StatusNotFound},
		{"GET", "/api/v1/agent/chat", nil, http.StatusMethodNotAllowed},
	} {
		var body map[string]any
		out := any(&body)
		if c.code == http.StatusMethodNotAllowed {
			out = nil // the mux answers in plain text
		}
		code := a.do(c.method, c.path, c.body, out)
		if code != c.code {
			t.Errorf("%s %s %v: HTTP %d, want %d", c.method, c.path, c.body, code, c.code)
		}
		if code != http.StatusMethodNotAllowed && body["error"] == nil {
			t.Errorf("%s %s: body %v has no error", c.method, c.path, body)
		}
	}
}

// The orders and the vehicles are visible through the API.
func TestBackendsVisible(t *testing.T) {
	a := newAPI(t, Options{})
	var list struct{ Orders []Order }
	if code := a.do("GET", "/api/v1/cabin/orders?user_id="+demoUser, nil, &list); code != http.StatusOK || len(list.Orders) != len(sampleOrders(time.Now())) {
		t.Fatalf("orders: HTTP %d, %d orders", code, len(list.Orders))
	}
	if v := a.vehicle("another-car"); !v.DoorsLocked || v.AC.Temperature != 24 || v.ID != "another-car" {
		t.Errorf("a new vehicle %+v", v)
	}
	r := a.chat("s", "打开空调")
	want(t, r, typeWorkflowResult, statusCompleted)
	info := a.session("s")
	if info.Session.VehicleID != "s" || info.Session.Memory["temperature"] != "24" || len(info.Session.History) != 1 {
		t.Errorf("session %+v", info.Session)
	}
}

// Turns of one session run one at a time; none is lost.
func TestConcurrentTurns(t *testing.T) {
	a := newAPI(t, Options{})
	const n = 8
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			b, _ := json.Marshal(ChatRequest{SessionID: "busy", Text: "打开车窗"})
			resp, err := http.Post(a.url+"/api/v1/agent/chat", "application/json", bytes.NewReader(b))
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("HTTP %d", resp.StatusCode)
				}
			}
			errs <- err
		}()
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if s := a.session("busy").Session; s.Turns != n {
		t.Errorf("%d turns recorded, want %d", s.Turns, n)
	}
}

// A session waiting for an answer survives a restart: another App on the
// same file answers it.
func TestRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "loom.db")
	open := func() (*App, func()) {
		saver, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		app, err := New(ctx, Options{Saver: saver, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		return app, func() { saver.Close() }
	}
	first, closeFirst := open()
	r, err := first.Chat(ctx, ChatRequest{SessionID: "s", Text: "导航"})
	if err != nil || r.Type != typeAskSlot {
		t.Fatalf("first: %+v, %v", r, err)
	}
	closeFirst()
	second, closeSecond := open()
	defer closeSecond()
	info, err := second.Session(ctx, "s")
	if err != nil || info.Pending == nil || info.Pending.Node != nodeFillSlots {
		t.Fatalf("after the restart: %+v, %v", info, err)
	}
	r, err = second.FillSlots(ctx, fillRequest{SessionID: "s", Text: "去机场"})
	if err != nil || r.Type != typeWorkflowResult || !strings.Contains(r.Message, "机场") {
		t.Fatalf("second: %+v, %v", r, err)
	}
	if v, _ := second.Store().Vehicle(ctx, defaultVehicle); v.Navigation.Destination != "机场" {
		t.Errorf("navigation %+v", v.Navigation)
	}
}
