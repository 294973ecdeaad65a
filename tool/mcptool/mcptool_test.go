package mcptool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/llm/llmtest"
	"github.com/loomkit/loom/llm/openai"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/mcptool"
)

// The test binary is also the MCP server the tests run over stdio: with
// MCPTOOL_TEST_SERVER=1 it serves and exits.
func TestMain(m *testing.M) {
	if os.Getenv("MCPTOOL_TEST_SERVER") == "1" {
		if err := testServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type lookupArgs struct {
	Item string `json:"item" jsonschema:"the item to look up"`
}

type deleteArgs struct {
	Item string `json:"item"`
}

var deleted atomic.Int32 // in the HTTP server's process

// testServer offers a read tool, a destructive tool, a tool that kills its
// own process mid-call, a tool that hangs, one that returns too much, and
// one that tells its environment.
func testServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "test-store", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "lookup", Description: "Look an item up", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, a lookupArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "item " + a.Item + ": 3 in stock"}}}, nil, nil
		})
	yes := true
	mcp.AddTool(s, &mcp.Tool{Name: "delete_item", Description: "Delete an item", Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}},
		func(_ context.Context, _ *mcp.CallToolRequest, a deleteArgs) (*mcp.CallToolResult, any, error) {
			deleted.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deleted " + a.Item}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Dies mid-call", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			os.Exit(3)
			return nil, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Never answers", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	mcp.AddTool(s, &mcp.Tool{Name: "flood", Description: "Returns a lot", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 100_000)}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Tells its environment", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(os.Environ(), "\n")}}}, nil, nil
		})
	return s
}

func stdioServer(t *testing.T) mcptool.Server {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return mcptool.Server{Name: "store", Command: exe, Env: map[string]string{"MCPTOOL_TEST_SERVER": "1", "GREETING": "$MCPTOOL_TEST_GREETING"},
		Timeout: "2s", MaxResult: 1000}
}

func find(t *testing.T, ts *mcptool.Toolset, name string) tool.Tool {
	t.Helper()
	for _, x := range ts.Tools() {
		if x.Name() == name {
			return x
		}
	}
	t.Fatalf("no tool %s", name)
	return tool.Tool{}
}

