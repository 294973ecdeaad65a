package server_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomkit/loom/apps/cabin"
	"github.com/loomkit/loom/apps/demo"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/server/servertest"
	"github.com/loomkit/loom/store/storetest"
)

// fuzzRoute is an endpoint the fuzz test drives: {tid}, {rid}, {cid} and
// {id} stand for a thread, a run, a checkpoint and another id.
type fuzzRoute struct {
	method, path string
	body         string // a seed body that fits
}

// fuzzRoutes are every endpoint of the server, and the cabin's mounted
// beside them as loom serve mounts them.
var fuzzRoutes = []fuzzRoute{
	{"GET", "/healthz", ""},
	{"GET", "/metrics", ""},
	{"POST", "/assistants/search", `{"graph_id":"demo","limit":5,"offset":0,"metadata":{"created_by":"system"}}`},
	{"POST", "/assistants/count", `{"name":"de"}`},
	{"GET", "/assistants/{id}", ""},
	{"GET", "/assistants/{id}/graph", ""},
	{"GET", "/assistants/{id}/schemas", ""},
	{"GET", "/assistants/{id}/subgraphs", ""},
	{"POST", "/threads", `{"metadata":{"a\"b":1,"user":"x"},"if_exists":"do_nothing"}`},
	{"POST", "/threads/search", `{"ids":["fuzz-t"],"metadata":{"a\"b":1},"status":"interrupted","limit":10,"offset":0,"sort_by":"created_at","sort_order":"asc"}`},
	{"POST", "/threads/count", `{"status":"idle"}`},
	{"GET", "/threads/{tid}", ""},
	{"PATCH", "/threads/{tid}", `{"metadata":{"k":"v"}}`},
	{"DELETE", "/threads/{tid}", ""},
	{"POST", "/threads/{tid}/copy", `{"values":{"text":"copied"}}`},
	{"GET", "/threads/{tid}/state", ""},
	{"GET", "/threads/{tid}/state/{cid}", ""},
	{"POST", "/threads/{tid}/state/checkpoint", `{"checkpoint":{"checkpoint_id":"{cid}"}}`},
	{"POST", "/threads/{tid}/state", `{"values":{"text":"edited"},"as_node":"think"}`},
	{"GET", "/threads/{tid}/history", ""},
	{"POST", "/threads/{tid}/history", `{"limit":2,"before":{"checkpoint_id":"{cid}"}}`},
	{"GET", "/threads/{tid}/stream", ""},
	{"POST", "/threads/{tid}/runs", `{"assistant_id":"echo","input":{"text":"hi"},"multitask_strategy":"enqueue"}`},
	{"POST", "/threads/{tid}/runs/wait", `{"assistant_id":"echo","command":{"resume":{"accept":true}}}`},
	{"POST", "/threads/{tid}/runs/stream", `{"assistant_id":"echo","input":{"text":"hi","ask":true},"stream_mode":["values","updates","messages","custom","debug"]}`},
	{"POST", "/runs", `{"assistant_id":"demo","input":{"title":"trip"}}`},
	{"POST", "/runs/wait", `{"assistant_id":"echo","input":{"text":"x"},"on_completion":"delete"}`},
	{"POST", "/runs/stream", `{"assistant_id":"demo","input":{},"stream_mode":"events"}`},
	{"GET", "/threads/{tid}/runs", ""},
	{"GET", "/threads/{tid}/runs/{rid}", ""},
	{"DELETE", "/threads/{tid}/runs/{rid}", ""},
	{"POST", "/threads/{tid}/runs/{rid}/cancel", ""},
	{"GET", "/threads/{tid}/runs/{rid}/join", ""},
	{"GET", "/threads/{tid}/runs/{rid}/stream", ""},
	{"GET", "/v1/models", ""},
	{"GET", "/v1/models/{id}", ""},
	{"POST", "/v1/chat/completions", `{"model":"echo","thread_id":"fuzz-chat","messages":[{"role":"user","content":"ask me"}]}`},
	{"POST", "/api/v1/agent/chat", `{"session_id":"fuzz-s","user_id":"demo","vehicle_id":"car-1","text":"取消订单A123"}`},
	{"POST", "/api/v1/agent/chat-stream", `{"session_id":"fuzz-s","text":"打开车窗"}`},
	{"POST", "/api/v1/agent/fill-slots", `{"session_id":"fuzz-s","slots":{"order_id":"A123"},"confirm":true}`},
	{"GET", "/api/v1/agent/sessions/{id}", ""},
	{"GET", "/api/v1/cabin/vehicles/{id}", ""},
	{"GET", "/api/v1/cabin/orders", ""},
	{"GET", "/api/v1/cabin/orders/{id}", ""},
	{"GET", "/api/v1/cabin/handoffs", ""},
}

