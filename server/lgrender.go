package server

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
)

// lgRender turns a run's events into LangGraph stream events for the
// modes one client asked for:
//
//   - values: the state after every step; at an interrupt the state, then
//     {"__interrupt__": [{value, id}]}. On a thread with a conversation
//     (see chatconv.go) the state carries "messages", and the run's end
//     repeats it with the agent's reply.
//   - updates: {node: state} after every step; {"__interrupt__": …}.
//   - messages-tuple: model output pieces as [AIMessageChunk, metadata].
//   - messages: messages/metadata, messages/partial (the text so far) and
//     messages/complete (at the end of the node's step).
//   - custom: every other event a node emits (status, tool_call,
//     tool_result, the agent's own kinds) as {kind, node, step, data}.
//   - events: on_chain_start/end for the run and each node,
//     on_chat_model_stream, on_tool_start/end, on_custom_event.
//   - debug, tasks, checkpoints: the step's checkpoint as a task result.
//
// Steps inside subgraphs are streamed only for a run that asked for
// stream_subgraphs, as LangGraph does: each event's name then carries the
// subgraph's namespace, "updates|outer" ("updates|outer|inner" two levels
// down; Loom's namespaces name the nodes, without LangGraph's task ids),
// and updates are keyed by the inner node's own name. Model output and
// custom events from inside subgraphs are streamed either way, named with
// the namespace only when it was asked for.
//
// A run's error is an "error" event {error, message} in every mode.
type lgRender struct {
	run   *run
	modes map[string]bool
	sw    *streamWriter
	// text accumulates the "messages" mode's partial messages by id.
	text map[string]*lgMessage
	// subgraphs is set when the run asked for stream_subgraphs.
	subgraphs bool
	// chat, when set, is the thread's conversation, shown as "messages"
	// in the values: the run's input at every step, and the agent's reply
	// at the end.
	chat *chatView
}

type lgMessage struct {
	Type             string         `json:"type"`
	Content          string         `json:"content"`
	ID               string         `json:"id"`
	AdditionalKwargs map[string]any `json:"additional_kwargs"`
	ResponseMetadata map[string]any `json:"response_metadata"`
	ToolCallChunks   []any          `json:"tool_call_chunks,omitempty"`
}

func newLGRender(r *run, modes []string, sw *streamWriter) *lgRender {
	m := map[string]bool{}
	for _, x := range modes {
		m[x] = true
	}
	return &lgRender{run: r, modes: m, sw: sw, text: map[string]*lgMessage{}, subgraphs: slices.Contains(r.modes, subgraphsMode)}
}

// subgraphsMode, among a run's modes, marks a run that asked for
// stream_subgraphs; it travels with the run's job like the modes.
const subgraphsMode = "subgraphs"

func (l *lgRender) emit(mode, name string, id int, data any) error {
	if mode != "" && !l.modes[mode] {
		return nil
	}
	return l.sw.event(name, id, data)
}

// messageID names the message a node step's model output builds.
func (l *lgRender) messageID(e *event) string {
	return "run-" + l.run.id + "-" + e.Node + "-" + itoa(e.Step)
}

func (l *lgRender) meta(e *event) map[string]any {
	return map[string]any{"langgraph_node": e.Node, "langgraph_step": e.Step, "thread_id": publicID(l.run.thread),
		"run_id": l.run.id, "assistant_id": cmp.Or(l.run.assistant, l.run.agent), "tags": []string{}}
}

func (l *lgRender) chainEvent(kind, name string, e *event, data any) map[string]any {
	return map[string]any{"event": kind, "name": name, "run_id": l.run.id, "tags": []string{},
		"metadata": l.meta(e), "parent_ids": []string{}, "data": data}
}

func interruptsJSON(pending []checkpoint.Interrupt) map[string][]lgInterrupt {
	return map[string][]lgInterrupt{"__interrupt__": lgInterrupts(pending)}
}

