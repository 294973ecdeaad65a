// Package llmtest is a fake OpenAI-compatible chat completions endpoint for
// tests. It answers with scripted replies in order, or with replies computed
// from each request, whole or streamed as the request asks, and it can
// script the faults a real provider has: rate limits with Retry-After,
// server errors, hangs, truncated streams and malformed JSON. It also
// serves /embeddings with deterministic vectors (see Embedding), without
// using the script. It records every request for assertions.
//
//	srv := llmtest.New(t, llmtest.Text("hello"))
//	m, _ := openai.New(openai.Config{BaseURL: srv.BaseURL(), Model: "test"})
//	resp, err := m.Generate(ctx, []llm.Message{llm.User("hi")})
package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loomkit/loom/llm"
)

// Server is a fake OpenAI-compatible endpoint over real HTTP. It is safe for
// concurrent use; replies are taken in the order requests arrive.
type Server struct {
	// URL is the server's root, e.g. http://127.0.0.1:41234. The chat
	// endpoint is at URL + "/v1/chat/completions" (and, for clients that
	// are given URL itself as the base, URL + "/chat/completions"); the
	// embeddings endpoint likewise at "/v1/embeddings".
	URL string

	t     testing.TB
	srv   *httptest.Server
	quit  chan struct{}
	close sync.Once

	mu       sync.Mutex
	script   []Reply
	handler  func(Request) Reply
	requests []Request
}

// New starts a server that answers with replies in order and closes it when
// the test ends. A request that finds no reply left (and no handler set with
// Handle) fails the test and gets a 500.
func New(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	s := Start(replies...)
	s.t = t
	t.Cleanup(s.Close)
	return s
}

// Start starts a server outside a test, for examples and demos; the caller
// closes it. A request that finds no reply left gets a 500.
func Start(replies ...Reply) *Server {
	s := &Server{quit: make(chan struct{}), script: append([]Reply(nil), replies...)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// BaseURL returns the base URL an OpenAI client should use: URL + "/v1".
// It works as OPENAI_BASE_URL.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Add appends replies to the script.
func (s *Server) Add(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, replies...)
}

// Handle sets a function that computes the reply to a request. It is used
// once the scripted replies are used up.
func (s *Server) Handle(f func(Request) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = f
}

// Requests returns the requests received so far, in order of arrival.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Pending returns how many scripted replies have not been used.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script)
}

// Close releases hanging requests and shuts the server down. New arranges
// for it to be called when the test ends; calling it earlier simulates a
// provider that went away.
func (s *Server) Close() {
	s.close.Do(func() {
		close(s.quit)
		s.srv.Close()
	})
}

// Request is a request the server received.
type Request struct {
	// Method and Path are the HTTP method and URL path.
	Method, Path string
	// Header holds the request headers.
	Header http.Header
	// Body is the decoded JSON body; nil if the body was not JSON.
	Body map[string]any
	// Raw is the body as sent.
	Raw []byte
}

// Stream reports whether the request asked for a streamed answer.
func (r Request) Stream() bool {
	b, _ := r.Body["stream"].(bool)
	return b
}

// Model returns the model the request named.
func (r Request) Model() string {
	m, _ := r.Body["model"].(string)
	return m
}

