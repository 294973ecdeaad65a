package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
)

// A2A 1.0 names the JSON-RPC methods after its gRPC service and writes
// its objects as protobuf JSON (TASK_STATE_COMPLETED, ROLE_USER, parts
// without a kind). The endpoint answers those methods too, mapping them
// onto the same handler, so that clients of either version can call it;
// the cards list both interfaces.

// a2aV1Methods are the methods of A2A 1.0 that the endpoint answers.
var a2aV1Methods = map[string]bool{
	"SendMessage": true, "SendStreamingMessage": true, "GetTask": true, "CancelTask": true, "SubscribeToTask": true,
	"ListTasks": true, "GetExtendedAgentCard": true,
	"CreateTaskPushNotificationConfig": true, "GetTaskPushNotificationConfig": true,
	"ListTaskPushNotificationConfigs": true, "DeleteTaskPushNotificationConfig": true,
}

// v1Request is a JSON-RPC request of A2A 1.0.
type v1Request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      any             `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// v1Message is a message as A2A 1.0 writes it.
type v1Message struct {
	MessageID string         `json:"messageId,omitempty"`
	ContextID string         `json:"contextId,omitempty"`
	TaskID    string         `json:"taskId,omitempty"`
	Role      string         `json:"role,omitempty"`
	Parts     []v1Part       `json:"parts"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// v1Part is a part as A2A 1.0 writes it: one of text, data, url or raw.
type v1Part struct {
	Text      *string         `json:"text,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	URL       string          `json:"url,omitempty"`
	Raw       string          `json:"raw,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	Metadata  map[string]any  `json:"metadata,omitempty"`
}

// serveV1 answers a request of A2A 1.0 with handler h.
func (h *a2aHandler) serveV1(w http.ResponseWriter, r *http.Request, req *v1Request) {
	ctx := r.Context()
	reply := func(result any, err error) {
		if err != nil {
			writeJSON(w, http.StatusOK, v1Error(req.ID, err))
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
	}
	switch req.Method {
	case "SendMessage":
		p, err := v1SendParams(req.Params)
		if err != nil {
			reply(nil, err)
			return
		}
		res, err := h.OnSendMessage(ctx, p)
		if err != nil {
			reply(nil, err)
			return
		}
		reply(map[string]any{"task": v1Task(res.(*a2a.Task))}, nil)
	case "SendStreamingMessage":
		p, err := v1SendParams(req.Params)
		if err != nil {
			reply(nil, err)
			return
		}
		h.streamV1(w, req.ID, h.OnSendMessageStream(ctx, p))
	case "SubscribeToTask":
		id, err := v1TaskID(req.Params)
		if err != nil {
			reply(nil, err)
			return
		}
		h.streamV1(w, req.ID, h.OnResubscribeToTask(ctx, &a2a.TaskIDParams{ID: id}))
	case "GetTask":
		id, err := v1TaskID(req.Params)
		if err != nil {
			reply(nil, err)
			return
		}
		t, err := h.OnGetTask(ctx, &a2a.TaskQueryParams{ID: id})
		if err != nil {
			reply(nil, err)
			return
		}
		reply(v1Task(t), nil)
	case "CancelTask":
		id, err := v1TaskID(req.Params)
		if err != nil {
			reply(nil, err)
			return
		}
		t, err := h.OnCancelTask(ctx, &a2a.TaskIDParams{ID: id})
		if err != nil {
			reply(nil, err)
			return
		}
		reply(v1Task(t), nil)
	case "ListTasks":
		reply(nil, fmt.Errorf("%w: ListTasks is not supported; keep the ids of your tasks and call GetTask", a2a.ErrUnsupportedOperation))
	case "GetExtendedAgentCard":
		reply(nil, a2a.ErrAuthenticatedExtendedCardNotConfigured)
	default: // the push notification configs
		reply(nil, errNoPush)
	}
}

// streamV1 writes events as A2A 1.0 stream responses over SSE; an error
// before the first event is a plain JSON-RPC answer.
func (h *a2aHandler) streamV1(w http.ResponseWriter, id any, events iter.Seq2[a2a.Event, error]) {
	started := false
	for ev, err := range events {
		if err != nil {
			if !started {
				writeJSON(w, http.StatusOK, v1Error(id, err))
				return
			}
			writeSSE(w, v1Error(id, err))
			return
		}
		var res map[string]any
		switch e := ev.(type) {
		case *a2a.Task:
			res = map[string]any{"task": v1Task(e)}
		case *a2a.TaskStatusUpdateEvent:
			res = map[string]any{"statusUpdate": map[string]any{"taskId": e.TaskID, "contextId": e.ContextID, "status": v1Status(e.Status), "metadata": e.Metadata}}
		case *a2a.TaskArtifactUpdateEvent:
			res = map[string]any{"artifactUpdate": map[string]any{"taskId": e.TaskID, "contextId": e.ContextID, "artifact": v1Artifact(e.Artifact), "append": e.Append, "lastChunk": e.LastChunk}}
		default:
			continue
		}
		if !started {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Cache-Control", "no-cache")
			w.Header().Set("X-Accel-Buffering", "no")
			w.WriteHeader(http.StatusOK)
			started = true
		}
		if writeSSE(w, map[string]any{"jsonrpc": "2.0", "id": id, "result": res}) != nil {
			return // the client went away
		}
	}
}

// writeSSE writes v as one SSE data event and flushes it.
func writeSSE(w http.ResponseWriter, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
		return err
	}
	return http.NewResponseController(w).Flush()
}

