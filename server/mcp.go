package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
)

// mcpRoutes serves /mcp: the Model Context Protocol over Streamable HTTP,
// behind the API's keys. Every agent is a tool; a call runs the agent on
// a thread of the caller's, given or new, sends its status lines as
// progress notifications, and returns the agent's reply. A run that stops
// for a question returns the question with the thread id: a second call
// with thread_id and answer resumes it. Resources are the caller's
// threads.
//
// The endpoint is stateless: each request gets a server for the key that
// sent it, so no session can cross keys.
func (s *Server) mcpRoutes() {
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		return s.mcpServer(Caller(r.Context()))
	}, &mcp.StreamableHTTPOptions{
		Stateless: true,
		// The server's own Host and Origin checks guard every route.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        s.opts.MaxBody,
		Logger:                     s.log,
	})
	s.HandleAPI("/mcp", h)
}

// mcpServer is the MCP server one key sees.
func (s *Server) mcpServer(owner string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "loom", Title: "Loom", Version: "1"}, &mcp.ServerOptions{
		Instructions: "Each tool is a Loom agent. A reply that asks a question names the thread_id: call the same tool again with that thread_id and your answer.",
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Resources: &mcp.ResourceCapabilities{}},
	})
	for _, name := range s.order {
		a := s.agents[name]
		desc := a.Description
		if a.DescriptionZh != "" {
			desc += "\n" + a.DescriptionZh
		}
		srv.AddTool(&mcp.Tool{Name: a.Name, Description: desc, InputSchema: mcpSchema(a)}, s.mcpCall(owner, a))
	}
	srv.AddResourceTemplate(&mcp.ResourceTemplate{
		Name: "thread", URITemplate: "loom://threads/{thread_id}", MIMEType: "application/json",
		Description: "A thread: its agent, status and latest state.",
	}, s.mcpThread(owner))
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "resources/list" {
				return s.mcpThreads(ctx, owner)
			}
			return next(ctx, method, req)
		}
	})
	return srv
}

// mcpSchema is an agent's input schema with the fields of an MCP call:
// thread_id and answer. Nothing is required: a call that answers gives
// no input.
func mcpSchema(a *builtAgent) json.RawMessage {
	schema := map[string]any{}
	if a.InputSchema != nil {
		_ = json.Unmarshal(a.InputSchema, &schema)
	}
	props, _ := schema["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	props["thread_id"] = map[string]any{"type": "string",
		"description": "the thread to run on; without it a new thread is made. Give it with answer to answer the question the thread waits on."}
	props["answer"] = map[string]any{"type": "string",
		"description": "the answer to the question a thread waits on (with thread_id), such as yes, no, or a JSON value"}
	schema["type"], schema["properties"] = "object", props
	delete(schema, "required")
	delete(schema, "$schema")
	b, _ := json.Marshal(schema)
	return b
}

// mcpFields lists the fields of a's input and of an MCP call, sorted;
// nil when the agent takes any object.
func mcpFields(a *builtAgent) []string {
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if a.InputSchema == nil || json.Unmarshal(a.InputSchema, &schema) != nil || len(schema.Properties) == 0 {
		return nil
	}
	known := []string{"answer", "thread_id"}
	for name := range schema.Properties {
		known = append(known, name)
	}
	slices.Sort(known)
	return slices.Compact(known)
}

// mcpResult is a call's structured result.
type mcpResult struct {
	ThreadID string          `json:"thread_id"`
	RunID    string          `json:"run_id,omitempty"`
	Status   string          `json:"status"` // done, interrupted
	Reply    string          `json:"reply"`
	Question json.RawMessage `json:"question,omitempty"`
}

