// Package llm is Loom's model layer: chat messages, the Model interface that
// generates or streams an assistant message, the options a call may take, and
// the token usage a provider reports.
//
// The package knows nothing about any provider. Implementations live below
// it: llm/openai talks to any OpenAI-compatible endpoint, llm/replay records
// and replays exchanges, and llm/llmtest is a fake endpoint for tests.
//
// A streamed answer is a Go iterator of Chunks. Chunks carry content and
// reasoning as separate deltas, tool-call fragments, and, last, the finish
// reason and usage. A stream that breaks ends with an error, never silently
// with half an answer. An Accumulator (or Collect) assembles the chunks into
// the same Response that Generate returns.
package llm

import (
	"context"
	"errors"
	"iter"
)

// Sentinel errors that callers branch on. Implementations wrap them together
// with the underlying cause, so errors.Is works and the message stays precise.
var (
	// ErrRateLimited means the provider kept refusing with "too many
	// requests" (HTTP 429) after the implementation's retries.
	ErrRateLimited = errors.New("llm: rate limited")
	// ErrUnavailable means the provider failed (HTTP 5xx, a timeout, a
	// dropped connection) after the implementation's retries.
	ErrUnavailable = errors.New("llm: provider unavailable")
	// ErrTruncated means a response ended before it was complete: a stream
	// closed without its end marker, or a connection cut mid-answer.
	ErrTruncated = errors.New("llm: response truncated")
	// ErrMalformed means the provider sent a response that could not be
	// decoded as a chat completion.
	ErrMalformed = errors.New("llm: malformed response")
)

// Role says who wrote a message.
type Role string

// The roles of a chat.
const (
	RoleSystem    Role = "system"    // instructions to the model
	RoleUser      Role = "user"      // what the person said
	RoleAssistant Role = "assistant" // what the model said, or which tools it called
	RoleTool      Role = "tool"      // the result of one tool call
)

// Message is one turn of a chat.
type Message struct {
	// Role says who wrote the message.
	Role Role `json:"role"`
	// Content is the text of the message.
	Content string `json:"content,omitempty"`
	// Reasoning is the model's thinking before its answer, on assistant
	// messages from providers that return it (DeepSeek's reasoning_content).
	Reasoning string `json:"reasoning,omitempty"`
	// ToolCalls are the tools an assistant message asks to call.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID names the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// ToolCall is one call to a tool requested by the model.
type ToolCall struct {
	// ID identifies the call; the tool message with the result repeats it.
	ID string `json:"id"`
	// Name is the tool's name.
	Name string `json:"name"`
	// Arguments is the JSON text of the arguments as the model wrote it.
	// It is kept as text because models sometimes write invalid JSON, and
	// the caller decides what to do about that.
	Arguments string `json:"arguments"`
}

// System returns a system message.
func System(text string) Message { return Message{Role: RoleSystem, Content: text} }

// User returns a user message.
func User(text string) Message { return Message{Role: RoleUser, Content: text} }

// Assistant returns an assistant message with text and, optionally, tool calls.
func Assistant(text string, calls ...ToolCall) Message {
	return Message{Role: RoleAssistant, Content: text, ToolCalls: calls}
}

// ToolResult returns the tool message that answers call id with content.
func ToolResult(id, content string) Message {
	return Message{Role: RoleTool, ToolCallID: id, Content: content}
}

// FinishReason says why the model stopped.
type FinishReason string

// The usual finish reasons. Providers may send others; they are passed on.
const (
	FinishStop          FinishReason = "stop"           // a natural end or a stop sequence
	FinishLength        FinishReason = "length"         // the token limit was reached
	FinishToolCalls     FinishReason = "tool_calls"     // the model called tools
	FinishContentFilter FinishReason = "content_filter" // the provider withheld content
)

// Usage counts the tokens of one call, as the provider reported them.
type Usage struct {
	// PromptTokens is the size of the input.
	PromptTokens int `json:"prompt_tokens"`
	// CompletionTokens is the size of the output, reasoning included.
	CompletionTokens int `json:"completion_tokens"`
	// ReasoningTokens is the part of CompletionTokens spent thinking,
	// where the provider says.
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
	// CachedTokens is the part of PromptTokens served from the provider's
	// prompt cache, where the provider says.
	CachedTokens int `json:"cached_tokens,omitempty"`
	// TotalTokens is the provider's total, usually prompt + completion.
	TotalTokens int `json:"total_tokens"`
}

// Add returns the sum of u and v, for totals over several calls.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + v.PromptTokens,
		CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		ReasoningTokens:  u.ReasoningTokens + v.ReasoningTokens,
		CachedTokens:     u.CachedTokens + v.CachedTokens,
		TotalTokens:      u.TotalTokens + v.TotalTokens,
	}
}

// Response is a whole answer from a model.
type Response struct {
	// Message is the assistant message: content, reasoning, tool calls.
	Message Message `json:"message"`
	// FinishReason says why the model stopped.
	FinishReason FinishReason `json:"finish_reason,omitempty"`
	// Usage counts the tokens, where the provider reported them.
	Usage Usage `json:"usage"`
}

// Model generates the next assistant message of a chat.
//
// Implementations must be safe for concurrent use.
type Model interface {
	// Generate returns the whole answer to msgs.
	Generate(ctx context.Context, msgs []Message, opts ...Option) (*Response, error)
	// Stream returns the answer to msgs as it is produced. The iterator
	// yields chunks with a nil error; if the call fails it yields one
	// zero Chunk with the error and stops. A stream that ends without an
	// error is complete: its last chunk carries the finish reason and
	// usage. Stopping the iteration early cancels the call.
	Stream(ctx context.Context, msgs []Message, opts ...Option) iter.Seq2[Chunk, error]
}
