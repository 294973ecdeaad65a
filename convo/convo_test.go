package convo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/loomkit/loom/llm"
)

func user(s string) Message      { return Message{Role: llm.RoleUser, Content: s} }
func assistant(s string) Message { return Message{Role: llm.RoleAssistant, Content: s} }
func call(id, name string) Message {
	return Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Name: name, Arguments: `{"day":1}`}}}
}
func result(id, s string) Message { return Message{Role: llm.RoleTool, ToolCallID: id, Content: s} }

// conversation returns n messages: user, assistant tool call, tool result,
// assistant answer, repeated.
func conversation(n int) []Message {
	var h []Message
	for i := 0; len(h) < n; i++ {
		id := fmt.Sprintf("c%d", i)
		h = append(h, user(fmt.Sprintf("question %d\nmore detail", i)), call(id, "find_free"),
			result(id, fmt.Sprintf(`{"free":[%d]}`, i)), assistant(fmt.Sprintf("answer %d", i)))
	}
	return h[:n]
}

func TestPins(t *testing.T) {
	var p Pins
	p = p.Set("plan", "step 1").Set("tools", "a, b")
	old := p
	p = p.Set("plan", "step 2")
	if got, _ := p.Get("plan"); got != "step 2" || p[0].Key != "plan" || len(p) != 2 {
		t.Fatalf("Set did not replace in place: %+v", p)
	}
	if got, _ := old.Get("plan"); got != "step 1" {
		t.Fatalf("Set changed the old slice: %+v", old)
	}
	p = p.Remove("plan")
	if _, ok := p.Get("plan"); ok || len(p) != 1 || len(old) != 2 {
		t.Fatalf("Remove: %+v (old %+v)", p, old)
	}
}

