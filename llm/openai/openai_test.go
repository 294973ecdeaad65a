package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/llm/llmtest"
	"github.com/loomkit/loom/llm/openai"
)

// waits records the waits between attempts instead of taking them.
type waits struct {
	mu sync.Mutex
	ds []time.Duration
}

func (w *waits) wait(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ds = append(w.ds, d)
	return ctx.Err()
}

func (w *waits) list() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.ds...)
}

// newModel returns a Model on srv whose waits between attempts are recorded,
// not taken, and whose backoff has no jitter.
func newModel(t *testing.T, srv *llmtest.Server, edit func(*openai.Config)) (*openai.Model, *waits) {
	t.Helper()
	cfg := openai.Config{
		BaseURL: srv.BaseURL(),
		APIKey:  "sk-test",
		Model:   "test-model",
		Logger:  slog.New(slog.DiscardHandler),
	}
	if edit != nil {
		edit(&cfg)
	}
	m, err := openai.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	w := &waits{}
	openai.SetWait(m, w.wait)
	openai.SetJitter(m, func() float64 { return 0 })
	return m, w
}

// call runs Generate, or Stream collected, as mode says; chunks are the
// streamed chunks in order.
func call(ctx context.Context, m llm.Model, mode string, msgs []llm.Message, opts ...llm.Option) (resp *llm.Response, chunks []llm.Chunk, err error) {
	if mode == "generate" {
		resp, err = m.Generate(ctx, msgs, opts...)
		return resp, nil, err
	}
	var acc llm.Accumulator
	for c, err := range m.Stream(ctx, msgs, opts...) {
		if err != nil {
			return nil, chunks, err
		}
		chunks = append(chunks, c)
		acc.Add(c)
	}
	return acc.Response(), chunks, nil
}

var modes = []string{"generate", "stream"}

var hello = []llm.Message{llm.System("be brief"), llm.User("hello")}

func TestText(t *testing.T) {
	usage := llm.Usage{PromptTokens: 12, CompletionTokens: 7, ReasoningTokens: 3, CachedTokens: 4, TotalTokens: 19}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Reply{Content: "Hello there, friend.", ChunkSize: 3, Usage: &usage})
			m, _ := newModel(t, srv, nil)
			resp, chunks, err := call(t.Context(), m, mode, hello)
			if err != nil {
				t.Fatal(err)
			}
			want := &llm.Response{
				Message:      llm.Message{Role: llm.RoleAssistant, Content: "Hello there, friend."},
				FinishReason: llm.FinishStop,
				Usage:        usage,
			}
			if !reflect.DeepEqual(resp, want) {
				t.Errorf("response\n got %+v\nwant %+v", resp, want)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("requests = %d, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Model() != "test-model" || r.Path != "/v1/chat/completions" {
				t.Errorf("request model %q path %q", r.Model(), r.Path)
			}
			if got := r.Header.Get("Authorization"); got != "Bearer sk-test" {
				t.Errorf("Authorization = %q", got)
			}
			if got := r.Messages(); !reflect.DeepEqual(got, hello) {
				t.Errorf("messages on the wire = %+v, want %+v", got, hello)
			}
			if r.Stream() != (mode == "stream") {
				t.Errorf("stream flag = %v in %s mode", r.Stream(), mode)
			}
			if mode == "stream" {
				if len(chunks) < 3 {
					t.Errorf("got %d chunks, want the content split over several", len(chunks))
				}
				last := chunks[len(chunks)-1]
				if last.FinishReason != llm.FinishStop || last.Usage == nil {
					t.Errorf("last chunk = %+v, want finish and usage", last)
				}
				opts, _ := r.Body["stream_options"].(map[string]any)
				if opts["include_usage"] != true {
					t.Errorf("stream_options = %v, want include_usage", r.Body["stream_options"])
				}
			}
		})
	}
}