// fuzzSeeds are inputs that broke the server once: the route (by method
// and path), the id, the query and the body.
var fuzzSeeds = []struct{ method, path, id, query, body string }{
	{"GET", "/threads/{tid}/runs", "", "offset=-1", ""},
	{"GET", "/threads/{tid}/runs", "", "limit=abc&status=nope", ""},
	{"GET", "/threads/{tid}/history", "", "limit=-1", ""},
	{"POST", "/threads/{tid}/runs/{rid}/cancel", "", "wait=maybe&action=rollback", ""},
	{"GET", "/threads/{tid}/stream", "", "stream_mode=values,bogus&cancel_on_disconnect=x", ""},
	{"POST", "/threads", "", "", "{\"metadata\":{\"k\":\"\xff\"}}"},
	{"POST", "/threads", "", "", `{"metadata":{"k":"\u0000"}}`},
	{"POST", "/threads/search", "", "", `{"metadata":{"a\"b":1,"\u0000":2}}`},
	{"POST", "/threads/search", "", "", `{"ids":["` + strings.Repeat(`a","`, 2000) + `b"]}`},
	{"POST", "/threads/search", "", "", `{"limit":-5,"offset":-1}`},
	{"POST", "/api/v1/agent/chat", "", "", `{"text":"` + strings.Repeat("x", 70<<10) + `"}`},
	{"POST", "/api/v1/agent/chat-stream", "", "", `{"session_id":"会话 1","text":"打开车窗"}`},
	{"POST", "/api/v1/agent/chat-stream", "", "", `{"text":""}`},
	{"GET", "/api/v1/agent/sessions/{id}", "nosuch", "", ""},
	{"GET", "/api/v1/agent/sessions/{id}", "a\x00b", "", ""},
	{"GET", "/api/v1/cabin/orders", "", "user_id=%00", ""},
	{"GET", "/api/v1/cabin/vehicles/{id}", "../../threads", "", ""},
	{"GET", "/threads/{tid}", "\x00", "", ""},
	{"GET", "/threads/{tid}/runs/{rid}/join", "..", "", ""},
	{"POST", "/threads/{tid}/runs/wait", "", "", `{"assistant_id":"echo","command":{"resume":"yes"}}`},
	{"POST", "/v1/chat/completions", "", "", `{"model":"echo","thread_id":"fuzz-t","messages":[{"role":"user","content":[1,2]}]}`},
	{"POST", "/threads/{tid}/state", "", "", `{"values":[1],"checkpoint_id":"nope"}`},
	{"POST", "/v1/chat/completions", "", "", `{"model":"cabin","thread_id":"fuzz-cabin","stream":true,"messages":[{"role":"user","content":"查订单A123，如果没发货就取消"}]}`},
	{"POST", "/v1/chat/completions", "", "", `{"model":"cabin","thread_id":"fuzz-cabin","messages":[{"role":"user","content":"{\"accept\":[1]}"}]}`},
	{"POST", "/v1/chat/completions", "", "", `{"model":"loom/demo","user":"fuzz-demo","messages":[{"role":"user","content":[{"type":"text","text":"trip"}]}]}`},
	{"POST", "/threads/{tid}/runs/wait", "fuzz-cabin-run", "", `{"assistant_id":"cabin","input":{"text":"打开车窗","fill_slots":{"position":"\u0000"}},"if_not_exists":"create"}`},
	{"POST", "/threads/{tid}/state", "", "", `{"values":{"text":"x"},"checkpoint_id":"\u0000"}`},
	{"POST", "/threads/{tid}/state/checkpoint", "", "", `{"checkpoint":{"checkpoint_id":"\u0000"}}`},
	{"POST", "/threads/{tid}/copy", "", "", `{"checkpoint_id":"a\u0000"}`},
	{"POST", "/threads/{tid}/runs/wait", "", "", `{"assistant_id":"echo","checkpoint_id":"\u0000"}`},
	{"POST", "/threads/{tid}/runs/wait", "", "", `{"assistant_id":"echo","input":{"text":"\u0000"},"metadata":{"\u0000":"\u0000"}}`},
}

