package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
)

// a2aRoutes serves the Agent2Agent protocol (A2A 0.3, JSON-RPC): a card
// per assistant at /a2a/{assistant}/.well-known/agent-card.json (the
// first agent's also at /.well-known/agent-card.json), public, and
// JSON-RPC at /a2a/{assistant}, behind the API's keys.
//
// A task is a thread of the caller's: the task id and the context id are
// the thread id. message/send runs the assistant on it (a new thread
// when the message names none) and returns the task; message/stream
// streams the run's status lines, then its reply. A run that stops for a
// question leaves the task input-required, and the next message on the
// task answers it, as a chat message would.
func (s *Server) a2aRoutes() {
	s.Handle("GET /.well-known/agent-card.json", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(s.order) == 0 {
			writeError(w, errorf(http.StatusNotFound, "not_found", "this server serves no agent"))
			return
		}
		s.serveCard(w, r, s.order[0])
	}))
	s.Handle("GET /a2a/{assistant}/.well-known/agent-card.json", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.serveCard(w, r, r.PathValue("assistant"))
	}))
	s.HandleAPI("/a2a/{assistant}", http.HandlerFunc(s.serveA2A))
}

// a2aProtocol is the version of A2A that the endpoint speaks.
const a2aProtocol = "0.3.0"

// serveCard writes the agent card of assistant id: an agent's to anyone,
// an assistant's (a configuration kept per key) to its key only.
func (s *Server) serveCard(w http.ResponseWriter, r *http.Request, id string) {
	a, ok := s.agents[id]
	if !ok {
		owner, err := s.authenticate(r)
		if err == nil {
			a, _, err = s.assistant(r.Context(), owner, id)
		}
		if err != nil {
			setRetryAfter(w, err)
			writeError(w, err)
			return
		}
	}
	// The card is A2A 0.3's, with the interfaces of A2A 1.0 added: a
	// client of either version finds the endpoint.
	card, err := json.Marshal(s.card(r, id, a))
	var fields map[string]any
	if err == nil {
		err = json.Unmarshal(card, &fields)
	}
	if err != nil {
		writeError(w, fmt.Errorf("encode the card of %s: %w", id, err))
		return
	}
	endpoint := fields["url"]
	fields["supportedInterfaces"] = []map[string]any{
		{"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
		{"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": a2aProtocol},
	}
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Cache-Control", "no-cache")
	writeJSON(w, http.StatusOK, fields)
}

// card is the agent card of assistant id, which runs agent a.
func (s *Server) card(r *http.Request, id string, a *builtAgent) *a2a.AgentCard {
	scheme := "http"
	if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
		scheme = "https"
	}
	desc := a.Description
	if a.DescriptionZh != "" {
		desc += "\n" + a.DescriptionZh
	}
	modes := []string{"text/plain", "application/json"}
	c := &a2a.AgentCard{
		Name:               id,
		Description:        desc,
		URL:                scheme + "://" + r.Host + "/a2a/" + url.PathEscape(id),
		PreferredTransport: a2a.TransportProtocolJSONRPC,
		ProtocolVersion:    a2aProtocol,
		Version:            "1.0.0",
		Provider:           &a2a.AgentProvider{Org: "Loom", URL: scheme + "://" + r.Host},
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  modes,
		DefaultOutputModes: modes,
		Skills: []a2a.AgentSkill{{
			ID: a.Name, Name: a.Name, Description: desc, Tags: []string{"loom", a.Name},
			InputModes: modes, OutputModes: modes,
		}},
	}
	if s.locked() {
		c.SecuritySchemes = a2a.NamedSecuritySchemes{
			"bearer": a2a.HTTPAuthSecurityScheme{Scheme: "bearer", Description: "the API key as a bearer token"},
			"apiKey": a2a.APIKeySecurityScheme{In: a2a.APIKeySecuritySchemeInHeader, Name: "x-api-key", Description: "the API key"},
		}
		c.Security = []a2a.SecurityRequirements{{"bearer": {}}, {"apiKey": {}}}
	}
	return c
}