func TestReasoning(t *testing.T) {
	for _, field := range []string{"reasoning_content", "reasoning"} {
		for _, mode := range modes {
			t.Run(field+"/"+mode, func(t *testing.T) {
				srv := llmtest.New(t, llmtest.Reply{
					Reasoning: "The user greets; greet back.", Content: "Hi!", ReasoningField: field, ChunkSize: 5,
				})
				m, _ := newModel(t, srv, nil)
				resp, chunks, err := call(t.Context(), m, mode, hello)
				if err != nil {
					t.Fatal(err)
				}
				if resp.Message.Reasoning != "The user greets; greet back." || resp.Message.Content != "Hi!" {
					t.Errorf("reasoning %q content %q", resp.Message.Reasoning, resp.Message.Content)
				}
				if mode == "generate" {
					return
				}
				var reasoning, content int
				for i, c := range chunks {
					if c.Reasoning != "" && c.Content != "" {
						t.Errorf("chunk %d mixes reasoning and content: %+v", i, c)
					}
					if c.Reasoning != "" {
						reasoning++
						if content > 0 {
							t.Errorf("chunk %d: reasoning after content", i)
						}
					}
					if c.Content != "" {
						content++
					}
				}
				if reasoning < 2 || content != 1 {
					t.Errorf("got %d reasoning and %d content deltas, want several and 1", reasoning, content)
				}
			})
		}
	}
}

func TestToolCalls(t *testing.T) {
	calls := []llm.ToolCall{
		{ID: "call_1", Name: "weather", Arguments: `{"city":"Paris","unit":"c"}`},
		{ID: "call_2", Name: "time", Arguments: `{"zone":"Europe/Paris"}`},
	}
	tool := llm.Tool{
		Name:        "weather",
		Description: "Current weather in a city.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Reply{ToolCalls: calls, ChunkSize: 3})
			m, _ := newModel(t, srv, nil)
			resp, chunks, err := call(t.Context(), m, mode, hello, llm.WithTools(tool), llm.WithToolChoice("auto"))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(resp.Message.ToolCalls, calls) {
				t.Errorf("tool calls\n got %+v\nwant %+v", resp.Message.ToolCalls, calls)
			}
			if resp.FinishReason != llm.FinishToolCalls {
				t.Errorf("finish = %q", resp.FinishReason)
			}
			if mode == "stream" {
				fragments := 0
				for _, c := range chunks {
					for _, d := range c.ToolCalls {
						if d.Index == 0 && d.Arguments != "" {
							fragments++
						}
					}
				}
				if fragments < 2 {
					t.Errorf("arguments of call 0 came in %d fragments, want them split", fragments)
				}
			}
			body := srv.Requests()[0].Body
			var sent struct {
				Tools []struct {
					Type     string `json:"type"`
					Function struct {
						Name        string          `json:"name"`
						Description string          `json:"description"`
						Parameters  json.RawMessage `json:"parameters"`
					} `json:"function"`
				} `json:"tools"`
				ToolChoice string `json:"tool_choice"`
			}
			remarshal(t, body, &sent)
			if len(sent.Tools) != 1 || sent.Tools[0].Type != "function" || sent.Tools[0].Function.Name != "weather" ||
				sent.Tools[0].Function.Description != tool.Description || !jsonEqual(t, sent.Tools[0].Function.Parameters, tool.Parameters) {
				t.Errorf("tools on the wire = %+v", sent.Tools)
			}
			if sent.ToolChoice != "auto" {
				t.Errorf("tool_choice = %q", sent.ToolChoice)
			}
		})
	}
}

