package graph

import (
	"context"
	"time"
)

// Kind names an event's kind. The runtime emits the kinds below; nodes emit
// their own with Emit (the model layer uses KindToken and KindReasoning).
type Kind string

// Event kinds. Data holds, by kind:
//   - KindRunStart: nil
//   - KindRunEnd: the run's *Result[S]
//   - KindNodeStart: nil
//   - KindNodeEnd: time.Duration the step took
//   - KindState: the new state S, after it was checkpointed
//   - KindInterrupt: *checkpoint.Interrupt, one event per question
//   - KindExpired: *checkpoint.Interrupt, a question whose deadline
//     passed unanswered, now answered with its default
//   - KindCached: the cache key (string) of a step whose result came
//     from the node's cache (see Cache)
//   - KindError: nil; the error is in Err
//   - anything else: whatever the node passed to Emit
const (
	KindRunStart  Kind = "run_start"
	KindRunEnd    Kind = "run_end"
	KindNodeStart Kind = "node_start"
	KindNodeEnd   Kind = "node_end"
	KindState     Kind = "state"
	KindInterrupt Kind = "interrupt"
	KindExpired   Kind = "expired"
	KindError     Kind = "error"
	// KindToken carries a piece of model output text (string).
	KindToken Kind = "token"
	// KindReasoning carries a piece of model reasoning text (string).
	KindReasoning Kind = "reasoning"
	// KindStatus carries a short status line for the user (string).
	KindStatus Kind = "status"
	// KindToolCall carries a tool call the agent makes (a JSON-encodable
	// value with the tool's name and arguments).
	KindToolCall Kind = "tool_call"
	// KindToolResult carries a tool's result (JSON-encodable).
	KindToolResult Kind = "tool_result"
)

// Event is one thing that happened in a run.
type Event struct {
	Kind   Kind
	Thread string
	Run    string
	// Node is the node the event belongs to; in a fan-out branch it is
	// "node[i]", in a subgraph "outer/inner".
	Node string
	// Namespace, for an event from inside a subgraph, is the path of the
	// node that runs the subgraph ("outer", or "outer/middle" two levels
	// down); "" for the run's own graph.
	Namespace string
	// Step is the thread's step number of the node running.
	Step int
	// Checkpoint is the id of the checkpoint written, where one was.
	Checkpoint string
	Time       time.Time
	Data       any
	Err        error
}

// Emit sends a custom event from inside a node to whoever streams the run.
// It is cheap when nobody streams, and does nothing outside a run.
func Emit(ctx context.Context, kind Kind, data any) {
	rc := runOf(ctx)
	if rc == nil || rc.emit == nil {
		return
	}
	rc.emit(Event{Kind: kind, Thread: rc.thread, Run: rc.run, Node: rc.node, Step: rc.step, Time: time.Now(), Data: data})
}