// v1Codes are the JSON-RPC codes of A2A's errors.
var v1Codes = []struct {
	err  error
	code int
}{
	{a2a.ErrParseError, -32700}, {a2a.ErrInvalidRequest, -32600}, {a2a.ErrMethodNotFound, -32601},
	{a2a.ErrInvalidParams, -32602}, {a2a.ErrTaskNotFound, -32001}, {a2a.ErrTaskNotCancelable, -32002},
	{a2a.ErrPushNotificationNotSupported, -32003}, {a2a.ErrUnsupportedOperation, -32004},
	{a2a.ErrUnsupportedContentType, -32005}, {a2a.ErrInvalidAgentResponse, -32006},
	{a2a.ErrAuthenticatedExtendedCardNotConfigured, -32007},
}

// v1Error is err as a JSON-RPC error answer: its A2A code and what went
// wrong; anything else is an internal error, which says no more.
func v1Error(id any, err error) map[string]any {
	e := map[string]any{"code": -32603, "message": a2a.ErrInternalError.Error()}
	for _, c := range v1Codes {
		if errors.Is(err, c.err) {
			e = map[string]any{"code": c.code, "message": err.Error()}
			break
		}
	}
	if errors.Is(err, a2a.ErrInternalError) {
		e = map[string]any{"code": -32603, "message": err.Error()}
	}
	return map[string]any{"jsonrpc": "2.0", "id": id, "error": e}
}