// fuzzServer is the server a fuzz test drives: the demo and echo agents
// and the cabin, on SQLite in a temp dir, with one thread (fuzzThread)
// that waits for an answer.
type fuzzServer struct {
	url, key        string
	thread, run, cp string
	client          *http.Client
}

const fuzzThread = "fuzz-t"

// startFuzzServer serves the fuzz test's agents on the database at url.
func startFuzzServer(t testing.TB, url string) *fuzzServer {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	var reg server.Registry
	for _, a := range []server.Agent{
		{
			Name: "demo", Description: "the demo checklist",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}}}`),
			Build:       server.Compile(demo.Graph()),
		},
		{
			Name: "echo", Description: "echoes, and asks when told to",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"ask":{"type":"boolean"}}}`),
			Build:       server.Compile(echoGraph()),
			FromChat: func(text string) (json.RawMessage, error) {
				return json.Marshal(map[string]any{"text": text, "ask": strings.Contains(text, "ask")})
			},
		},
		cabin.ServerAgent(cabin.ServerOptions{Logger: quiet}),
	} {
		if err := reg.Register(a); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := server.New(context.Background(), server.Options{Agents: &reg, Database: url,
		Keys: []string{"fuzz-key"}, Logger: quiet,
		// Not the request rate (the fuzzer sends thousands a second) nor
		// the count of threads (it makes them by the thousand): every
		// request gets to its endpoint.
		Quotas: server.Quotas{RatePerKey: -1, Burst: -1, ThreadsPerKey: -1}})
	if err != nil {
		t.Fatal(err)
	}
	fs := &fuzzServer{url: servertest.Serve(t, srv), key: "fuzz-key", client: &http.Client{
		Timeout:       20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	fs.thread, fs.run, fs.cp = fs.newThread(t, fuzzThread)
	return fs
}

// newThread makes thread id (a fresh id when ""), with a run that waits
// for an answer, and returns the ids of the thread, the run and its head.
func (fs *fuzzServer) newThread(t testing.TB, id string) (thread, run, cp string) {
	t.Helper()
	st, b := call(t, "POST", fs.url+"/threads", fs.key, map[string]any{"thread_id": id})
	if st != 200 {
		t.Fatalf("create thread: %d %s", st, b)
	}
	thread = mustJSON(t, b)["thread_id"].(string)
	st, b = call(t, "POST", fs.url+"/threads/"+thread+"/runs/wait", fs.key, map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "hi", "ask": true}})
	if st != 200 {
		t.Fatalf("run: %d %s", st, b)
	}
	st, b = call(t, "GET", fs.url+"/threads/"+thread+"/runs", fs.key, nil)
	var runs []struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal(b, &runs); st != 200 || err != nil || len(runs) == 0 {
		t.Fatalf("list runs: %d %s", st, b)
	}
	st, b = call(t, "GET", fs.url+"/threads/"+thread+"/state", fs.key, nil)
	var state struct {
		Checkpoint struct {
			CheckpointID string `json:"checkpoint_id"`
		} `json:"checkpoint"`
	}
	if err := json.Unmarshal(b, &state); st != 200 || err != nil {
		t.Fatalf("state: %d %s", st, b)
	}
	return thread, runs[0].RunID, state.Checkpoint.CheckpointID
}