// Messages decodes the request's messages. Content given as a list of
// parts is joined; reasoning is read from reasoning_content or reasoning.
func (r Request) Messages() []llm.Message {
	var wire struct {
		Messages []struct {
			Role             string          `json:"role"`
			Content          json.RawMessage `json:"content"`
			ReasoningContent string          `json:"reasoning_content"`
			Reasoning        string          `json:"reasoning"`
			ToolCallID       string          `json:"tool_call_id"`
			ToolCalls        []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(r.Raw, &wire); err != nil {
		return nil
	}
	out := make([]llm.Message, 0, len(wire.Messages))
	for _, m := range wire.Messages {
		msg := llm.Message{Role: llm.Role(m.Role), Content: textOf(m.Content), ToolCallID: m.ToolCallID, Reasoning: m.ReasoningContent}
		if msg.Reasoning == "" {
			msg.Reasoning = m.Reasoning
		}
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		out = append(out, msg)
	}
	return out
}

// textOf reads message content that is a string or a list of text parts.
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := readAll(r)
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw}
	if err == nil {
		var body map[string]any
		if json.Unmarshal(raw, &body) == nil {
			req.Body = body
		}
	}

	s.mu.Lock()
	s.requests = append(s.requests, req)
	n := len(s.requests)
	s.mu.Unlock()

	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/embeddings") && req.Body != nil:
		s.embeddings(w, req)
		return
	case r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions"):
		writeError(w, http.StatusNotFound, fmt.Sprintf("llmtest: no endpoint %s %s", r.Method, r.URL.Path))
		return
	case req.Body == nil:
		writeError(w, http.StatusBadRequest, "llmtest: request body is not a JSON object")
		return
	}
	reply, ok := s.next(req)
	if !ok {
		if s.t != nil {
			s.t.Errorf("llmtest: request %d has no scripted reply", n)
		}
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("llmtest: no reply for request %d", n))
		return
	}

	if !s.wait(r, reply.Latency) {
		return
	}
	id := "chatcmpl-llmtest-" + strconv.Itoa(n)
	switch {
	case reply.Fault == FaultStatus:
		status := reply.Status
		if status == 0 {
			status = http.StatusInternalServerError
		}
		if reply.RetryAfter != "" {
			w.Header().Set("Retry-After", reply.RetryAfter)
		}
		writeError(w, status, fmt.Sprintf("llmtest: scripted status %d", status))
	case reply.Fault == FaultHang && (!req.Stream() || reply.FaultAfter == 0):
		s.hang(r)
	case req.Stream():
		s.stream(w, r, req, reply, id)
	default:
		s.whole(w, req, reply, id)
	}
}

// next takes the reply to req: the next scripted one, else the handler's.
func (s *Server) next(req Request) (Reply, bool) {
	s.mu.Lock()
	if len(s.script) > 0 {
		reply := s.script[0]
		s.script = s.script[1:]
		s.mu.Unlock()
		return reply, true
	}
	h := s.handler
	s.mu.Unlock()
	if h == nil {
		return Reply{}, false
	}
	return h(req), true
}

func readAll(r *http.Request) ([]byte, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(r.Body)
	return b.Bytes(), err
}

// wait sleeps for d unless the client or the server goes away first; it
// reports whether to go on.
func (s *Server) wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-r.Context().Done():
	case <-s.quit:
	}
	return false
}

func (s *Server) hang(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-s.quit:
	}
}

func writeError(w http.ResponseWriter, status int, msg string) {
	typ := "server_error"
	code := any(nil)
	switch {
	case status == http.StatusTooManyRequests:
		typ, code = "rate_limit_error", "rate_limit_exceeded"
	case status < 500:
		typ = "invalid_request_error"
	}
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": code, "param": nil}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (rep Reply) finish() string {
	switch {
	case rep.FinishReason != "":
		return rep.FinishReason
	case len(rep.ToolCalls) > 0:
		return "tool_calls"
	}
	return "stop"
}

func (rep Reply) reasoningField() string {
	if rep.ReasoningField != "" {
		return rep.ReasoningField
	}
	return "reasoning_content"
}

func (rep Reply) usage() map[string]any {
	u := llm.Usage{PromptTokens: 10, CompletionTokens: 20, TotalTokens: 30}
	if rep.Usage != nil {
		u = *rep.Usage
	}
	out := map[string]any{
		"prompt_tokens":     u.PromptTokens,
		"completion_tokens": u.CompletionTokens,
		"total_tokens":      u.TotalTokens,
	}
	if u.ReasoningTokens != 0 {
		out["completion_tokens_details"] = map[string]any{"reasoning_tokens": u.ReasoningTokens}
	}
	if u.CachedTokens != 0 {
		out["prompt_tokens_details"] = map[string]any{"cached_tokens": u.CachedTokens}
	}
	return out
}