// serveA2A answers one JSON-RPC request to assistant {assistant}.
func (s *Server) serveA2A(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeRPCError(w, http.StatusMethodNotAllowed, -32600, "send JSON-RPC requests with POST")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeRPCError(w, http.StatusRequestEntityTooLarge, -32600, fmt.Sprintf("request body is larger than %d bytes", mbe.Limit))
			return
		}
		writeRPCError(w, http.StatusBadRequest, -32700, "the request body could not be read")
		return
	}
	owner := Caller(r.Context())
	id := r.PathValue("assistant")
	a, _, err := s.runAssistant(r.Context(), owner, id)
	if err != nil {
		ae := toAPI(err)
		writeRPCError(w, ae.status, -32600, ae.message)
		return
	}
	h := &a2aHandler{s: s, owner: owner, assistant: id, a: a}
	var req v1Request
	if json.Unmarshal(body, &req) == nil && a2aV1Methods[req.Method] && req.JSONRPC == "2.0" {
		h.serveV1(w, r, &req)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	w.Header().Set("Content-Type", "application/json") // SSE answers set their own
	a2asrv.NewJSONRPCHandler(h).ServeHTTP(w, r)
}

// writeRPCError writes a JSON-RPC error answering a request that could
// not be read, with HTTP status status.
func writeRPCError(w http.ResponseWriter, status, code int, message string) {
	writeJSON(w, status, map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": message}})
}

// a2aHandler answers A2A calls of owner to one assistant.
type a2aHandler struct {
	s         *Server
	owner     string
	assistant string // the assistant id the caller named
	a         *builtAgent
}

// rpcError turns a server error into an A2A error: what the caller can
// fix says what, anything else is logged and named by its id.
func (h *a2aHandler) rpcError(ctx context.Context, err error) error {
	ae := toAPI(err)
	switch {
	case ae.status == http.StatusNotFound:
		return fmt.Errorf("%w: %s", a2a.ErrTaskNotFound, ae.message)
	case ae.status >= 500:
		h.s.log.ErrorContext(ctx, "A2A call failed", "error_id", ErrorID(err), "err", err)
		return fmt.Errorf("%w: %s", a2a.ErrInternalError, ae.message)
	case ae.status == http.StatusConflict || ae.status == http.StatusTooManyRequests:
		return fmt.Errorf("%w: %s", a2a.ErrInvalidRequest, ae.message)
	}
	return fmt.Errorf("%w: %s", a2a.ErrInvalidParams, ae.message)
}

func invalidParams(format string, args ...any) error {
	return fmt.Errorf("%w: %s", a2a.ErrInvalidParams, fmt.Sprintf(format, args...))
}

// start checks a message and starts the run it asks for: on the thread
// its task or context names (new when none), with its text as a chat
// message (which answers the thread's question when it waits on one) or
// its data as the agent's input (or as the answer).
func (h *a2aHandler) start(ctx context.Context, p *a2a.MessageSendParams) (*run, error) {
	m := p.Message
	if m == nil {
		return nil, invalidParams("params.message is required")
	}
	if p.Config != nil && p.Config.PushConfig != nil {
		return nil, fmt.Errorf("%w: push notifications are not supported; stream the task or poll it with tasks/get", a2a.ErrPushNotificationNotSupported)
	}
	if m.Role != "" && m.Role != a2a.MessageRoleUser {
		return nil, invalidParams("message.role must be user, not %q", m.Role)
	}
	tid := string(m.TaskID)
	if tid == "" {
		tid = m.ContextID
	} else if m.ContextID != "" && m.ContextID != tid {
		return nil, invalidParams("taskId %q and contextId %q differ: here a task is a thread and both are its id", m.TaskID, m.ContextID)
	}
	var text []string
	var data json.RawMessage
	for i, part := range m.Parts {
		switch p := part.(type) {
		case a2a.TextPart:
			text = append(text, p.Text)
		case a2a.DataPart:
			if data != nil {
				return nil, invalidParams("message.parts: more than one data part; send the input as one")
			}
			b, err := json.Marshal(p.Data)
			if err != nil {
				return nil, invalidParams("message.parts[%d]: data is not JSON", i)
			}
			data = b
		case a2a.FilePart:
			return nil, fmt.Errorf("%w: message.parts[%d] is a file; %s takes text or data parts", a2a.ErrUnsupportedContentType, i, h.assistant)
		default:
			return nil, invalidParams("message.parts[%d]: unknown kind of part", i)
		}
	}
	joined := strings.TrimSpace(strings.Join(text, "\n"))
	switch {
	case data != nil && joined != "":
		return nil, invalidParams("message.parts: send text or a data part, not both")
	case data == nil && joined == "":
		return nil, invalidParams("message.parts: no text and no data; send what the agent should do")
	}

	rr := runRequest{AssistantID: h.assistant, IfNotExists: "create"}
	if tid == "" {
		tid = checkpoint.NewID()
	} else {
		if err := checkThreadID(tid); err != nil {
			return nil, h.rpcError(ctx, err)
		}
		t, err := h.s.thread(ctx, tid, h.owner)
		switch {
		case err != nil && toAPI(err).status != http.StatusNotFound:
			return nil, h.rpcError(ctx, err)
		case err != nil && m.TaskID != "":
			return nil, fmt.Errorf("%w: task %s not found", a2a.ErrTaskNotFound, tid)
		case err == nil && t.Agent != "" && t.Agent != h.a.Name:
			return nil, fmt.Errorf("%w: task %s belongs to agent %s, not %s", a2a.ErrTaskNotFound, tid, t.Agent, h.a.Name)
		case err == nil && data != nil && t.Status == StatusInterrupted:
			rr.Command = &struct {
				Resume json.RawMessage `json:"resume"`
				Update json.RawMessage `json:"update"`
				Goto   json.RawMessage `json:"goto"`
			}{Resume: data}
			data = nil
		}
	}
	switch {
	case data != nil:
		rr.Input = data
	case rr.Command == nil:
		msgs, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", "content": joined}}})
		rr.Input = msgs
	}
	if m.ID != "" {
		rr.Metadata, _ = json.Marshal(map[string]string{"a2a_message_id": m.ID})
	}
	run, err := h.s.prepareRun(ctx, tid, h.owner, &rr, nil)
	if err != nil {
		return nil, h.rpcError(ctx, err)
	}
	return run, nil
}

// task is the A2A task of thread tid in state, with the agent's reply
// (and question) as its status message; a done task carries the reply
// and the final state as its artifact.
func (h *a2aHandler) task(tid string, state a2a.TaskState, values json.RawMessage, pending *checkpoint.Interrupt, errText string, at time.Time) *a2a.Task {
	t := &a2a.Task{ID: a2a.TaskID(tid), ContextID: tid, Status: a2a.TaskStatus{State: state},
		Metadata: map[string]any{"assistant": h.assistant, "agent": h.a.Name}}
	if !at.IsZero() {
		t.Status.Timestamp = &at
	}
	reply := ""
	if values != nil || pending != nil {
		reply = strings.TrimSpace(h.a.reply(values, pending))
	}
	msg := func(parts ...a2a.Part) *a2a.Message {
		m := a2a.NewMessageForTask(a2a.MessageRoleAgent, t, parts...)
		return m
	}
	switch state {
	case a2a.TaskStateFailed:
		t.Status.Message = msg(a2a.TextPart{Text: errText})
	case a2a.TaskStateInputRequired:
		parts := []a2a.Part{a2a.TextPart{Text: question(reply)}}
		if q := jsonValue(pending.Payload); q != nil {
			parts = append(parts, a2a.DataPart{Data: q})
		}
		t.Status.Message = msg(parts...)
	case a2a.TaskStateCompleted, a2a.TaskStateCanceled:
		if reply != "" {
			t.Status.Message = msg(a2a.TextPart{Text: reply})
		}
		if state == a2a.TaskStateCompleted {
			parts := []a2a.Part{a2a.TextPart{Text: reply}}
			if v := jsonValue(values); v != nil {
				parts = append(parts, a2a.DataPart{Data: v})
			}
			t.Artifacts = []*a2a.Artifact{{ID: "reply", Name: "reply", Description: "the agent's reply and its final state", Parts: parts}}
		}
	}
	return t
}

// jsonValue is b as an object for a data part: an object as it is,
// another value under "value"; nil for nothing.
func jsonValue(b json.RawMessage) map[string]any {
	if !present(b) {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) == nil {
		return m
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return nil
	}
	return map[string]any{"value": v}
}

// ended is the task of run's thread as its terminal event end leaves it.
func (h *a2aHandler) ended(r *run, end event) *a2a.Task {
	tid := publicID(r.thread)
	switch {
	case end.Kind == graph.KindError && end.ErrCode == "cancelled":
		return h.task(tid, a2a.TaskStateCanceled, nil, nil, "", end.Time)
	case end.Kind == graph.KindError:
		return h.task(tid, a2a.TaskStateFailed, nil, nil, end.Err, end.Time)
	case end.Interrupt != nil:
		return h.task(tid, a2a.TaskStateInputRequired, end.Data, end.Interrupt, "", end.Time)
	}
	return h.task(tid, a2a.TaskStateCompleted, end.Data, nil, "", end.Time)
}

// current is the task of thread tid as it stands: working while a run
// holds it, input-required while it waits on a question, else as its
// last run ended.
func (h *a2aHandler) current(ctx context.Context, tid string) (*a2a.Task, error) {
	if checkThreadID(tid) != nil {
		return nil, fmt.Errorf("%w: task %q not found", a2a.ErrTaskNotFound, tid)
	}
	t, err := h.s.thread(ctx, tid, h.owner)
	if err != nil || (t.Agent != "" && t.Agent != h.a.Name) {
		if err == nil || toAPI(err).status == http.StatusNotFound {
			return nil, fmt.Errorf("%w: task %s not found", a2a.ErrTaskNotFound, tid)
		}
		return nil, h.rpcError(ctx, err)
	}
	if t.Status == StatusBusy {
		return h.task(tid, a2a.TaskStateWorking, nil, nil, "", t.Updated), nil
	}
	cp, err := h.s.head(ctx, t.ID)
	if err != nil {
		return nil, h.rpcError(ctx, err)
	}
	if cp != nil && cp.Interrupt != nil {
		return h.task(tid, a2a.TaskStateInputRequired, cp.State, cp.Interrupt, "", t.Updated), nil
	}
	runs, err := h.s.records.listRuns(ctx, t.ID, 1, 0)
	if err != nil {
		return nil, h.rpcError(ctx, err)
	}
	var values json.RawMessage
	if cp != nil {
		values = cp.State
	}
	if len(runs) == 0 {
		return h.task(tid, a2a.TaskStateSubmitted, nil, nil, "", t.Updated), nil
	}
	last := runs[0]
	switch last.Status {
	case runPending, runRunning:
		return h.task(tid, a2a.TaskStateWorking, nil, nil, "", last.Updated), nil
	case runError:
		return h.task(tid, a2a.TaskStateFailed, nil, nil, last.Error, last.Updated), nil
	case runInterrupted:
		return h.task(tid, a2a.TaskStateCanceled, values, nil, "", last.Updated), nil
	}
	return h.task(tid, a2a.TaskStateCompleted, values, nil, "", last.Updated), nil
}

// OnSendMessage runs the agent for a message and, unless the caller asked
// not to block, waits for the run and returns its task.
func (h *a2aHandler) OnSendMessage(ctx context.Context, p *a2a.MessageSendParams) (a2a.SendMessageResult, error) {
	run, err := h.start(ctx, p)
	if err != nil {
		return nil, err
	}
	if p.Config != nil && p.Config.Blocking != nil && !*p.Config.Blocking {
		t := h.task(publicID(run.thread), a2a.TaskStateSubmitted, nil, nil, "", time.Now())
		t.History = []*a2a.Message{p.Message}
		return t, nil
	}
	end, err := h.s.result(ctx, run)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err() // the client went away; the run goes on
		}
		return nil, h.rpcError(ctx, fmt.Errorf("wait for run %s: %w", run.id, err))
	}
	t := h.ended(run, end)
	t.History = []*a2a.Message{p.Message}
	return t, nil
}