func TestMessagesOnTheWire(t *testing.T) {
	msgs := []llm.Message{
		llm.System("sys"),
		llm.User("weather in Paris?"),
		{Role: llm.RoleAssistant, Reasoning: "need the tool", ToolCalls: []llm.ToolCall{{ID: "c1", Name: "weather", Arguments: `{"city":"Paris"}`}}},
		llm.ToolResult("c1", "sunny"),
		llm.Assistant("It is sunny."),
		llm.User("thanks"),
	}
	for _, send := range []bool{false, true} {
		t.Run(map[bool]string{false: "without reasoning", true: "with reasoning"}[send], func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Text("ok"))
			m, _ := newModel(t, srv, func(c *openai.Config) { c.SendReasoning = send })
			if _, err := m.Generate(t.Context(), msgs); err != nil {
				t.Fatal(err)
			}
			want := append([]llm.Message(nil), msgs...)
			if !send {
				want[2].Reasoning = ""
			}
			if got := srv.Requests()[0].Messages(); !reflect.DeepEqual(got, want) {
				t.Errorf("messages on the wire\n got %+v\nwant %+v", got, want)
			}
		})
	}
	t.Run("bad role", func(t *testing.T) {
		srv := llmtest.New(t)
		m, _ := newModel(t, srv, nil)
		_, err := m.Generate(t.Context(), []llm.Message{{Role: "robot", Content: "x"}})
		if err == nil || !strings.Contains(err.Error(), "message 0") || len(srv.Requests()) != 0 {
			t.Errorf("err = %v, requests = %d; want a message 0 error and no request", err, len(srv.Requests()))
		}
	})
}

