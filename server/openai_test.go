package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/loomkit/loom/apps/cabin"
	"github.com/loomkit/loom/intent"
	"github.com/loomkit/loom/server"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// The official OpenAI Go client talks to agents as models, over HTTP.
func TestChatCompletionsOpenAIGo(t *testing.T) {
	const key = "openai-key"
	ts := startServer(t, server.Options{Keys: []string{key}})
	ctx := context.Background()
	client := openai.NewClient(option.WithBaseURL(ts.URL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))

	models, err := client.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range models.Data {
		ids = append(ids, m.ID)
	}
	if !slices.Equal(ids, []string{"demo", "echo", "slow"}) {
		t.Fatalf("models %v", ids)
	}

	// A turn without a thread makes one and names it.
	res, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "demo", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("launch")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Choices[0].Message.Content; !strings.Contains(c, `launch`) || !strings.Contains(c, "Approve?") {
		t.Fatalf("first answer %q", c)
	}
	var thread, status string
	json.Unmarshal([]byte(res.JSON.ExtraFields["thread_id"].Raw()), &thread)
	json.Unmarshal([]byte(res.JSON.ExtraFields["status"].Raw()), &status)
	if thread == "" || status != "interrupted" {
		t.Fatalf("thread %q status %q", thread, status)
	}

	// The next message on the thread answers the question; streamed.
	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model: "demo", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("确认")},
	}, option.WithHeader("X-Loom-Thread", thread))
	var text strings.Builder
	var chunks int
	finish := ""
	for stream.Next() {
		c := stream.Current()
		chunks++
		if c.Object != "chat.completion.chunk" {
			t.Fatalf("chunk object %q", c.Object)
		}
		if len(c.Choices) > 0 {
			text.WriteString(c.Choices[0].Delta.Content)
			if c.Choices[0].FinishReason != "" {
				finish = c.Choices[0].FinishReason
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), `"approved":true`) || finish != "stop" || chunks < 3 {
		t.Fatalf("streamed %d chunks, finish %q, text %q", chunks, finish, text.String())
	}

	// The echo agent streams its events in ext, and the confirm card.
	stream = client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model: "echo", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("ask me")},
		User: openai.String("echo-user-1"),
	})
	type extJSON struct {
		Kind, DisplayMode, BlockID, Text string
		InterruptID                      string `json:"interrupt_id"`
	}
	var exts []extJSON
	text.Reset()
	for stream.Next() {
		c := stream.Current()
		if raw := c.JSON.ExtraFields["ext"].Raw(); raw != "" && raw != "null" {
			var x struct {
				Kind        string `json:"kind"`
				DisplayMode string `json:"display_mode"`
				BlockID     string `json:"block_id"`
				Text        string `json:"text"`
				InterruptID string `json:"interrupt_id"`
			}
			if err := json.Unmarshal([]byte(raw), &x); err != nil {
				t.Fatal(err)
			}
			exts = append(exts, extJSON{x.Kind, x.DisplayMode, x.BlockID, x.Text, x.InterruptID})
		}
		if len(c.Choices) > 0 {
			text.WriteString(c.Choices[0].Delta.Content)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	wantModes := map[string]string{"reasoning_text": "append", "assistant_text": "append", "status": "replace", "tool_call": "card",
		"tool_result": "card", "confirm_request": "card", "interrupt": "card"}
	seen := map[string]bool{}
	for _, x := range exts {
		if want, ok := wantModes[x.Kind]; ok && want != x.DisplayMode {
			t.Errorf("ext %s display_mode %s, want %s", x.Kind, x.DisplayMode, want)
		}
		seen[x.Kind] = true
	}
	for k := range wantModes {
		if !seen[k] {
			t.Errorf("no ext of kind %s in %+v", k, exts)
		}
	}
	if last := exts[len(exts)-1]; last.Kind != "interrupt" || last.InterruptID == "" || last.Text != "Send it?" {
		t.Errorf("last ext %+v, want the interrupt", last)
	}
	if !strings.HasPrefix(text.String(), "you said: ask me") || !strings.HasSuffix(text.String(), "Send it?") {
		t.Errorf("streamed text %q", text.String())
	}
	// "no" on the same thread (named by user) rejects.
	res, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "echo", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("no thanks")},
		User: openai.String("echo-user-1"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Choices[0].Message.Content; !strings.HasSuffix(c, "sent=false") {
		t.Errorf("after no: %q", c)
	}

	// Errors come back as OpenAI API errors.
	_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "gpt-9", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || !strings.Contains(apiErr.Message, `agent "gpt-9" not found`) {
		t.Errorf("unknown model: %v", err)
	}
}

// DefaultAnswer maps chat replies to resume values with
// intent.ReadConsent, and an unclear reply to intent.ErrUnclear.
func TestDefaultAnswer(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"yes", `{"accept":true}`},
		{"Yes, ship it", `{"accept":true}`},
		{"okay then", `{"accept":true}`},
		{"确认", `{"accept":true}`},
		{"没问题", `{"accept":true}`},
		{"好的，谢谢", `{"accept":true,"note":"谢谢"}`},
		{"no", `{"accept":false}`},
		{"No: too long", `{"accept":false,"note":"too long"}`},
		{"取消，周三不行", `{"accept":false,"note":"周三不行"}`},
		{"对不起，我不同意", `{"accept":false,"note":"对不起，我不同意"}`},
		{"go away", `{"accept":false}`},
		{` {"accept": true, "note": "json"} `, `{"accept": true, "note": "json"}`},
		{`[1,2]`, `[1,2]`},
		{"可以吗？", ""},
		{"是不是搞错了", ""},
		{"maybe later", ""},
		{"好的，改到周三", ""},
		{"yesterday was better", ""},
	} {
		got, err := server.DefaultAnswer(c.in, nil)
		if c.want == "" {
			if !errors.Is(err, intent.ErrUnclear) {
				t.Errorf("DefaultAnswer(%q) = %s, %v; want intent.ErrUnclear", c.in, got, err)
			}
		} else if err != nil || string(got) != c.want {
			t.Errorf("DefaultAnswer(%q) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
}

func TestSQLitePath(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{"", "loom.db", ""},
		{"data/loom.db", "data/loom.db", ""},
		{"/var/lib/loom.db", "/var/lib/loom.db", ""},
		{"sqlite:///var/lib/loom.db", "/var/lib/loom.db", ""},
		{"sqlite://rel.db", "rel.db", ""},
		{"file:x.db", "x.db", ""},
		{"sqlite:///a.db?mode=ro", "", "no query"},
		{"postgres://u@h/db", "", "a postgres database, not a SQLite file"},
		{"postgresql://u@h/db", "", "not a SQLite file"},
		{"mysql://x", "", `scheme "mysql"`},
	} {
		got, err := server.SQLitePath(c.in)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("SQLitePath(%q) = %q, %v; want %q", c.in, got, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("SQLitePath(%q) error %v; want one with %q", c.in, err, c.err)
		}
	}
	if _, err := server.SQLitePath("postgres://x"); !errors.Is(err, server.ErrUnsupportedDatabase) {
		t.Errorf("postgres error %v does not wrap ErrUnsupportedDatabase", err)
	}
}

func TestCheckAddr(t *testing.T) {
	for _, c := range []struct {
		addr string
		keys bool
		ok   bool
	}{
		{"127.0.0.1:8080", false, true},
		{"localhost:8080", false, true},
		{"[::1]:8080", false, true},
		{"0.0.0.0:8080", false, false},
		{":8080", false, false},
		{"192.0.2.1:8080", false, false},
		{"0.0.0.0:8080", true, true},
	} {
		err := server.CheckAddr(c.addr, c.keys)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, server.ErrInsecure)) {
			t.Errorf("CheckAddr(%q, keys %v) = %v", c.addr, c.keys, err)
		}
	}
}

