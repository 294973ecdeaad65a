package llm

import (
	"iter"
	"strings"
)

// Chunk is one piece of a streamed answer. Content and reasoning arrive as
// separate deltas; the last chunk of a complete stream carries the finish
// reason and usage.
type Chunk struct {
	// Content is the next piece of the answer text.
	Content string `json:"content,omitempty"`
	// Reasoning is the next piece of the model's thinking.
	Reasoning string `json:"reasoning,omitempty"`
	// ToolCalls are fragments of tool calls.
	ToolCalls []ToolCallDelta `json:"tool_calls,omitempty"`
	// FinishReason is set on the last chunk.
	FinishReason FinishReason `json:"finish_reason,omitempty"`
	// Usage is set on the last chunk when the provider reported usage.
	Usage *Usage `json:"usage,omitempty"`
}

// ToolCallDelta is a fragment of a tool call. The fragments with the same
// Index make one call: ID and Name usually come in the first, and the
// Arguments of all of them, joined in order, are the arguments' JSON text.
type ToolCallDelta struct {
	// Index is the position of the call in the message.
	Index int `json:"index"`
	// ID identifies the call; set in one fragment.
	ID string `json:"id,omitempty"`
	// Name is the tool's name; set in one fragment.
	Name string `json:"name,omitempty"`
	// Arguments is the next piece of the arguments' JSON text.
	Arguments string `json:"arguments,omitempty"`
}

// Accumulator assembles streamed chunks into a Response, so a caller can
// forward each chunk to a user and still have the whole message at the end.
// The zero value is ready to use.
type Accumulator struct {
	content   strings.Builder
	reasoning strings.Builder
	calls     []*toolCallBuilder
	finish    FinishReason
	usage     Usage
}

type toolCallBuilder struct {
	index int
	id    string
	name  string
	args  strings.Builder
}

// Add adds one chunk.
func (a *Accumulator) Add(c Chunk) {
	a.content.WriteString(c.Content)
	a.reasoning.WriteString(c.Reasoning)
	for _, d := range c.ToolCalls {
		b := a.call(d.Index)
		if b.id == "" {
			b.id = d.ID
		}
		if b.name == "" {
			b.name = d.Name
		}
		b.args.WriteString(d.Arguments)
	}
	if c.FinishReason != "" {
		a.finish = c.FinishReason
	}
	if c.Usage != nil {
		a.usage = *c.Usage
	}
}

func (a *Accumulator) call(index int) *toolCallBuilder {
	for _, b := range a.calls {
		if b.index == index {
			return b
		}
	}
	b := &toolCallBuilder{index: index}
	a.calls = append(a.calls, b)
	return b
}

// Response returns the answer assembled so far. Tool calls are in the
// order their first fragment arrived.
func (a *Accumulator) Response() *Response {
	msg := Message{
		Role:      RoleAssistant,
		Content:   a.content.String(),
		Reasoning: a.reasoning.String(),
	}
	for _, b := range a.calls {
		msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: b.id, Name: b.name, Arguments: b.args.String()})
	}
	return &Response{Message: msg, FinishReason: a.finish, Usage: a.usage}
}

// Collect reads a whole stream and returns the assembled Response. If the
// stream fails, Collect returns its error and no Response.
func Collect(stream iter.Seq2[Chunk, error]) (*Response, error) {
	var a Accumulator
	for c, err := range stream {
		if err != nil {
			return nil, err
		}
		a.Add(c)
	}
	return a.Response(), nil
}

// Chunks splits a whole response into the chunks a stream of it would
// carry: reasoning, content, one fragment per tool call, and a last chunk
// with the finish reason and usage. Fakes and replays use it to stream an
// answer that was not recorded as a stream.
func Chunks(r *Response) []Chunk {
	var out []Chunk
	if r.Message.Reasoning != "" {
		out = append(out, Chunk{Reasoning: r.Message.Reasoning})
	}
	if r.Message.Content != "" {
		out = append(out, Chunk{Content: r.Message.Content})
	}
	for i, tc := range r.Message.ToolCalls {
		out = append(out, Chunk{ToolCalls: []ToolCallDelta{{Index: i, ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments}}})
	}
	usage := r.Usage
	return append(out, Chunk{FinishReason: r.FinishReason, Usage: &usage})
}