func TestRequestBody(t *testing.T) {
	tests := []struct {
		name     string
		provider openai.Provider
		opts     []llm.Option
		want     map[string]any // fields that must be in the body
		absent   []string       // fields that must not be
	}{
		{name: "temperature", opts: []llm.Option{llm.WithTemperature(0.2)}, want: map[string]any{"temperature": 0.2}},
		{name: "model", opts: []llm.Option{llm.WithModel("deepseek-reasoner")}, want: map[string]any{"model": "deepseek-reasoner"}},
		{name: "max tokens", opts: []llm.Option{llm.WithMaxTokens(300)}, want: map[string]any{"max_tokens": 300.0}, absent: []string{"max_completion_tokens"}},
		{name: "max tokens openai", provider: openai.ProviderOpenAI, opts: []llm.Option{llm.WithMaxTokens(300)},
			want: map[string]any{"max_completion_tokens": 300.0}, absent: []string{"max_tokens"}},
		{name: "json mode", opts: []llm.Option{llm.WithJSON()}, want: map[string]any{"response_format": map[string]any{"type": "json_object"}}},
		{name: "stop", opts: []llm.Option{llm.WithStop("END", "STOP")}, want: map[string]any{"stop": []any{"END", "STOP"}}},
		{name: "extra", opts: []llm.Option{llm.WithExtra("enable_thinking", false), llm.WithExtra("top_k", 20)},
			want: map[string]any{"enable_thinking": false, "top_k": 20.0}},
		{name: "tool choice required", opts: []llm.Option{llm.WithToolChoice("required")}, want: map[string]any{"tool_choice": "required"}},
		{name: "tool choice named", opts: []llm.Option{llm.WithToolChoice("weather")},
			want: map[string]any{"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "weather"}}}},
		{name: "thinking qwen", provider: openai.ProviderQwen, opts: []llm.Option{llm.WithThinking(false)},
			want: map[string]any{"enable_thinking": false}},
		{name: "thinking qwen on", provider: openai.ProviderQwen, opts: []llm.Option{llm.WithThinking(true)},
			want: map[string]any{"enable_thinking": true}},
		{name: "thinking doubao", provider: openai.ProviderDoubao, opts: []llm.Option{llm.WithThinking(false)},
			want: map[string]any{"thinking": map[string]any{"type": "disabled"}}},
		{name: "thinking deepseek", provider: openai.ProviderDeepSeek, opts: []llm.Option{llm.WithThinking(true)},
			want: map[string]any{"thinking": map[string]any{"type": "enabled"}}},
		{name: "thinking vllm", provider: openai.ProviderVLLM, opts: []llm.Option{llm.WithThinking(false)},
			want: map[string]any{"chat_template_kwargs": map[string]any{"enable_thinking": false, "thinking": false}}},
		{name: "thinking ollama", provider: openai.ProviderOllama, opts: []llm.Option{llm.WithThinking(false)},
			want: map[string]any{"reasoning_effort": "none"}},
		{name: "thinking generic", provider: openai.ProviderGeneric, opts: []llm.Option{llm.WithThinking(false)},
			absent: []string{"thinking", "enable_thinking", "chat_template_kwargs", "reasoning_effort"}},
		{name: "extra overrides thinking", provider: openai.ProviderQwen,
			opts: []llm.Option{llm.WithThinking(false), llm.WithExtra("enable_thinking", true)},
			want: map[string]any{"enable_thinking": true}},
		{name: "defaults", want: map[string]any{"model": "test-model"}, absent: []string{"temperature", "max_tokens", "response_format", "stop", "tools", "tool_choice", "stream"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Text("ok"))
			m, _ := newModel(t, srv, func(c *openai.Config) { c.Provider = tt.provider })
			if _, err := m.Generate(t.Context(), hello, tt.opts...); err != nil {
				t.Fatal(err)
			}
			body := srv.Requests()[0].Body
			for k, v := range tt.want {
				if !reflect.DeepEqual(body[k], v) {
					t.Errorf("body[%q] = %#v, want %#v", k, body[k], v)
				}
			}
			for _, k := range tt.absent {
				if v, ok := body[k]; ok {
					t.Errorf("body[%q] = %#v, want absent", k, v)
				}
			}
		})
	}
}

func TestRetry(t *testing.T) {
	date := time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name      string
		replies   []llmtest.Reply
		requests  int
		waits     func([]time.Duration) bool // checks the waits taken
		wantErr   error                      // nil: the call succeeds with "ok"
		notWanted error                      // an error the failure must not wrap
	}{
		{
			name:     "429 retry-after seconds",
			replies:  []llmtest.Reply{llmtest.RateLimited("1"), llmtest.Text("ok")},
			requests: 2,
			waits:    func(w []time.Duration) bool { return len(w) == 1 && w[0] == time.Second },
		},
		{
			name:     "429 retry-after date",
			replies:  []llmtest.Reply{llmtest.RateLimited(date), llmtest.Text("ok")},
			requests: 2,
			waits:    func(w []time.Duration) bool { return len(w) == 1 && w[0] > 0 && w[0] <= 3*time.Second },
		},
		{
			name:     "500 backoff",
			replies:  []llmtest.Reply{llmtest.ServerError(), llmtest.ServerError(), llmtest.Text("ok")},
			requests: 3,
			// No jitter: half of 500ms, then half of 1s.
			waits: func(w []time.Duration) bool {
				return reflect.DeepEqual(w, []time.Duration{250 * time.Millisecond, 500 * time.Millisecond})
			},
		},
		{
			name:     "503 retry-after",
			replies:  []llmtest.Reply{{Fault: llmtest.FaultStatus, Status: 503, RetryAfter: "2"}, llmtest.Text("ok")},
			requests: 2,
			waits:    func(w []time.Duration) bool { return len(w) == 1 && w[0] == 2*time.Second },
		},
		{
			name:     "500 until retries run out",
			replies:  []llmtest.Reply{llmtest.ServerError(), llmtest.ServerError(), llmtest.ServerError()},
			requests: 3,
			waits:    func(w []time.Duration) bool { return len(w) == 2 },
			wantErr:  llm.ErrUnavailable,
		},
		{
			name:     "429 until retries run out",
			replies:  []llmtest.Reply{llmtest.RateLimited("1"), llmtest.RateLimited("1"), llmtest.RateLimited("1")},
			requests: 3,
			waits:    func(w []time.Duration) bool { return len(w) == 2 },
			wantErr:  llm.ErrRateLimited,
		},
		{
			name:     "retry-after too long",
			replies:  []llmtest.Reply{llmtest.RateLimited("3600")},
			requests: 1,
			waits:    func(w []time.Duration) bool { return len(w) == 0 },
			wantErr:  llm.ErrRateLimited,
		},
		{
			name:      "400 is not retried",
			replies:   []llmtest.Reply{{Fault: llmtest.FaultStatus, Status: 400}},
			requests:  1,
			waits:     func(w []time.Duration) bool { return len(w) == 0 },
			wantErr:   errAny,
			notWanted: llm.ErrUnavailable,
		},
	}
	for _, tt := range tests {
		for _, mode := range modes {
			t.Run(tt.name+"/"+mode, func(t *testing.T) {
				srv := llmtest.New(t, tt.replies...)
				m, w := newModel(t, srv, nil)
				resp, _, err := call(t.Context(), m, mode, hello)
				switch {
				case tt.wantErr == nil && err != nil:
					t.Fatalf("err = %v", err)
				case tt.wantErr == nil && resp.Message.Content != "ok":
					t.Errorf("content = %q", resp.Message.Content)
				case tt.wantErr == errAny && err == nil, tt.wantErr != nil && tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
					t.Errorf("err = %v, want %v", err, tt.wantErr)
				case tt.notWanted != nil && errors.Is(err, tt.notWanted):
					t.Errorf("err = %v wraps %v", err, tt.notWanted)
				}
				if got := len(srv.Requests()); got != tt.requests {
					t.Errorf("requests = %d, want %d", got, tt.requests)
				}
				if got := w.list(); !tt.waits(got) {
					t.Errorf("waits = %v", got)
				}
			})
		}
	}
}