func TestStdioTools(t *testing.T) {
	t.Setenv("MCPTOOL_TEST_GREETING", "hello")
	t.Setenv("MCPTOOL_TEST_SECRET", "s3cret")
	ts, err := mcptool.Open(t.Context(), stdioServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	ctx := t.Context()

	if k := find(t, ts, "lookup").Kind(); k != tool.Read {
		t.Errorf("lookup (readOnlyHint) is %s, want read", k)
	}
	if k := find(t, ts, "delete_item").Kind(); k != tool.Write {
		t.Errorf("delete_item (destructiveHint) is %s, want write", k)
	}
	var schema map[string]any
	json.Unmarshal(find(t, ts, "lookup").Parameters(), &schema)
	if props, _ := schema["properties"].(map[string]any); props["item"] == nil {
		t.Errorf("lookup's schema lost the server's properties: %s", find(t, ts, "lookup").Parameters())
	}

	out, err := find(t, ts, "lookup").Call(ctx, json.RawMessage(`{"item":"pen"}`))
	if err != nil || out != "item pen: 3 in stock" {
		t.Errorf("lookup = %q, %v", out, err)
	}
	if _, err := find(t, ts, "lookup").Call(ctx, json.RawMessage(`{"item":7}`)); err == nil {
		t.Error("lookup with a number for item: no error")
	}

	env, err := find(t, ts, "env").Call(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(env, "s3cret") || strings.Contains(env, "PATH=") {
		t.Errorf("the server sees undeclared variables:\n%s", env)
	}
	if !strings.Contains(env, "GREETING=hello") {
		t.Errorf("the server does not see GREETING copied from $MCPTOOL_TEST_GREETING:\n%s", env)
	}

	flood, err := find(t, ts, "flood").Call(ctx, nil)
	if err != nil || len(flood) > 1100 || !strings.Contains(flood, "more bytes cut") {
		t.Errorf("flood: %d bytes, %v; want it cut at 1000 with a note", len(flood), err)
	}

	_, err = find(t, ts, "hang").Call(ctx, nil)
	if err == nil || !strings.Contains(err.Error(), "did not answer within 2s") {
		t.Errorf("hang: %v; want the timeout", err)
	}
	// A call the server refuses (no such tool) leaves the session sound.
	if _, err := find(t, ts, "lookup").Call(ctx, json.RawMessage(`{"item":"pen","extra":1}`)); err == nil {
		t.Error("lookup with an unknown argument: no error")
	}
	// The server still answers after a call timed out.
	if _, err := find(t, ts, "lookup").Call(ctx, json.RawMessage(`{"item":"pen"}`)); err != nil {
		t.Errorf("lookup after the timeout: %v", err)
	}
}

// TestReActWithMCPTools: the ReAct loop calls the read tool at once, waits
// for confirmation on the destructive one, and goes on after the server
// died in the middle of a call, which starts it again.
func TestReActWithMCPTools(t *testing.T) {
	ts, err := mcptool.Open(t.Context(), stdioServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	reg := tool.NewRegistry()
	if err := reg.Register("", "", ts.Tools()...); err != nil {
		t.Fatal(err)
	}
	decide := func(tool, args string) llmtest.Reply {
		return llmtest.Text(`<DECISION>{"action":"call_tool","tool":"` + tool + `","args":` + args + `}</DECISION>`)
	}
	fake := llmtest.New(t,
		decide("lookup", `{"item":"pen"}`),
		decide("delete_item", `{"item":"pen"}`),
		decide("crash", `{}`),
		decide("lookup", `{"item":"ink"}`),
		llmtest.Text(`<DECISION>{"action":"finish","answer":"done"}</DECISION>`),
	)
	m, err := openai.New(openai.Config{BaseURL: fake.BaseURL(), APIKey: "fake", Model: "scripted"})
	if err != nil {
		t.Fatal(err)
	}
	g, err := agent.New(agent.Config{Model: m, Tools: reg}).Compile(graph.WithSaver(checkpoint.NewMemory()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := g.Invoke(ctx, "t1", agent.Say("remove the pen"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != graph.StatusInterrupted || !strings.Contains(string(res.Interrupt.Payload), "delete_item") {
		t.Fatalf("want a confirmation of delete_item, got %s %s", res.Status, res.Interrupt.Payload)
	}
	if got := toolResults(res.State); len(got) != 1 || got[0] != "item pen: 3 in stock" {
		t.Fatalf("before the confirmation, results %q; want only lookup's", got)
	}
	res, err = g.Resume(ctx, "t1", tool.ConfirmAnswer{Accept: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != graph.StatusDone || res.State.Answer != "done" {
		t.Fatalf("run ended %s with %q", res.Status, res.State.Answer)
	}
	got := toolResults(res.State)
	want := []string{"item pen: 3 in stock", "deleted pen", "stopped during the call", "item ink: 3 in stock"}
	if len(got) != len(want) {
		t.Fatalf("tool results %q; want %d", got, len(want))
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("result %d = %q; want it to contain %q", i+1, got[i], want[i])
		}
	}
}

func toolResults(s agent.State) []string {
	var out []string
	for _, m := range s.Messages {
		if m.Role == "tool" {
			out = append(out, m.Content)
		}
	}
	return out
}

// TestHTTPServer reaches a Streamable HTTP server with a header from the
// environment, and reports a server that is gone.
func TestHTTPServer(t *testing.T) {
	t.Setenv("MCPTOOL_TEST_TOKEN", "tok")
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return testServer() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	cfg := mcptool.Server{Name: "remote", URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer $MCPTOOL_TEST_TOKEN"}, Prefix: "r_"}
	ts, err := mcptool.Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	before := deleted.Load()
	out, err := find(t, ts, "r_delete_item").Call(t.Context(), json.RawMessage(`{"item":"cup"}`))
	if err != nil || out != "deleted cup" || deleted.Load() != before+1 {
		t.Errorf("r_delete_item = %q, %v", out, err)
	}
	srv.Close()
	if _, err := find(t, ts, "r_lookup").Call(t.Context(), json.RawMessage(`{"item":"cup"}`)); err == nil {
		t.Error("a call to a server that is gone: no error")
	}

	cfg.Headers = nil
	if _, err := mcptool.Open(t.Context(), cfg); err == nil {
		t.Error("Open without the token: no error")
	}
}

func TestParse(t *testing.T) {
	good := `servers:
  - name: files
    command: mcp-files
    args: [--root, /data]
    env: {HOME: /tmp}
    agents: [sqlagent]
  - name: web
    url: https://mcp.example.com/mcp
    headers: {Authorization: "Bearer $WEB_TOKEN"}
`
	c, err := mcptool.Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.For("sqlagent"); len(got) != 2 {
		t.Errorf("sqlagent gets %d servers, want 2", len(got))
	}
	if got := c.For("cabin"); len(got) != 1 || got[0].Name != "web" {
		t.Errorf("cabin gets %v, want web", got)
	}
	for _, bad := range []struct{ doc, want string }{
		{`servers: [{name: a}]`, "give command"},
		{`servers: [{name: a, command: x, url: "http://h"}]`, "not both"},
		{`servers: [{name: a, url: "file:///etc/passwd"}]`, "http or https"},
		{`servers: [{name: a, url: "http://u:p@h/"}]`, "credentials"},
		{`servers: [{name: "a b", command: x}]`, "name must be"},
		{`servers: [{name: a, command: x, timeout: soon}]`, "timeout"},
		{`servers: [{name: a, command: x}, {name: a, command: y}]`, "named twice"},
		{`servers: [{name: a, command: x, shell: true}]`, "shell"},
		{`{"servers": [`, "MCP servers"},
	} {
		if _, err := mcptool.Parse([]byte(bad.doc)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Parse(%s) = %v; want an error about %q", bad.doc, err, bad.want)
		}
	}
}