// OnSendMessageStream runs the agent for a message and streams the task:
// working with each status line, then the reply, then how it ended.
func (h *a2aHandler) OnSendMessageStream(ctx context.Context, p *a2a.MessageSendParams) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		defer h.recovered(ctx)
		run, err := h.start(ctx, p)
		if err != nil {
			yield(nil, err)
			return
		}
		t := h.task(publicID(run.thread), a2a.TaskStateSubmitted, nil, nil, "", time.Now())
		t.History = []*a2a.Message{p.Message}
		if !yield(t, nil) {
			return
		}
		h.stream(ctx, run, t, yield)
	}
}

// recovered ends a stream that panicked, logging the panic: the library
// iterates in a goroutine of its own, which the API's recovery does not
// cover. Defer it. (The stream just ends: yield may be what panicked.)
func (h *a2aHandler) recovered(ctx context.Context) {
	if p := recover(); p != nil {
		err := fmt.Errorf("A2A stream panic: %v", p)
		h.s.log.ErrorContext(ctx, "A2A stream panic", "error_id", ErrorID(err), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	}
}

// stream follows run and yields its events as A2A events of task t.
func (h *a2aHandler) stream(ctx context.Context, r *run, t *a2a.Task, yield func(a2a.Event, error) bool) {
	stopped := errors.New("the client stopped reading")
	working := false
	var end event
	err := h.s.follow(ctx, r.feed, 0, func(e *event) error {
		if e.terminal() {
			end = *e
			return nil
		}
		var line string
		switch e.Kind {
		case graph.KindStatus:
			if json.Unmarshal(e.Data, &line) != nil {
				line = strings.Trim(string(e.Data), `"`)
			}
		case graph.KindNodeStart:
			if working {
				return nil
			}
		default:
			return nil
		}
		working = true
		var msg *a2a.Message
		if line != "" {
			msg = a2a.NewMessageForTask(a2a.MessageRoleAgent, t, a2a.TextPart{Text: line})
		}
		if !yield(a2a.NewStatusUpdateEvent(t, a2a.TaskStateWorking, msg), nil) {
			return stopped
		}
		return nil
	}, nil, nil)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, stopped) {
			yield(nil, h.rpcError(ctx, fmt.Errorf("follow run %s: %w", r.id, err)))
		}
		return
	}
	done := h.ended(r, end)
	for _, art := range done.Artifacts {
		ev := &a2a.TaskArtifactUpdateEvent{TaskID: t.ID, ContextID: t.ContextID, Artifact: art, LastChunk: true}
		if !yield(ev, nil) {
			return
		}
	}
	final := &a2a.TaskStatusUpdateEvent{TaskID: t.ID, ContextID: t.ContextID, Status: done.Status, Final: true, Metadata: done.Metadata}
	yield(final, nil)
}