func TestWindowKeepsToolPairs(t *testing.T) {
	h := conversation(40)
	for window := 1; window <= 12; window++ {
		b := New(Config{Window: window, Counter: Estimate{}})
		v, err := b.Build(context.Background(), h, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		body := v.Messages[1:] // after the system message with the summary
		if body[0].Role == llm.RoleTool {
			t.Fatalf("window %d starts with an orphan tool result", window)
		}
		if len(body) < window || len(body) > window+1 {
			t.Fatalf("window %d: %d messages", window, len(body))
		}
		if v.Summarized+len(body) != len(h) {
			t.Fatalf("window %d: summarised %d + window %d != %d", window, v.Summarized, len(body), len(h))
		}
	}
}

func TestBuildLayout(t *testing.T) {
	h := conversation(14)
	pins := Pins{}.Set("plan", "1. find a slot").Set("rules", "no weekends")
	b := New(Config{System: "You schedule.", Counter: Estimate{}})
	v, err := b.Build(context.Background(), h, pins, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "You schedule.\n\n<plan>\n1. find a slot\n</plan>\n\n<rules>\nno weekends\n</rules>\n\n" +
		"Summary of the 4 earlier messages of this conversation:\nuser: question 0\nassistant: called find_free\nassistant: answer 0"
	if v.Messages[0].Role != llm.RoleSystem || v.Messages[0].Content != want {
		t.Fatalf("system message:\n%s\nwant:\n%s", v.Messages[0].Content, want)
	}
	if !reflect.DeepEqual(v.Messages[1:], h[4:]) {
		t.Fatalf("window differs from the history's last 10 messages")
	}
	if v.Summarized != 4 || v.Tokens <= 0 || v.Chars <= 0 {
		t.Fatalf("view stats: %+v", v)
	}
}

type countingSummarizer struct {
	calls    int
	previous []string
	older    []int
}

func (c *countingSummarizer) summarize(ctx context.Context, previous string, older []Message) (string, error) {
	c.calls++
	c.previous = append(c.previous, previous)
	c.older = append(c.older, len(older))
	return fmt.Sprintf("%s+%d", previous, len(older)), nil
}

func TestSummaryCache(t *testing.T) {
	ctx := context.Background()
	cs := &countingSummarizer{}
	cfg := Config{Summarizer: cs.summarize, SummaryKey: "v1", Counter: Estimate{}}
	b := New(cfg)
	h := conversation(30)
	var cache Summary

	v, err := b.Build(ctx, h, nil, &cache)
	if err != nil {
		t.Fatal(err)
	}
	if cs.calls != 1 || cache.Count != 20 || cache.Text != "+20" || cache.ConfigHash != b.ConfigHash() || v.Summarized != 20 {
		t.Fatalf("first build: calls %d, cache %+v", cs.calls, cache)
	}

	// Same inputs, cache restored from JSON as it would be from a checkpoint.
	data, _ := json.Marshal(cache)
	var restored Summary
	if err := json.Unmarshal(data, &restored); err != nil {
		t.Fatal(err)
	}
	if _, err := New(cfg).Build(ctx, h, nil, &restored); err != nil {
		t.Fatal(err)
	}
	if cs.calls != 1 {
		t.Fatalf("same inputs called the summariser again (%d calls)", cs.calls)
	}

	// More messages: only the ones that left the window are summarised.
	h = append(h, conversation(34)[30:]...)
	if _, err := b.Build(ctx, h, nil, &cache); err != nil {
		t.Fatal(err)
	}
	if cs.calls != 2 || cs.previous[1] != "+20" || cs.older[1] != 4 || cache.Count != 24 {
		t.Fatalf("after adding messages: calls %d, previous %q, older %v, cache %+v", cs.calls, cs.previous, cs.older, cache)
	}

	// Another config: summarised again from scratch.
	cfg.SummaryKey = "v2"
	if _, err := New(cfg).Build(ctx, h, nil, &cache); err != nil {
		t.Fatal(err)
	}
	if cs.calls != 3 || cs.previous[2] != "" || cs.older[2] != 24 {
		t.Fatalf("after a config change: calls %d, previous %q, older %v", cs.calls, cs.previous, cs.older)
	}
	// A config change the summary does not depend on (System) keeps it.
	cfg.System = "new prompt"
	if _, err := New(cfg).Build(ctx, h, nil, &cache); err != nil {
		t.Fatal(err)
	}
	if cs.calls != 3 {
		t.Fatalf("changing System re-summarised (%d calls)", cs.calls)
	}
}

func TestSummarizerError(t *testing.T) {
	boom := errors.New("model down")
	b := New(Config{Counter: Estimate{}, Summarizer: func(context.Context, string, []Message) (string, error) { return "", boom }})
	var cache Summary
	_, err := b.Build(context.Background(), conversation(20), nil, &cache)
	if !errors.Is(err, boom) || cache.Count != 0 {
		t.Fatalf("Build error = %v, cache %+v", err, cache)
	}
}

func TestExtractive(t *testing.T) {
	ctx := context.Background()
	s := Extractive(200)
	h := []Message{
		user("first question\nwith details"), call("a", "get_overview"), result("a", "{}"),
		assistant("the answer"), {Role: llm.RoleSystem, Content: "ignored"}, user(strings.Repeat("长", 200)),
	}
	full, _ := s(ctx, "", h)
	want := "(earlier turns omitted)\nuser: " + strings.Repeat("长", 160) + "…"
	if full != want {
		t.Fatalf("Extractive = %q", full)
	}
	part, _ := s(ctx, "", h[:4])
	if part != "user: first question\nassistant: called get_overview\nassistant: the answer" {
		t.Fatalf("Extractive = %q", part)
	}
	inc, _ := s(ctx, part, h[4:])
	if inc != full {
		t.Fatalf("incremental %q != full %q", inc, full)
	}
}

func TestTrimObservation(t *testing.T) {
	list := make([]int, 47)
	for i := range list {
		list[i] = i
	}
	big, _ := json.Marshal(map[string]any{"items": list, "total": 47})
	tests := []struct {
		name string
		in   string
		trim Trim
		want string
	}{
		{"list cut", string(big), Trim{MaxItems: 10, MaxString: 500, MaxChars: 4000},
			`{"items":[0,1,2,3,4,5,6,7,8,9,"... (+37 more)"],"total":47}`},
		{"nested lists", `[[1,2,3],[4,5,6],[7]]`, Trim{MaxItems: 2, MaxString: 10, MaxChars: 100},
			`[[1,2,"... (+1 more)"],[4,5,"... (+1 more)"],"... (+1 more)"]`},
		{"long string", `{"note": "abcdefghij\u00e9klmnop", "k": "short"}`, Trim{MaxItems: 10, MaxString: 10, MaxChars: 100},
			`{"note":"abcdefghij… (+7 chars)","k":"short"}`},
		{"keys kept", `{"a_very_long_key_name": 1}`, Trim{MaxItems: 10, MaxString: 3, MaxChars: 100},
			`{"a_very_long_key_name":1}`},
		{"pretty JSON compacted", "{\n  \"a\": [ true, null ]\n}", Trim{MaxItems: 10, MaxString: 10, MaxChars: 100},
			`{"a":[true,null]}`},
		{"text cut", strings.Repeat("x", 30), Trim{MaxItems: 10, MaxString: 10, MaxChars: 20},
			strings.Repeat("x", 20) + "\n… [truncated: 10 more characters]"},
		{"invalid JSON is text", `{"a": [1, 2, 3`, Trim{MaxItems: 1, MaxString: 10, MaxChars: 100}, `{"a": [1, 2, 3`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := TrimObservation(tt.in, tt.trim)
			if got != tt.want {
				t.Fatalf("TrimObservation = %s\nwant %s", got, tt.want)
			}
			if tt.name != "invalid JSON is text" && (strings.HasPrefix(tt.want, "{") || strings.HasPrefix(tt.want, "[")) {
				if !json.Valid([]byte(got)) {
					t.Fatalf("result is not valid JSON: %s", got)
				}
			}
		})
	}
}

func TestBudget(t *testing.T) {
	h := conversation(40)
	obs := make([]string, 200)
	for i := range obs {
		obs[i] = fmt.Sprintf("slot-%03d", i)
	}
	big, _ := json.Marshal(obs)
	for i := range h {
		if h[i].Role == llm.RoleTool {
			h[i].Content = string(big)
		}
	}
	before, _ := json.Marshal(h)

	tests := []struct {
		name               string
		cfg                Config
		over               bool
		minStart, maxStart int
		marker             string // in the last tool observation
	}{
		{"no budget", Config{}, false, 29, 29, `"... (+190 more)"`},
		{"tokens: harder trim", Config{MaxTokens: 300}, false, 29, 29, `"... (+197 more)"`},
		{"tokens: shorter window", Config{MaxTokens: 200}, false, 30, 36, `"... (+197 more)"`},
		{"chars", Config{MaxChars: 400}, false, 30, 36, `"... (+197 more)"`},
		{"impossible", Config{MaxTokens: 10}, true, 36, 36, `"... (+197 more)"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Counter = Estimate{}
			var cache Summary
			v, err := New(tt.cfg).Build(context.Background(), h, nil, &cache)
			if err != nil {
				t.Fatal(err)
			}
			if v.OverBudget != tt.over {
				t.Fatalf("OverBudget = %v (tokens %d, chars %d)", v.OverBudget, v.Tokens, v.Chars)
			}
			if !tt.over && ((tt.cfg.MaxTokens > 0 && v.Tokens > tt.cfg.MaxTokens) || (tt.cfg.MaxChars > 0 && v.Chars > tt.cfg.MaxChars)) {
				t.Fatalf("view exceeds the budget: tokens %d, chars %d", v.Tokens, v.Chars)
			}
			if v.Summarized < tt.minStart || v.Summarized > tt.maxStart || cache.Count != v.Summarized {
				t.Fatalf("summarised %d (cache %d), want %d to %d", v.Summarized, cache.Count, tt.minStart, tt.maxStart)
			}
			if obs := v.Messages[len(v.Messages)-2].Content; !strings.HasSuffix(obs, tt.marker+"]") {
				t.Fatalf("last observation = %s, want the marker %s", obs, tt.marker)
			}
			body := v.Messages[1:]
			if body[0].Role == llm.RoleTool {
				t.Fatal("window starts with an orphan tool result")
			}
			last := body[len(body)-1]
			if !reflect.DeepEqual(last, h[len(h)-1]) && last.Role != llm.RoleTool {
				t.Fatal("the last message is missing")
			}
		})
	}
	after, _ := json.Marshal(h)
	if string(before) != string(after) {
		t.Fatal("Build modified the history")
	}
}

func TestTiktoken(t *testing.T) {
	for _, enc := range []string{"cl100k_base", "o200k_base"} {
		c, err := Tiktoken(enc)
		if err != nil {
			t.Fatal(err)
		}
		if n := c.Count("hello world"); n != 2 {
			t.Fatalf("%s: Count(hello world) = %d, want 2", enc, n)
		}
	}
	if _, err := Tiktoken("nope"); err == nil {
		t.Fatal("unknown encoding accepted")
	}
	b := New(Config{})
	v, err := b.Build(context.Background(), []Message{user("hello world")}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.Tokens != 3+2+3 { // reply priming + message framing + text
		t.Fatalf("Tokens = %d, want 8", v.Tokens)
	}
}

func FuzzTrimObservation(f *testing.F) {
	f.Add(`{"a":[1,2,3,4,5],"s":"héllo wörld, a long string"}`, 2, 5)
	f.Add(`[[],{},"\u00e9\"\\",-1.5e3,true,null]`, 1, 1)
	f.Add("plain text", 3, 3)
	f.Fuzz(func(t *testing.T, in string, items, str int) {
		tr := Trim{MaxItems: items%20 + 1, MaxString: str%50 + 1, MaxChars: 1 << 30}
		out := TrimObservation(in, tr)
		if json.Valid([]byte(in)) && !json.Valid([]byte(out)) {
			t.Fatalf("TrimObservation(%q) = %q: not valid JSON", in, out)
		}
	})
}

func TestBuildConcurrent(t *testing.T) {
	b := New(Config{MaxTokens: 2000})
	h := conversation(100)
	done := make(chan error)
	for range 4 {
		go func() {
			var cache Summary
			_, err := b.Build(context.Background(), h, nil, &cache)
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

func TestBuildSmall(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		history []Message
		want    int // messages in the view
	}{
		{"empty", Config{}, nil, 0},
		{"empty with system", Config{System: "hi"}, nil, 1},
		{"shorter than the window", Config{}, conversation(5), 5},
	}
	for _, tt := range tests {
		tt.cfg.Counter = Estimate{}
		var cache Summary
		v, err := New(tt.cfg).Build(context.Background(), tt.history, nil, &cache)
		if err != nil || len(v.Messages) != tt.want || cache.Count != 0 {
			t.Errorf("%s: %d messages, cache %+v, %v; want %d", tt.name, len(v.Messages), cache, err, tt.want)
		}
	}
}