func (l *lgRender) render(e *event) error {
	id := e.Seq
	var err error
	var ns string // the event name's namespace suffix
	node := e.Node
	if e.Namespace != "" {
		switch {
		case l.subgraphs:
			ns = "|" + strings.ReplaceAll(e.Namespace, "/", "|")
			node = strings.TrimPrefix(e.Node, e.Namespace+"/")
		case e.Kind == graph.KindNodeStart || e.Kind == graph.KindNodeEnd || e.Kind == graph.KindState || e.Kind == graph.KindInterrupt:
			return nil
		}
	}
	try := func(mode, name string, data any) {
		if err == nil {
			err = l.emit(mode, name+ns, id, data)
		}
	}
	switch e.Kind {
	case graph.KindRunStart:
		try("events", "events", l.chainEvent("on_chain_start", l.run.agent, e, map[string]any{"input": l.run.input}))
	case graph.KindNodeStart:
		try("events", "events", l.chainEvent("on_chain_start", e.Node, e, map[string]any{}))
		try("debug", "debug", map[string]any{"type": "task", "step": e.Step, "payload": map[string]any{"name": e.Node}})
		try("tasks", "tasks", map[string]any{"id": e.Node + ":" + itoa(e.Step), "name": e.Node, "interrupts": []any{}, "triggers": []string{}})
	case graph.KindNodeEnd:
		try("events", "events", l.chainEvent("on_chain_end", e.Node, e, map[string]any{"duration_ms": float64(e.Duration.Microseconds()) / 1000}))
		mid := l.messageID(e)
		if m, ok := l.text[mid]; ok {
			try("messages", "messages/complete", []*lgMessage{m})
			delete(l.text, mid)
		}
	case graph.KindState:
		try("values", "values", l.chat.values(e.Data, nil, nil, false))
		try("updates", "updates", map[string]json.RawMessage{node: e.Data})
		try("tasks", "tasks", map[string]any{"id": e.Node + ":" + itoa(e.Step), "name": e.Node, "interrupts": []any{},
			"result": [][]any{{e.Node, e.Data}}})
		ck := map[string]any{"values": e.Data, "next": []string{}, "tasks": []any{},
			"config":   map[string]any{"configurable": map[string]any{"thread_id": publicID(l.run.thread), "checkpoint_ns": "", "checkpoint_id": e.Checkpoint}},
			"metadata": map[string]any{"source": "loop", "step": e.Step, "node": e.Node}}
		try("checkpoints", "checkpoints", ck)
		try("debug", "debug", map[string]any{"type": "checkpoint", "step": e.Step, "payload": ck})
	case graph.KindToken, graph.KindReasoning:
		var text string
		_ = json.Unmarshal(e.Data, &text)
		mid := l.messageID(e)
		chunk := &lgMessage{Type: "AIMessageChunk", ID: mid, AdditionalKwargs: map[string]any{}, ResponseMetadata: map[string]any{}, ToolCallChunks: []any{}}
		if e.Kind == graph.KindToken {
			chunk.Content = text
		} else {
			chunk.AdditionalKwargs["reasoning_content"] = text
		}
		try("messages-tuple", "messages", []any{chunk, l.meta(e)})
		if l.modes["messages"] {
			m, ok := l.text[mid]
			if !ok {
				m = &lgMessage{Type: "ai", ID: mid, AdditionalKwargs: map[string]any{}, ResponseMetadata: map[string]any{}}
				l.text[mid] = m
				try("messages", "messages/metadata", map[string]any{mid: map[string]any{"metadata": l.meta(e)}})
			}
			if e.Kind == graph.KindToken {
				m.Content += text
			} else {
				r, _ := m.AdditionalKwargs["reasoning_content"].(string)
				m.AdditionalKwargs["reasoning_content"] = r + text
			}
			try("messages", "messages/partial", []*lgMessage{m})
		}
		try("events", "events", l.chainEvent("on_chat_model_stream", e.Node, e, map[string]any{"chunk": chunk}))
	case graph.KindInterrupt:
		try("updates", "updates", interruptsJSON(e.pending()))
		try("tasks", "tasks", map[string]any{"id": e.Node + ":" + itoa(e.Step+1), "name": e.Node,
			"interrupts": lgInterrupts(e.pending()), "result": [][]any{}})
	case graph.KindRunEnd:
		switch {
		case e.Interrupt != nil:
			try("values", "values", l.chat.values(e.Data, e.Data, e.Interrupt, true))
			try("values", "values", interruptsJSON(e.pending()))
		case l.chat != nil && present(e.Data):
			// The last step's values, now with the agent's reply.
			try("values", "values", l.chat.values(e.Data, e.Data, nil, true))
		}
		try("events", "events", l.chainEvent("on_chain_end", l.run.agent, e, map[string]any{"output": e.Data}))
	case graph.KindError:
		try("", "error", map[string]string{"error": e.ErrCode, "message": e.Err})
	default: // status, tool calls and results, the agent's own kinds
		custom := map[string]any{"kind": e.Kind, "node": e.Node, "step": e.Step, "data": e.Data}
		try("custom", "custom", custom)
		switch e.Kind {
		case graph.KindToolCall:
			try("events", "events", l.chainEvent("on_tool_start", toolName(e.Data), e, map[string]any{"input": e.Data}))
		case graph.KindToolResult:
			try("events", "events", l.chainEvent("on_tool_end", toolName(e.Data), e, map[string]any{"output": e.Data}))
		default:
			try("events", "events", l.chainEvent("on_custom_event", string(e.Kind), e, e.Data))
		}
	}
	return err
}

// toolName reads the "name" (or "tool") field of a tool event's data.
func toolName(data json.RawMessage) string {
	var t struct {
		Name string `json:"name"`
		Tool string `json:"tool"`
	}
	_ = json.Unmarshal(data, &t)
	if t.Name == "" {
		return t.Tool
	}
	return t.Name
}

func itoa(n int) string { return strconv.Itoa(n) }