// errAny stands for "some error" in tables.
var errAny = errors.New("any error")

func TestRetryWaitsForReal(t *testing.T) {
	srv := llmtest.New(t, llmtest.RateLimited("0"), llmtest.Text("ok"))
	m, err := openai.New(openai.Config{BaseURL: srv.BaseURL(), Model: "m", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Generate(t.Context(), hello)
	if err != nil || resp.Message.Content != "ok" {
		t.Fatalf("resp %+v err %v", resp, err)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("requests = %d, want 2", n)
	}
}

func TestNoRetries(t *testing.T) {
	srv := llmtest.New(t, llmtest.ServerError())
	m, w := newModel(t, srv, func(c *openai.Config) { c.MaxRetries = -1 })
	if _, err := m.Generate(t.Context(), hello); !errors.Is(err, llm.ErrUnavailable) {
		t.Errorf("err = %v, want ErrUnavailable", err)
	}
	if n := len(srv.Requests()); n != 1 || len(w.list()) != 0 {
		t.Errorf("requests = %d, waits = %v; want 1 and none", n, w.list())
	}
}

func TestBrokenStream(t *testing.T) {
	text := llmtest.Reply{Content: "one two three four five", ChunkSize: 4}
	tests := []struct {
		name  string
		reply llmtest.Reply
		want  error
	}{
		{"truncated", llmtest.Truncated(text, 3), llm.ErrTruncated},
		{"truncated before done", llmtest.Truncated(text, 100), llm.ErrTruncated},
		{"disconnected", llmtest.Reply{Content: text.Content, ChunkSize: 4, Fault: llmtest.FaultDisconnect, FaultAfter: 3}, llm.ErrTruncated},
		{"malformed chunk", llmtest.Reply{Content: text.Content, ChunkSize: 4, Fault: llmtest.FaultMalformed, FaultAfter: 3}, llm.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A good reply is queued too: it must not be used, because part
			// of the answer has already reached the caller.
			srv := llmtest.New(t, tt.reply, llmtest.Text("retried"))
			m, _ := newModel(t, srv, nil)
			var got strings.Builder
			var streamErr error
			for c, err := range m.Stream(t.Context(), hello) {
				if err != nil {
					streamErr = err
					break
				}
				if c.FinishReason != "" {
					t.Errorf("finish chunk %+v from a broken stream", c)
				}
				got.WriteString(c.Content)
			}
			if !errors.Is(streamErr, tt.want) {
				t.Errorf("err = %v, want %v", streamErr, tt.want)
			}
			if got.Len() == 0 {
				t.Errorf("no content before the error")
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("requests = %d, want 1", n)
			}
		})
	}
}

func TestBrokenStreamBeforeContentIsRetried(t *testing.T) {
	// Only the role chunk arrives before the cut: nothing reached the caller.
	srv := llmtest.New(t, llmtest.Truncated(llmtest.Text("lost"), 1), llmtest.Text("ok"))
	m, _ := newModel(t, srv, nil)
	resp, err := llm.Collect(m.Stream(t.Context(), hello))
	if err != nil || resp.Message.Content != "ok" {
		t.Fatalf("resp %+v err %v", resp, err)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("requests = %d, want 2", n)
	}
}

func TestMalformedBody(t *testing.T) {
	srv := llmtest.New(t, llmtest.Malformed(), llmtest.Text("not used"))
	m, _ := newModel(t, srv, nil)
	_, err := m.Generate(t.Context(), hello)
	if !errors.Is(err, llm.ErrMalformed) {
		t.Fatalf("err = %v, want ErrMalformed", err)
	}
	if !strings.Contains(err.Error(), "openai generate") || !strings.Contains(err.Error(), "malformed") {
		t.Errorf("err = %q, want it to say what failed", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("requests = %d, want 1 (a malformed answer is not retried)", n)
	}
}

func TestTruncatedBody(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.Truncated(llmtest.Text("cut"), 0),
		llmtest.Reply{Content: "dropped", Fault: llmtest.FaultDisconnect},
		llmtest.Text("ok"))
	m, _ := newModel(t, srv, nil)
	resp, err := m.Generate(t.Context(), hello)
	if err != nil || resp.Message.Content != "ok" {
		t.Fatalf("resp %+v err %v", resp, err)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("requests = %d, want 3", n)
	}
}

func TestHang(t *testing.T) {
	for _, mode := range modes {
		t.Run("context deadline/"+mode, func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Hang())
			m, _ := newModel(t, srv, nil)
			ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
			defer cancel()
			_, _, err := call(ctx, m, mode, hello)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("err = %v, want DeadlineExceeded", err)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("requests = %d, want 1", n)
			}
		})
		t.Run("attempt timeout is retried/"+mode, func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Hang(), llmtest.Text("ok"))
			m, w := newModel(t, srv, func(c *openai.Config) { c.Timeout = 100 * time.Millisecond })
			resp, _, err := call(t.Context(), m, mode, hello)
			if err != nil || resp.Message.Content != "ok" {
				t.Fatalf("resp %+v err %v", resp, err)
			}
			if n := len(srv.Requests()); n != 2 || len(w.list()) != 1 {
				t.Errorf("requests = %d, waits = %v; want 2 and 1", n, w.list())
			}
		})
	}
	t.Run("stream stalls after content", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Reply{Content: "one two three", ChunkSize: 4, Fault: llmtest.FaultHang, FaultAfter: 2}, llmtest.Text("not used"))
		m, _ := newModel(t, srv, func(c *openai.Config) { c.Timeout = 100 * time.Millisecond })
		_, err := llm.Collect(m.Stream(t.Context(), hello))
		if !errors.Is(err, llm.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want ErrUnavailable and DeadlineExceeded", err)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("requests = %d, want 1", n)
		}
	})
}