func (s *Server) whole(w http.ResponseWriter, req Request, rep Reply, id string) {
	msg := map[string]any{"role": "assistant", "content": nil}
	if rep.Content != "" || len(rep.ToolCalls) == 0 {
		msg["content"] = rep.Content
	}
	if rep.Reasoning != "" {
		msg[rep.reasoningField()] = rep.Reasoning
	}
	if len(rep.ToolCalls) > 0 {
		calls := make([]any, len(rep.ToolCalls))
		for i, tc := range rep.ToolCalls {
			calls[i] = map[string]any{"id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": tc.Arguments}}
		}
		msg["tool_calls"] = calls
	}
	body, _ := json.Marshal(map[string]any{
		"id":      id,
		"object":  "chat.completion",
		"created": 0,
		"model":   req.Model(),
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": rep.finish(), "logprobs": nil}},
		"usage":   rep.usage(),
	})
	w.Header().Set("Content-Type", "application/json")
	switch rep.Fault {
	case FaultMalformed:
		// A trailing comma: well begun, invalid JSON.
		_, _ = fmt.Fprintf(w, `{"id":%q,"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":%q}},]}`, id, rep.Content)
	case FaultTruncate:
		// A clean end after half the body: the length is honest, the JSON is not whole.
		_, _ = w.Write(body[:len(body)/2])
	case FaultDisconnect:
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body[:len(body)/2])
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		panic(http.ErrAbortHandler)
	default:
		_, _ = w.Write(body)
	}
}

// pieces splits s into pieces of n runes.
func pieces(s string, n int) []string {
	if n <= 0 {
		n = 4
	}
	var out []string
	r := []rune(s)
	for len(r) > 0 {
		k := min(n, len(r))
		out = append(out, string(r[:k]))
		r = r[k:]
	}
	return out
}

// events builds the data of every chunk event of a streamed reply, [DONE]
// excluded.
func (rep Reply) events(req Request, id string) [][]byte {
	var out [][]byte
	chunk := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": 0, "model": req.Model(),
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}},
		})
		out = append(out, b)
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	for _, p := range pieces(rep.Reasoning, rep.ChunkSize) {
		chunk(map[string]any{rep.reasoningField(): p, "content": nil}, nil)
	}
	for _, p := range pieces(rep.Content, rep.ChunkSize) {
		chunk(map[string]any{"content": p}, nil)
	}
	for i, tc := range rep.ToolCalls {
		chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": ""},
		}}}, nil)
		for _, p := range pieces(tc.Arguments, rep.ChunkSize) {
			chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": p},
			}}}, nil)
		}
	}
	chunk(map[string]any{}, rep.finish())
	if opts, _ := req.Body["stream_options"].(map[string]any); opts != nil {
		if inc, _ := opts["include_usage"].(bool); inc {
			b, _ := json.Marshal(map[string]any{
				"id": id, "object": "chat.completion.chunk", "created": 0, "model": req.Model(),
				"choices": []any{}, "usage": rep.usage(),
			})
			out = append(out, b)
		}
	}
	return out
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request, req Request, rep Reply, id string) {
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flush := func() {
		if flusher != nil {
			flusher.Flush()
		}
	}
	flush()
	events := rep.events(req, id)
	for i, data := range events {
		if rep.Fault != NoFault && i == rep.FaultAfter {
			break
		}
		if i > 0 && !s.wait(r, rep.ChunkDelay) {
			return
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil {
			return
		}
		flush()
	}
	switch rep.Fault {
	case FaultTruncate:
		return
	case FaultDisconnect:
		panic(http.ErrAbortHandler)
	case FaultHang:
		s.hang(r)
		return
	case FaultMalformed:
		_, _ = fmt.Fprintf(w, "data: {\"id\": \"%s\", \"choices\": [{\"delta\": {\"content\": \"oops\"\n\n", id)
		flush()
		return
	}
	_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
	flush()
}
