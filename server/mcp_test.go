package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loomkit/loom/server"
)

// keyed adds an API key to each request.
type keyed struct{ key string }

func (k keyed) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if k.key != "" {
		r.Header.Set("Authorization", "Bearer "+k.key)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func mcpSession(t *testing.T, url, key string, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	s, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: &http.Client{Transport: keyed{key}}, MaxRetries: -1}, nil)
	if err == nil {
		t.Cleanup(func() { s.Close() })
	}
	return s, err
}

func callMCP(t *testing.T, s *mcp.ClientSession, tool string, args any) (*mcp.CallToolResult, map[string]any, string) {
	t.Helper()
	res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	var structured map[string]any
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &structured)
	}
	return res, structured, text.String()
}

// TestMCPServer: every agent is a tool of /mcp behind the API keys; a call
// streams progress and returns the reply; a question comes back with its
// thread id and a second call answers it; threads are resources of their
// key only.
func TestMCPServer(t *testing.T) {
	const keyA, keyB = "mcp-key-a", "mcp-key-b"
	ts := startServer(t, server.Options{Keys: []string{keyA, keyB}})

	if _, err := mcpSession(t, ts.URL, "", nil); err == nil {
		t.Fatal("a client without a key connected")
	}
	var mu sync.Mutex
	var progress []string
	a, err := mcpSession(t, ts.URL, keyA, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		progress = append(progress, r.Params.Message)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	tools, err := a.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var echo *mcp.Tool
	for _, tl := range tools.Tools {
		if tl.Name == "echo" {
			echo = tl
		}
	}
	if echo == nil || len(tools.Tools) != 3 {
		t.Fatalf("tools %v; want demo, echo and slow", tools.Tools)
	}
	schema, _ := json.Marshal(echo.InputSchema)
	for _, field := range []string{`"text"`, `"ask"`, `"thread_id"`, `"answer"`} {
		if !strings.Contains(string(schema), field) {
			t.Errorf("echo's schema lacks %s: %s", field, schema)
		}
	}

	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi", "ask": true}}
	params.SetProgressToken("p1")
	res, err := a.CallTool(t.Context(), params)
	if err != nil || res.IsError {
		t.Fatalf("call echo: %v %v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var first struct {
		ThreadID string `json:"thread_id"`
		Status   string `json:"status"`
	}
	json.Unmarshal(b, &first)
	text := res.Content[0].(*mcp.TextContent).Text
	if first.Status != "interrupted" || first.ThreadID == "" || !strings.Contains(text, first.ThreadID) || !strings.Contains(text, "Send it?") {
		t.Fatalf("a run that asks returned %s / %q; want the question with its thread id", b, text)
	}
	// The notification may be handled just after the result.
	waitFor(t, "the status line as a progress notification", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(progress) > 0 && progress[0] == "looking it up"
	})

	// An answer that is neither yes nor no asks again; the thread still waits.
	res, _, text = callMCP(t, a, "echo", map[string]any{"thread_id": first.ThreadID, "answer": "the weather is nice"})
	if !res.IsError || !strings.Contains(text, first.ThreadID) {
		t.Errorf("an unclear answer: error %v, %q; want the question again", res.IsError, text)
	}

	// Another key neither answers nor sees the thread.
	b2, err := mcpSession(t, ts.URL, keyB, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, _, text = callMCP(t, b2, "echo", map[string]any{"thread_id": first.ThreadID, "answer": "yes"})
	if !res.IsError || !strings.Contains(text, "not found") {
		t.Errorf("key B answering key A's thread: error %v, %q; want not found", res.IsError, text)
	}
	if list, err := b2.ListResources(t.Context(), nil); err != nil || len(list.Resources) != 0 {
		t.Errorf("key B's resources: %v, %v; want none", list, err)
	}
	if _, err := b2.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "loom://threads/" + first.ThreadID}); err == nil {
		t.Error("key B read key A's thread")
	}

	res, got, text := callMCP(t, a, "echo", map[string]any{"thread_id": first.ThreadID, "answer": "yes"})
	if res.IsError || got["status"] != "done" || got["thread_id"] != first.ThreadID || text != "sent=true" {
		t.Errorf("the answer: %v %q; want done, sent=true", got, text)
	}

	list, err := a.ListResources(t.Context(), nil)
	if err != nil || len(list.Resources) != 1 || list.Resources[0].Name != first.ThreadID {
		t.Fatalf("key A's resources: %v, %v; want its thread", list, err)
	}
	read, err := a.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: list.Resources[0].URI})
	if err != nil || !strings.Contains(read.Contents[0].Text, `"agent":"echo"`) {
		t.Errorf("read the thread: %v %v", read, err)
	}

	for _, bad := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"text": 5}, "text"},
		{map[string]any{"colour": "red"}, "colour"},
		{map[string]any{"thread_id": 7}, "thread_id must be a string"},
		{map[string]any{"answer": "yes"}, "needs thread_id"},
		{map[string]any{"thread_id": first.ThreadID, "answer": "no"}, "waits for no answer"},
		{map[string]any{"thread_id": first.ThreadID, "answer": "yes", "text": "x"}, "not both"},
		{map[string]any{"thread_id": "../../etc"}, "thread"},
	} {
		res, err := a.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: bad.args})
		if err != nil {
			if !strings.Contains(err.Error(), bad.want) {
				t.Errorf("echo %v: %v; want an error about %q", bad.args, err, bad.want)
			}
			continue
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if !res.IsError || !strings.Contains(text, bad.want) {
			t.Errorf("echo %v: error %v, %q; want an error about %q", bad.args, res.IsError, text, bad.want)
		}
	}
}

// TestMCPSDK runs sdktest/mcp.mjs, the official MCP TypeScript client,
// against a server with the agents loom serve registers.
func TestMCPSDK(t *testing.T) {
	const key = "mcp-sdk-key"
	ts := startServer(t, server.Options{Agents: servedAgents(t), Keys: []string{key}})
	runSDK(t, ts.URL, key, "", "mcp.mjs")
}