// mcpFailed is a tool error: text the calling model can read.
func mcpFailed(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

// mcpError turns an API error into a tool error: its message when it is
// the caller's to fix, else the error's id.
func (s *Server) mcpError(ctx context.Context, err error) *mcp.CallToolResult {
	ae := toAPI(err)
	if ae.status >= 500 {
		s.log.ErrorContext(ctx, "MCP call failed", "error_id", ErrorID(err), "err", err)
	}
	return mcpFailed("%s", ae.message)
}

// mcpCall runs agent a for a tool call of owner's.
func (s *Server) mcpCall(owner string, a *builtAgent) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := map[string]json.RawMessage{}
		if raw := req.Params.Arguments; len(raw) > 0 && string(raw) != "null" {
			if err := json.Unmarshal(raw, &args); err != nil {
				return mcpFailed("arguments must be a JSON object"), nil
			}
		}
		var tid, answer string
		for name, dst := range map[string]*string{"thread_id": &tid, "answer": &answer} {
			if v, ok := args[name]; ok {
				if err := json.Unmarshal(v, dst); err != nil {
					return mcpFailed("%s must be a string", name), nil
				}
				delete(args, name)
			}
		}
		if answer != "" && tid == "" {
			return mcpFailed("answer needs thread_id: the thread whose question it answers"), nil
		}
		if known := mcpFields(a); known != nil {
			for name := range args {
				if !slices.Contains(known, name) {
					return mcpFailed("unknown field %q: agent %s takes %s", name, a.Name, strings.Join(known, ", ")), nil
				}
			}
		}
		rr := runRequest{AssistantID: a.Name, IfNotExists: "create"}
		if tid == "" {
			tid = checkpoint.NewID()
		} else if err := checkThreadID(tid); err != nil {
			return s.mcpError(ctx, err), nil
		}
		if answer != "" {
			if len(args) > 0 {
				return mcpFailed("give answer or the agent's input, not both"), nil
			}
			resume, failed := s.mcpAnswer(ctx, owner, a, tid, answer)
			if failed != nil {
				return failed, nil
			}
			rr.Command = &struct {
				Resume json.RawMessage `json:"resume"`
				Update json.RawMessage `json:"update"`
				Goto   json.RawMessage `json:"goto"`
			}{Resume: resume}
		} else {
			in, _ := json.Marshal(args)
			rr.Input = in
		}
		run, err := s.prepareRun(ctx, tid, owner, &rr, nil)
		if err != nil {
			return s.mcpError(ctx, err), nil
		}
		token := req.Params.GetProgressToken()
		var end event
		steps := 0
		err = s.follow(ctx, run.feed, 0, func(e *event) error {
			if e.terminal() {
				end = *e
				return nil
			}
			if token == nil || e.Kind != graph.KindStatus {
				return nil
			}
			var line string
			if json.Unmarshal(e.Data, &line) != nil {
				line = strings.Trim(string(e.Data), `"`)
			}
			steps++
			// A client that cannot take the notification still gets
			// the result.
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(steps), Message: line})
			return nil
		}, nil, nil)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err() // the client went away; the run goes on
			}
			return s.mcpError(ctx, fmt.Errorf("follow run %s: %w", run.id, err)), nil
		}
		if end.Kind == graph.KindError {
			return mcpFailed("run %s on thread %s failed: %s", run.id, publicID(run.thread), end.Err), nil
		}
		res := mcpResult{ThreadID: publicID(run.thread), RunID: run.id, Status: "done", Reply: strings.TrimSpace(a.reply(end.Data, end.Interrupt))}
		text := res.Reply
		if end.Interrupt != nil {
			res.Status, res.Question = "interrupted", end.Interrupt.Payload
			text += "\n\n" + mcpAskHint(text, a.Name, res.ThreadID)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: res}, nil
	}
}

// mcpAskHint tells the client how to answer, in the language of the
// question.
func mcpAskHint(question, agent, thread string) string {
	if speaksChinese(question) {
		return fmt.Sprintf("（等待回答：再次调用 %s，带上 thread_id \"%s\" 和 answer。）", agent, thread)
	}
	return fmt.Sprintf("(Waiting for an answer: call %s again with thread_id \"%s\" and answer.)", agent, thread)
}

// mcpAnswer turns answer into the value that resumes the question thread
// tid waits on, or a tool error saying why it cannot.
func (s *Server) mcpAnswer(ctx context.Context, owner string, a *builtAgent, tid, answer string) (json.RawMessage, *mcp.CallToolResult) {
	t, err := s.thread(ctx, tid, owner)
	if err != nil {
		return nil, s.mcpError(ctx, err)
	}
	if t.Agent != "" && t.Agent != a.Name {
		return nil, mcpFailed("thread %s holds runs of agent %s, not %s", tid, t.Agent, a.Name)
	}
	if t.Status == StatusBusy {
		return nil, mcpFailed("thread %s is running; answer once it asks", tid)
	}
	cp, err := s.head(ctx, t.ID)
	if err != nil {
		return nil, s.mcpError(ctx, err)
	}
	if cp == nil || cp.Interrupt == nil {
		return nil, mcpFailed("thread %s waits for no answer; call without answer to go on", tid)
	}
	resume, err := a.answer(answer, cp.Interrupt)
	if err == nil {
		err = graph.CheckAnswer(cp.Interrupt, resume)
	}
	if err != nil {
		asked := strings.TrimSpace(a.reply(cp.State, cp.Interrupt))
		return nil, mcpFailed("%s\n\n%s", question(asked), mcpAskHint(asked, a.Name, tid))
	}
	return resume, nil
}

// mcpThreads lists owner's threads, the latest first, as resources.
func (s *Server) mcpThreads(ctx context.Context, owner string) (*mcp.ListResourcesResult, error) {
	ts, err := s.records.searchThreads(ctx, owner, threadQuery{Limit: 100, SortBy: "updated_at", Desc: true})
	if err != nil {
		return nil, fmt.Errorf("list threads: %w", err)
	}
	out := &mcp.ListResourcesResult{Resources: []*mcp.Resource{}}
	for _, t := range ts {
		id := publicID(t.ID)
		title := t.Agent
		if title == "" {
			title = "thread"
		}
		out.Resources = append(out.Resources, &mcp.Resource{
			URI: "loom://threads/" + url.PathEscape(id), Name: id, Title: title + " · " + t.Status,
			MIMEType: "application/json", Description: fmt.Sprintf("%s thread, %s, updated %s", title, t.Status, t.Updated.UTC().Format("2006-01-02 15:04")),
		})
	}
	return out, nil
}

// mcpThread reads one of owner's threads: its agent, status and state.
func (s *Server) mcpThread(owner string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		raw, ok := strings.CutPrefix(uri, "loom://threads/")
		id, err := url.PathUnescape(raw)
		if !ok || err != nil || checkThreadID(id) != nil {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		t, err := s.thread(ctx, id, owner)
		if err != nil {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		body := map[string]any{"thread_id": id, "agent": t.Agent, "status": t.Status}
		if cp, err := s.head(ctx, t.ID); err == nil && cp != nil {
			body["values"] = cp.State
			if cp.Interrupt != nil {
				body["question"] = cp.Interrupt.Payload
			}
		}
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encode thread %s: %w", id, err)
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
	}
}