// OnResubscribeToTask streams the task's running run from its start, or,
// when none runs, the task as it stands.
func (h *a2aHandler) OnResubscribeToTask(ctx context.Context, p *a2a.TaskIDParams) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		defer h.recovered(ctx)
		t, err := h.current(ctx, string(p.ID))
		if err != nil {
			yield(nil, err)
			return
		}
		var r *run
		if t.Status.State == a2a.TaskStateWorking {
			if r, err = h.s.exec.current(ctx, threadKey(h.owner, string(p.ID))); err != nil {
				yield(nil, h.rpcError(ctx, err))
				return
			}
		}
		if !yield(t, nil) || r == nil {
			return
		}
		h.stream(ctx, r, t, yield)
	}
}

// OnGetTask returns the task as it stands.
func (h *a2aHandler) OnGetTask(ctx context.Context, q *a2a.TaskQueryParams) (*a2a.Task, error) {
	return h.current(ctx, string(q.ID))
}

// OnCancelTask cancels the task's running run and returns the task once
// the run stopped (or, after a while, as it stands).
func (h *a2aHandler) OnCancelTask(ctx context.Context, p *a2a.TaskIDParams) (*a2a.Task, error) {
	t, err := h.current(ctx, string(p.ID))
	if err != nil {
		return nil, err
	}
	if t.Status.State != a2a.TaskStateWorking {
		return nil, fmt.Errorf("%w: task %s is %s, not running", a2a.ErrTaskNotCancelable, p.ID, t.Status.State)
	}
	r, err := h.s.exec.current(ctx, threadKey(h.owner, string(p.ID)))
	if err != nil {
		return nil, h.rpcError(ctx, err)
	}
	if r == nil {
		return h.current(ctx, string(p.ID))
	}
	if err := h.s.exec.cancel(ctx, r); err != nil {
		return nil, h.rpcError(ctx, fmt.Errorf("cancel run %s: %w", r.id, err))
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	end, err := h.s.result(wctx, r)
	if err != nil {
		return h.current(ctx, string(p.ID))
	}
	return h.ended(r, end), nil
}

var errNoPush = fmt.Errorf("%w: stream the task or poll it with tasks/get", a2a.ErrPushNotificationNotSupported)

// OnGetTaskPushConfig: push notifications are not supported.
func (h *a2aHandler) OnGetTaskPushConfig(context.Context, *a2a.GetTaskPushConfigParams) (*a2a.TaskPushConfig, error) {
	return nil, errNoPush
}

// OnListTaskPushConfig: push notifications are not supported.
func (h *a2aHandler) OnListTaskPushConfig(context.Context, *a2a.ListTaskPushConfigParams) ([]*a2a.TaskPushConfig, error) {
	return nil, errNoPush
}

// OnSetTaskPushConfig: push notifications are not supported.
func (h *a2aHandler) OnSetTaskPushConfig(context.Context, *a2a.TaskPushConfig) (*a2a.TaskPushConfig, error) {
	return nil, errNoPush
}

// OnDeleteTaskPushConfig: push notifications are not supported.
func (h *a2aHandler) OnDeleteTaskPushConfig(context.Context, *a2a.DeleteTaskPushConfigParams) error {
	return errNoPush
}

// OnGetExtendedAgentCard: the card is the same for everyone.
func (h *a2aHandler) OnGetExtendedAgentCard(context.Context) (*a2a.AgentCard, error) {
	return nil, a2a.ErrAuthenticatedExtendedCardNotConfigured
}
