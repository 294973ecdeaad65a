package llmtest_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/llm/llmtest"
)

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Trace", "abc")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// events reads the data lines of an SSE body.
func events(t *testing.T, body io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, data)
		}
	}
	return out
}

func TestWhole(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Content: "hi", Reasoning: "hmm", Usage: &llm.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3, ReasoningTokens: 1}})
	resp := post(t, srv.BaseURL()+"/chat/completions", `{"model":"m","messages":[{"role":"user","content":"yo"}]}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var got struct {
		Object  string `json:"object"`
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Content          string `json:"content"`
				ReasoningContent string `json:"reasoning_content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens            int `json:"prompt_tokens"`
			CompletionTokensDetails struct {
				ReasoningTokens int `json:"reasoning_tokens"`
			} `json:"completion_tokens_details"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.Object != "chat.completion" || got.Model != "m" || len(got.Choices) != 1 ||
		got.Choices[0].Message.Content != "hi" || got.Choices[0].Message.ReasoningContent != "hmm" ||
		got.Choices[0].FinishReason != "stop" || got.Usage.PromptTokens != 1 || got.Usage.CompletionTokensDetails.ReasoningTokens != 1 {
		t.Errorf("body = %+v", got)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].Header.Get("X-Trace") != "abc" || reqs[0].Model() != "m" || reqs[0].Stream() {
		t.Errorf("recorded %+v", reqs)
	}
	if msgs := reqs[0].Messages(); !reflect.DeepEqual(msgs, []llm.Message{llm.User("yo")}) {
		t.Errorf("Messages = %+v", msgs)
	}
}

func TestStreamed(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		reply     llmtest.Reply
		wantDone  bool
		wantUsage bool
	}{
		{"with usage", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[]}`, llmtest.Text("abcdefgh"), true, true},
		{"without usage", `{"model":"m","stream":true,"messages":[]}`, llmtest.Text("abcdefgh"), true, false},
		{"truncated", `{"model":"m","stream":true,"messages":[]}`, llmtest.Truncated(llmtest.Text("abcdefgh"), 2), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t, tt.reply)
			resp := post(t, srv.URL+"/v1/chat/completions", tt.body)
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Errorf("Content-Type = %q", ct)
			}
			evs := events(t, resp.Body)
			if len(evs) == 0 {
				t.Fatal("no events")
			}
			done := evs[len(evs)-1] == "[DONE]"
			if done != tt.wantDone {
				t.Errorf("[DONE] at the end = %v, want %v; events %v", done, tt.wantDone, evs)
			}
			usage, content := false, ""
			for _, e := range evs {
				var c struct {
					Object  string          `json:"object"`
					Usage   json.RawMessage `json:"usage"`
					Choices []struct {
						Delta struct {
							Content string `json:"content"`
						} `json:"delta"`
					} `json:"choices"`
				}
				if e == "[DONE]" {
					continue
				}
				if err := json.Unmarshal([]byte(e), &c); err != nil {
					t.Fatalf("event %q: %v", e, err)
				}
				if c.Object != "chat.completion.chunk" {
					t.Errorf("object = %q", c.Object)
				}
				usage = usage || len(c.Usage) > 0
				for _, ch := range c.Choices {
					content += ch.Delta.Content
				}
			}
			if usage != tt.wantUsage {
				t.Errorf("usage sent = %v, want %v", usage, tt.wantUsage)
			}
			if tt.wantDone && content != "abcdefgh" {
				t.Errorf("content = %q", content)
			}
			if !tt.wantDone && len(evs) != 2 {
				t.Errorf("truncated after %d events, want 2", len(evs))
			}
		})
	}
}

func TestHandlerAfterScript(t *testing.T) {
	srv := llmtest.New(t, llmtest.Text("scripted"))
	srv.Handle(func(r llmtest.Request) llmtest.Reply {
		return llmtest.Text("echo " + r.Messages()[0].Content)
	})
	if srv.Pending() != 1 {
		t.Errorf("Pending = %d", srv.Pending())
	}
	var got []string
	for _, word := range []string{"one", "two"} {
		resp := post(t, srv.BaseURL()+"/chat/completions", `{"model":"m","messages":[{"role":"user","content":"`+word+`"}]}`)
		var body struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		got = append(got, body.Choices[0].Message.Content)
	}
	if want := []string{"scripted", "echo two"}; !reflect.DeepEqual(got, want) {
		t.Errorf("replies = %q, want %q", got, want)
	}
}

func TestBadRequests(t *testing.T) {
	srv := llmtest.New(t, llmtest.Text("kept"))
	tests := []struct {
		path, body string
		status     int
	}{
		{"/v1/images/generations", `{}`, http.StatusNotFound},
		{"/v1/embeddings", `{}`, http.StatusBadRequest},
		{"/v1/chat/completions", `not json`, http.StatusBadRequest},
	}
	for _, tt := range tests {
		if resp := post(t, srv.URL+tt.path, tt.body); resp.StatusCode != tt.status {
			t.Errorf("POST %s %q: status %d, want %d", tt.path, tt.body, resp.StatusCode, tt.status)
		}
	}
	if srv.Pending() != 1 {
		t.Errorf("a bad request used a scripted reply")
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("recorded %d requests, want 3", n)
	}
}

func TestStatusFault(t *testing.T) {
	srv := llmtest.New(t, llmtest.RateLimited("3"))
	resp := post(t, srv.BaseURL()+"/chat/completions", `{"model":"m","messages":[]}`)
	var body struct {
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" || body.Error.Type != "rate_limit_error" {
		t.Errorf("status %d, Retry-After %q, error type %q", resp.StatusCode, resp.Header.Get("Retry-After"), body.Error.Type)
	}
}

func TestEmbeddings(t *testing.T) {
	srv := llmtest.New(t) // no script: embeddings do not use it
	var got struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
		Model string `json:"model"`
	}
	resp := post(t, srv.BaseURL()+"/embeddings", `{"model":"e","input":["订单金额 order amount","order amount","天气 weather"],"dimensions":64}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if len(got.Data) != 3 || got.Model != "e" || len(got.Data[0].Embedding) != 64 {
		t.Fatalf("answer %+v", got)
	}
	cos := func(a, b []float32) (s float32) {
		for i := range a {
			s += a[i] * b[i]
		}
		return s
	}
	v := got.Data
	if !reflect.DeepEqual(v[1].Embedding, llmtest.Embedding("order amount", 64)) {
		t.Error("vector is not Embedding of its text")
	}
	if self := cos(v[0].Embedding, v[0].Embedding); self < 0.999 || self > 1.001 {
		t.Errorf("not unit length: %v", self)
	}
	if near, far := cos(v[0].Embedding, v[1].Embedding), cos(v[0].Embedding, v[2].Embedding); near <= far {
		t.Errorf("cosine to a text sharing words %.3f ≤ to an unrelated one %.3f", near, far)
	}
	if reqs := srv.Requests(); len(reqs) != 1 || len(reqs[0].Inputs()) != 3 {
		t.Errorf("recorded %d requests", len(reqs))
	}
	for _, body := range []string{`{"model":"e","input":[]}`, `{"model":"e","input":["a",""]}`, `{"model":"e","input":"a","dimensions":0}`, `{"model":"e"}`} {
		if resp := post(t, srv.BaseURL()+"/embeddings", body); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", body, resp.StatusCode)
		}
	}
}