// v1SendParams reads the params of SendMessage.
func v1SendParams(raw json.RawMessage) (*a2a.MessageSendParams, error) {
	var p struct {
		Message *v1Message `json:"message"`
		Config  *struct {
			ReturnImmediately bool            `json:"returnImmediately"`
			HistoryLength     *int            `json:"historyLength"`
			Push              json.RawMessage `json:"taskPushNotificationConfig"`
			AcceptedOutput    []string        `json:"acceptedOutputModes"`
		} `json:"configuration"`
		Metadata map[string]any `json:"metadata"`
		Tenant   string         `json:"tenant"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("%w: params: %v", a2a.ErrInvalidParams, err)
	}
	out := &a2a.MessageSendParams{Metadata: p.Metadata}
	if p.Config != nil {
		blocking := !p.Config.ReturnImmediately
		out.Config = &a2a.MessageSendConfig{Blocking: &blocking, HistoryLength: p.Config.HistoryLength, AcceptedOutputModes: p.Config.AcceptedOutput}
		if present(p.Config.Push) {
			out.Config.PushConfig = &a2a.PushConfig{}
		}
	}
	if p.Message == nil {
		return out, nil
	}
	m := &a2a.Message{ID: p.Message.MessageID, ContextID: p.Message.ContextID, TaskID: a2a.TaskID(p.Message.TaskID), Metadata: p.Message.Metadata}
	switch strings.ToUpper(p.Message.Role) {
	case "", "ROLE_USER", "USER":
		m.Role = a2a.MessageRoleUser
	default:
		m.Role = a2a.MessageRole(strings.ToLower(strings.TrimPrefix(p.Message.Role, "ROLE_")))
	}
	for i, part := range p.Message.Parts {
		switch {
		case part.Text != nil:
			m.Parts = append(m.Parts, a2a.TextPart{Text: *part.Text})
		case present(part.Data):
			var data map[string]any
			if err := json.Unmarshal(part.Data, &data); err != nil {
				return nil, invalidParams("message.parts[%d]: data must be a JSON object, the agent's input or an answer", i)
			}
			m.Parts = append(m.Parts, a2a.DataPart{Data: data})
		case part.URL != "" || part.Raw != "":
			m.Parts = append(m.Parts, a2a.FilePart{})
		default:
			return nil, invalidParams("message.parts[%d]: a part needs text, data, url or raw", i)
		}
	}
	out.Message = m
	return out, nil
}

// v1TaskID reads the id of GetTask, CancelTask and SubscribeToTask.
func v1TaskID(raw json.RawMessage) (a2a.TaskID, error) {
	var p struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return "", fmt.Errorf("%w: params: %v", a2a.ErrInvalidParams, err)
	}
	if p.ID == "" {
		return "", invalidParams("params.id is required: the task's id")
	}
	return a2a.TaskID(p.ID), nil
}

func v1Task(t *a2a.Task) map[string]any {
	out := map[string]any{"id": t.ID, "contextId": t.ContextID, "status": v1Status(t.Status)}
	if len(t.Artifacts) > 0 {
		arts := make([]any, len(t.Artifacts))
		for i, a := range t.Artifacts {
			arts[i] = v1Artifact(a)
		}
		out["artifacts"] = arts
	}
	if len(t.History) > 0 {
		hist := make([]any, len(t.History))
		for i, m := range t.History {
			hist[i] = v1Msg(m)
		}
		out["history"] = hist
	}
	if t.Metadata != nil {
		out["metadata"] = t.Metadata
	}
	return out
}

func v1Status(s a2a.TaskStatus) map[string]any {
	out := map[string]any{"state": "TASK_STATE_" + strings.ToUpper(strings.ReplaceAll(string(s.State), "-", "_"))}
	if s.Message != nil {
		out["message"] = v1Msg(s.Message)
	}
	if s.Timestamp != nil {
		out["timestamp"] = s.Timestamp.UTC().Format(time.RFC3339Nano)
	}
	return out
}

func v1Msg(m *a2a.Message) map[string]any {
	out := map[string]any{"messageId": m.ID, "role": "ROLE_" + strings.ToUpper(string(m.Role)), "parts": v1Parts(m.Parts)}
	if m.ContextID != "" {
		out["contextId"] = m.ContextID
	}
	if m.TaskID != "" {
		out["taskId"] = m.TaskID
	}
	if m.Metadata != nil {
		out["metadata"] = m.Metadata
	}
	return out
}

func v1Artifact(a *a2a.Artifact) map[string]any {
	return map[string]any{"artifactId": a.ID, "name": a.Name, "description": a.Description, "parts": v1Parts(a.Parts)}
}

func v1Parts(parts a2a.ContentParts) []any {
	out := make([]any, 0, len(parts))
	for _, p := range parts {
		switch p := p.(type) {
		case a2a.TextPart:
			out = append(out, map[string]any{"text": p.Text})
		case a2a.DataPart:
			out = append(out, map[string]any{"data": p.Data})
		}
	}
	return out
}
