package llm_test

import (
	"encoding/json"
	"errors"
	"iter"
	"reflect"
	"testing"

	"github.com/loomkit/loom/llm"
)

func TestAccumulator(t *testing.T) {
	usage := llm.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}
	chunks := []llm.Chunk{
		{Reasoning: "think "},
		{Reasoning: "more"},
		{Content: "Hel"},
		{Content: "lo"},
		{ToolCalls: []llm.ToolCallDelta{{Index: 1, ID: "b", Name: "second", Arguments: `{"x"`}}},
		{ToolCalls: []llm.ToolCallDelta{{Index: 0, ID: "a", Name: "first"}}},
		{ToolCalls: []llm.ToolCallDelta{{Index: 1, Arguments: `:1}`}, {Index: 0, Arguments: `{}`}}},
		// A repeated name is not appended.
		{ToolCalls: []llm.ToolCallDelta{{Index: 0, Name: "first"}}},
		{FinishReason: llm.FinishToolCalls, Usage: &usage},
	}
	var acc llm.Accumulator
	for _, c := range chunks {
		acc.Add(c)
	}
	want := &llm.Response{
		Message: llm.Message{
			Role: llm.RoleAssistant, Content: "Hello", Reasoning: "think more",
			ToolCalls: []llm.ToolCall{{ID: "b", Name: "second", Arguments: `{"x":1}`}, {ID: "a", Name: "first", Arguments: `{}`}},
		},
		FinishReason: llm.FinishToolCalls,
		Usage:        usage,
	}
	if got := acc.Response(); !reflect.DeepEqual(got, want) {
		t.Errorf("Response\n got %+v\nwant %+v", got, want)
	}
}

func seq(chunks []llm.Chunk, err error) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
		if err != nil {
			yield(llm.Chunk{}, err)
		}
	}
}

func TestCollect(t *testing.T) {
	resp := &llm.Response{
		Message:      llm.Message{Role: llm.RoleAssistant, Content: "hi", Reasoning: "r", ToolCalls: []llm.ToolCall{{ID: "1", Name: "n", Arguments: "{}"}}},
		FinishReason: llm.FinishStop,
		Usage:        llm.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3},
	}
	got, err := llm.Collect(seq(llm.Chunks(resp), nil))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, resp) {
		t.Errorf("Collect(Chunks(r))\n got %+v\nwant %+v", got, resp)
	}

	broken := errors.New("cut")
	got, err = llm.Collect(seq(llm.Chunks(resp)[:2], broken))
	if !errors.Is(err, broken) || got != nil {
		t.Errorf("Collect of a broken stream = %+v, %v; want nil, the error", got, err)
	}
}

func TestChunksLastCarriesFinish(t *testing.T) {
	chunks := llm.Chunks(&llm.Response{Message: llm.Assistant("x"), FinishReason: llm.FinishLength})
	last := chunks[len(chunks)-1]
	if last.FinishReason != llm.FinishLength || last.Usage == nil {
		t.Errorf("last chunk = %+v", last)
	}
}

func TestOptions(t *testing.T) {
	tool := llm.Tool{Name: "t", Parameters: json.RawMessage(`{"type":"object"}`)}
	o := llm.NewOptions(
		llm.WithTemperature(0.3),
		llm.WithMaxTokens(100),
		llm.WithThinking(false),
		llm.WithJSON(),
		llm.WithTools(tool),
		llm.WithTools(llm.Tool{Name: "u"}),
		llm.WithToolChoice("required"),
		llm.WithStop("a", "b"),
		llm.WithExtra("k", 1),
		nil,
	)
	if o.Temperature == nil || *o.Temperature != 0.3 || o.MaxTokens != 100 || o.Thinking == nil || *o.Thinking ||
		!o.JSON || len(o.Tools) != 2 || o.ToolChoice != "required" || !reflect.DeepEqual(o.Stop, []string{"a", "b"}) || o.Extra["k"] != 1 {
		t.Errorf("NewOptions = %+v", o)
	}

	// Options round-trip through JSON (recordings depend on it).
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var back llm.Options
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(back)
	if string(b) != string(b2) {
		t.Errorf("round trip\n got %s\nwant %s", b2, b)
	}

	// WithOptions copies: changing the copy leaves the original alone.
	c := llm.NewOptions(llm.WithOptions(o), llm.WithExtra("k", 2), llm.WithTools(llm.Tool{Name: "v"}))
	if o.Extra["k"] != 1 || len(o.Tools) != 2 || c.Extra["k"] != 2 || len(c.Tools) != 3 {
		t.Errorf("WithOptions shares state: original %+v, copy %+v", o, c)
	}
}

func TestMessageJSON(t *testing.T) {
	msgs := []llm.Message{
		llm.System("s"),
		llm.User("u"),
		llm.Assistant("", llm.ToolCall{ID: "1", Name: "f", Arguments: `{"broken":`}),
		llm.ToolResult("1", "r"),
		{Role: llm.RoleAssistant, Content: "c", Reasoning: "why"},
	}
	b, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	var back []llm.Message
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, msgs) {
		t.Errorf("round trip\n got %+v\nwant %+v", back, msgs)
	}
}

func TestUsageAdd(t *testing.T) {
	a := llm.Usage{PromptTokens: 1, CompletionTokens: 2, ReasoningTokens: 3, CachedTokens: 4, TotalTokens: 5}
	if got, want := a.Add(a), (llm.Usage{PromptTokens: 2, CompletionTokens: 4, ReasoningTokens: 6, CachedTokens: 8, TotalTokens: 10}); got != want {
		t.Errorf("Add = %+v, want %+v", got, want)
	}
}