// defaultID is the {id} of a route when the fuzzer gives none: one that
// exists.
func defaultID(path string) string {
	for prefix, id := range map[string]string{"/assistants/": "demo", "/v1/models/": "loom/echo", "/api/v1/agent/sessions/": "fuzz-s",
		"/api/v1/cabin/orders/": "A123"} {
		if strings.HasPrefix(path, prefix) {
			return id
		}
	}
	return "car-1"
}

// escapeQuery makes s a query a client can send, as it came: bytes that
// may not stand in a request line are %-escaped, the rest left alone.
func escapeQuery(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == '#' || c >= 0x7f {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// request sends one fuzzed request: route r with id in its path (the
// fixtures when id is ""), query and body. It fails the test on a 5xx, or
// on a connection that broke instead of an answer.
func (fs *fuzzServer) request(t *testing.T, r fuzzRoute, id, query string, body []byte) {
	thread, run, cp := fs.thread, fs.run, fs.cp
	if r.method == "DELETE" && id == "" {
		thread, run, cp = fs.newThread(t, "") // deletes leave the fixture alone
	}
	path := r.path
	if id != "" {
		thread, run, cp = id, id, id
	}
	for k, v := range map[string]string{"{tid}": thread, "{rid}": run, "{cid}": cp, "{id}": cmp.Or(id, defaultID(r.path))} {
		path = strings.ReplaceAll(path, k, url.PathEscape(v))
	}
	body = bytes.ReplaceAll(body, []byte("{cid}"), []byte(fs.cp))
	req, err := http.NewRequest(r.method, fs.url+path, bytes.NewReader(body))
	if err != nil {
		return // not a request a client can send
	}
	req.URL.RawQuery = escapeQuery(query)
	req.Header.Set("Authorization", "Bearer "+fs.key)
	if len(body) > 0 {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := fs.client.Do(req)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return // a run that waits long; not an error of the server's
		}
		t.Fatalf("%s %s?%s %.300q: %v", r.method, path, query, body, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if resp.StatusCode >= 500 {
		t.Fatalf("%s %s?%s %.300q: HTTP %d %.500s", r.method, path, query, body, resp.StatusCode, out)
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "Client.Timeout") {
		t.Fatalf("%s %s?%s %.300q: HTTP %d, reading the answer: %v", r.method, path, query, body, resp.StatusCode, err)
	}
}

// FuzzEndpoints drives every endpoint with fuzzed ids, query parameters
// and bodies: no input may get a 5xx or break the connection (a panic).
// Its seeds, one per route and the inputs that once broke the server, run
// as a test under go test; go test -fuzz FuzzEndpoints searches further.
func FuzzEndpoints(f *testing.F) {
	for i, r := range fuzzRoutes {
		f.Add(uint8(i), "", "", []byte(r.body))
		f.Add(uint8(i), "", "limit=2&offset=1&wait=1&status=success&user_id=demo&stream_mode=values", []byte(r.body))
	}
	for _, s := range fuzzSeeds {
		i := -1
		for j, r := range fuzzRoutes {
			if r.method == s.method && r.path == s.path {
				i = j
			}
		}
		if i < 0 {
			f.Fatalf("seed for %s %s: no such route", s.method, s.path)
		}
		f.Add(uint8(i), s.id, s.query, []byte(s.body))
	}
	fs := startFuzzServer(f, filepath.Join(f.TempDir(), "loom.db"))
	f.Fuzz(func(t *testing.T, route uint8, id, query string, body []byte) {
		fs.request(t, fuzzRoutes[int(route)%len(fuzzRoutes)], id, query, body)
	})
}

// The fuzz test's seeds on PostgreSQL, which refuses some text SQLite
// takes (NUL): no 5xx there either.
func TestEndpointSeedsOnPostgres(t *testing.T) {
	fs := startFuzzServer(t, storetest.PostgresURL(t))
	for _, r := range fuzzRoutes {
		fs.request(t, r, "", "", []byte(r.body))
	}
	for _, s := range fuzzSeeds {
		for _, r := range fuzzRoutes {
			if r.method == s.method && r.path == s.path {
				fs.request(t, r, s.id, s.query, []byte(s.body))
			}
		}
	}
}