func TestSlowReaderIsNotAStall(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Content: "abcdefgh", ChunkSize: 2})
	m, _ := newModel(t, srv, func(c *openai.Config) { c.Timeout = 200 * time.Millisecond })
	var got strings.Builder
	for c, err := range m.Stream(t.Context(), hello) {
		if err != nil {
			t.Fatalf("err = %v after %q", err, got.String())
		}
		if got.Len() == 0 {
			time.Sleep(400 * time.Millisecond) // the caller is busy, the server is not stalled
		}
		got.WriteString(c.Content)
	}
	if got.String() != "abcdefgh" || len(srv.Requests()) != 1 {
		t.Errorf("content %q after %d requests", got.String(), len(srv.Requests()))
	}
}

func TestStreamStopEarly(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Content: "a long answer that goes on", ChunkSize: 2})
	m, _ := newModel(t, srv, nil)
	n := 0
	for _, err := range m.Stream(t.Context(), hello) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if n == 2 {
			break // the iterator must not call yield again (that would panic)
		}
	}
	if n != 2 {
		t.Errorf("got %d chunks, want 2", n)
	}
}

func TestHeaders(t *testing.T) {
	srv := llmtest.New(t)
	srv.Handle(func(r llmtest.Request) llmtest.Reply { return llmtest.Text("echo: " + r.Messages()[1].Content) })
	m, _ := newModel(t, srv, func(c *openai.Config) { c.Headers = map[string]string{"X-Probe": "yes"} })
	resp, err := m.Generate(t.Context(), hello)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "echo: hello" {
		t.Errorf("content = %q", resp.Message.Content)
	}
	if got := srv.Requests()[0].Header.Get("X-Probe"); got != "yes" {
		t.Errorf("X-Probe = %q", got)
	}
}

