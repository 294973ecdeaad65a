package llmtest

import (
	"time"

	"github.com/loomkit/loom/llm"
)

// Fault is a way for a reply to go wrong.
type Fault int

// The faults a reply can script.
const (
	// NoFault answers normally.
	NoFault Fault = iota
	// FaultStatus answers with HTTP status Reply.Status (500 when zero), an
	// OpenAI-style error body, and a Retry-After header when
	// Reply.RetryAfter is set.
	FaultStatus
	// FaultHang sends nothing (or, streamed, Reply.FaultAfter chunks) and
	// then waits until the client gives up or the server is closed.
	FaultHang
	// FaultTruncate ends the response early but cleanly: streamed, after
	// Reply.FaultAfter chunks and without [DONE]; whole, after half the body.
	FaultTruncate
	// FaultDisconnect drops the connection after Reply.FaultAfter chunks
	// (streamed) or half the body (whole).
	FaultDisconnect
	// FaultMalformed sends invalid JSON: the whole body, or, streamed, the
	// chunk after Reply.FaultAfter good ones.
	FaultMalformed
)

// String returns the fault's name.
func (f Fault) String() string {
	switch f {
	case NoFault:
		return "none"
	case FaultStatus:
		return "status"
	case FaultHang:
		return "hang"
	case FaultTruncate:
		return "truncate"
	case FaultDisconnect:
		return "disconnect"
	case FaultMalformed:
		return "malformed"
	}
	return "unknown"
}

// Reply is one scripted answer of the fake server. It is sent whole or as
// a stream of chat.completion.chunk events, as the request asks.
type Reply struct {
	// Content is the answer text.
	Content string
	// Reasoning is the thinking sent before the answer, DeepSeek style.
	Reasoning string
	// ReasoningField is the JSON field that carries Reasoning:
	// "reasoning_content" (DeepSeek, Qwen, Doubao; the default) or
	// "reasoning" (vLLM, Ollama).
	ReasoningField string
	// ToolCalls are the tool calls of the answer.
	ToolCalls []llm.ToolCall
	// FinishReason defaults to "tool_calls" when there are tool calls and
	// "stop" otherwise.
	FinishReason string
	// Usage is reported back; when nil, 10 prompt and 20 completion
	// tokens. Streamed usage is sent only when the request sets
	// stream_options.include_usage, as OpenAI does.
	Usage *llm.Usage
	// Latency is how long the server waits before it answers.
	Latency time.Duration
	// ChunkSize is how many characters (runes) of content, reasoning or
	// tool arguments go in one streamed chunk; 4 when zero.
	ChunkSize int
	// ChunkDelay is how long the server waits between streamed chunks.
	ChunkDelay time.Duration

	// Fault makes the reply go wrong; see the Fault constants.
	Fault Fault
	// FaultAfter is the number of streamed chunks sent before the fault.
	FaultAfter int
	// Status is the HTTP status of a FaultStatus reply; 500 when zero.
	Status int
	// RetryAfter is the Retry-After header of a FaultStatus reply: seconds
	// ("2") or an HTTP date.
	RetryAfter string
}

// Text returns a reply with answer text.
func Text(content string) Reply { return Reply{Content: content} }

// Reasoning returns a reply that thinks (DeepSeek's reasoning_content) and
// then answers.
func Reasoning(reasoning, content string) Reply {
	return Reply{Reasoning: reasoning, Content: content}
}

// ToolCalls returns a reply that calls tools.
func ToolCalls(calls ...llm.ToolCall) Reply { return Reply{ToolCalls: calls} }

// RateLimited returns a 429 reply with the given Retry-After header
// (seconds or an HTTP date; empty for none).
func RateLimited(retryAfter string) Reply {
	return Reply{Fault: FaultStatus, Status: 429, RetryAfter: retryAfter}
}

// ServerError returns a 500 reply.
func ServerError() Reply { return Reply{Fault: FaultStatus, Status: 500} }

// Hang returns a reply that never comes: the server waits until the client
// gives up.
func Hang() Reply { return Reply{Fault: FaultHang} }

// Truncated returns r cut short: streamed, it ends cleanly after `after`
// chunks without [DONE]; whole, after half its body.
func Truncated(r Reply, after int) Reply {
	r.Fault, r.FaultAfter = FaultTruncate, after
	return r
}

// Malformed returns a reply whose body is not valid JSON (streamed, a
// chunk that is not valid JSON).
func Malformed() Reply { return Reply{Content: "malformed", Fault: FaultMalformed} }