// TestChatLocale: a message to /v1/chat/completions carries the agent's
// configuration as a run does (context, config.configurable), so a typed
// answer to the cabin's question is answered in the locale the page
// sends, whatever language it is typed in; a setting the agent does not
// take is a 422.
func TestChatLocale(t *testing.T) {
	var reg server.Registry
	if err := reg.Register(cabin.ServerAgent(cabin.ServerOptions{Logger: slog.New(slog.DiscardHandler)})); err != nil {
		t.Fatal(err)
	}
	var ts *testServer
	send := func(thread, text string, extra map[string]any) (int, string) {
		t.Helper()
		body := map[string]any{"model": "cabin", "thread_id": thread, "messages": []any{map[string]any{"role": "user", "content": text}}}
		maps.Copy(body, extra)
		st, b := call(t, "POST", ts.URL+"/v1/chat/completions", "", body)
		var resp struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		if st == 200 && (json.Unmarshal(b, &resp) != nil || len(resp.Choices) != 1) {
			t.Fatalf("%q: %s", text, b)
		}
		if st != 200 {
			return st, string(b)
		}
		return st, resp.Choices[0].Message.Content
	}
	hasHan := func(s string) bool {
		return strings.ContainsFunc(s, func(r rune) bool { return unicode.Is(unicode.Han, r) })
	}
	en := map[string]any{"context": map[string]any{"locale": "en"}}
	for _, c := range []struct {
		thread  string
		extra   map[string]any
		english bool
	}{
		{"in-english", en, true},
		{"in-english-config", map[string]any{"config": map[string]any{"configurable": map[string]any{"locale": "en"}}}, true},
		{"as-typed", nil, false},
	} {
		ts = startServer(t, server.Options{Agents: &reg}) // its car's doors are locked
		st, asked := send(c.thread, "解锁车门", c.extra)
		if st != 200 || asked == "" || hasHan(asked) == c.english {
			t.Fatalf("%s: question %d %q, want it in English: %v", c.thread, st, asked, c.english)
		}
		// The answer, typed in Chinese, resumes the run: what it says is
		// in the locale.
		st, done := send(c.thread, "确定", c.extra)
		t.Logf("%s: asked %q, answered %q", c.thread, asked, done)
		if st != 200 || done == asked || hasHan(done) == c.english || !strings.Contains(done, "unlock") && !strings.Contains(done, "解锁") {
			t.Errorf("%s: answer %d %q, want it in English: %v", c.thread, st, done, c.english)
		}
	}
	if st, b := send("refused", "解锁车门", map[string]any{"context": map[string]any{"volume": 3}}); st != 422 || !strings.Contains(b, "volume") {
		t.Fatalf("a setting the cabin does not take: %d %s, want 422 naming it", st, b)
	}
}