func TestStreamAnsweredWhole(t *testing.T) {
	// A server that ignores "stream" and answers with one JSON body.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"whole"},"finish_reason":"stop"}]}`))
	}))
	defer srv.Close()
	m, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "m", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := llm.Collect(m.Stream(t.Context(), hello)); !errors.Is(err, llm.ErrMalformed) {
		t.Errorf("err = %v, want ErrMalformed", err)
	}
}

func TestUnreachable(t *testing.T) {
	srv := llmtest.New(t)
	url := srv.BaseURL()
	srv.Close()
	m, w := newModel(t, srv, func(c *openai.Config) { c.BaseURL = url })
	if _, err := m.Generate(t.Context(), hello); !errors.Is(err, llm.ErrUnavailable) {
		t.Errorf("err = %v, want ErrUnavailable", err)
	}
	if len(w.list()) != 2 {
		t.Errorf("waits = %v, want 2 retries", w.list())
	}
}

func TestConfig(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "https://api.deepseek.com")
	t.Setenv("OPENAI_API_KEY", "sk-env")
	t.Setenv("LOOM_MODEL", "deepseek-chat")
	t.Setenv("LOOM_PROVIDER", "")
	cfg := openai.FromEnv()
	if cfg.BaseURL != "https://api.deepseek.com" || cfg.APIKey != "sk-env" || cfg.Model != "deepseek-chat" {
		t.Errorf("FromEnv = %+v", cfg)
	}
	m, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if m.Provider() != openai.ProviderDeepSeek {
		t.Errorf("provider = %q, want deepseek", m.Provider())
	}
	for _, bad := range []openai.Config{
		{},
		{Model: "m", BaseURL: "not a url"},
		{Model: "m", Provider: "martian"},
	} {
		if _, err := openai.New(bad); !errors.Is(err, openai.ErrConfig) {
			t.Errorf("New(%+v) err = %v, want ErrConfig", bad, err)
		}
	}
}

func TestDetectProvider(t *testing.T) {
	tests := []struct {
		url  string
		want openai.Provider
	}{
		{"https://api.openai.com/v1", openai.ProviderOpenAI},
		{"https://api.deepseek.com", openai.ProviderDeepSeek},
		{"https://dashscope.aliyuncs.com/compatible-mode/v1", openai.ProviderQwen},
		{"https://dashscope-intl.aliyuncs.com/compatible-mode/v1", openai.ProviderQwen},
		{"https://ark.cn-beijing.volces.com/api/v3", openai.ProviderDoubao},
		{"http://localhost:11434/v1", openai.ProviderOllama},
		{"http://gpu-box:8000/v1", openai.ProviderGeneric},
	}
	for _, tt := range tests {
		if got := openai.DetectProvider(tt.url); got != tt.want {
			t.Errorf("DetectProvider(%q) = %q, want %q", tt.url, got, tt.want)
		}
	}
}

func remarshal(t *testing.T, from, to any) {
	t.Helper()
	b, err := json.Marshal(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, to); err != nil {
		t.Fatal(err)
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
