package server

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/store"
)

// This file serves the LangGraph API's runs: start, wait, join, stream, list, cancel (see langgraph.go).

type lgRun struct {
	RunID             string          `json:"run_id"`
	ThreadID          string          `json:"thread_id"`
	AssistantID       string          `json:"assistant_id"`
	CreatedAt         time.Time       `json:"created_at"`
	UpdatedAt         time.Time       `json:"updated_at"`
	Status            string          `json:"status"`
	Metadata          json.RawMessage `json:"metadata"`
	MultitaskStrategy string          `json:"multitask_strategy"`
	Kwargs            map[string]any  `json:"kwargs"`
}

func runJSON(rec *RunRecord) lgRun {
	return lgRun{RunID: rec.ID, ThreadID: publicID(rec.Thread), AssistantID: cmp.Or(rec.Assistant, rec.Agent), CreatedAt: rec.Created, UpdatedAt: rec.Updated,
		Status: rec.Status, Metadata: orEmptyObject(rec.Metadata), MultitaskStrategy: rec.Strategy, Kwargs: map[string]any{}}
}

// runRequest is the body of the run endpoints.
type runRequest struct {
	AssistantID string          `json:"assistant_id"`
	Input       json.RawMessage `json:"input"`
	Command     *struct {
		Resume json.RawMessage `json:"resume"`
		Update json.RawMessage `json:"update"`
		Goto   json.RawMessage `json:"goto"`
	} `json:"command"`
	Metadata          json.RawMessage `json:"metadata"`
	StreamMode        json.RawMessage `json:"stream_mode"`
	MultitaskStrategy string          `json:"multitask_strategy"`
	IfNotExists       string          `json:"if_not_exists"`
	OnDisconnect      string          `json:"on_disconnect"`
	OnCompletion      string          `json:"on_completion"`
	CheckpointID      string          `json:"checkpoint_id"`
	Checkpoint        *checkpointRef  `json:"checkpoint"`
	InterruptBefore   json.RawMessage `json:"interrupt_before"`
	InterruptAfter    json.RawMessage `json:"interrupt_after"`
	Webhook           string          `json:"webhook"`
	AfterSeconds      float64         `json:"after_seconds"`
	// Config (only its configurable) and Context set the agent's
	// configuration for this run, over the assistant's (see config.go).
	Config  json.RawMessage `json:"config"`
	Context json.RawMessage `json:"context"`
	// Loom's streams are always resumable (a run's events are kept for a
	// while), and its checkpoints are written during a run: these two may
	// be asked for, and are what Loom does anyway. StreamSubgraphs
	// streams the steps inside subgraphs too.
	StreamResumable  *bool `json:"stream_resumable"`
	StreamSubgraphs  *bool `json:"stream_subgraphs"`
	CheckpointDuring *bool `json:"checkpoint_during"`
	// Durability is when the run writes its checkpoints (graph.Durability):
	// sync (the default), async or exit.
	Durability string `json:"durability"`

	// chat holds the messages of an input in the chat convention
	// ({"messages": [...]}), which prepareRun turns into the agent's
	// input or an answer once it knows the thread.
	chat []chatMessage
}

func present(b json.RawMessage) bool { return len(b) > 0 && string(b) != "null" }

// input checks the request's input and command against agent a and turns
// them into the runtime's input.
func (req *runRequest) input(a *builtAgent) (graph.JSONInput, error) {
	var in graph.JSONInput
	unprocessable := func(format string, args ...any) error {
		return errorf(http.StatusUnprocessableEntity, "invalid_input", format, args...)
	}
	var err error
	if in.InterruptBefore, err = breakpoints(a, "interrupt_before", req.InterruptBefore); err != nil {
		return in, err
	}
	if in.InterruptAfter, err = breakpoints(a, "interrupt_after", req.InterruptAfter); err != nil {
		return in, err
	}
	in.Durability = graph.Durability(req.Durability) // checked by checkOptions
	switch {
	case req.Webhook != "" && checkWebhook(req.Webhook) != nil:
		return in, checkWebhook(req.Webhook)
	case req.AfterSeconds > 0:
		return in, errorf(http.StatusUnprocessableEntity, "unsupported", "after_seconds is not supported")
	}
	if c := req.Command; c != nil {
		if (present(c.Resume) || present(c.Update) || present(c.Goto)) && present(req.Input) {
			return in, unprocessable("give input or a command, not both")
		}
		if present(c.Resume) {
			if present(c.Update) || present(c.Goto) {
				return in, unprocessable("give command.resume, or command.goto and command.update, not both")
			}
			in.Resume = c.Resume
			return in, nil
		}
		if present(c.Update) || present(c.Goto) {
			return in, req.jump(a, &in)
		}
	}
	if !present(req.Input) {
		return in, nil // continue where the thread stopped
	}
	msgs, isChat, err := chatConvention(a, req.Input)
	if err != nil {
		return in, unprocessable("%v", err)
	}
	if isChat {
		req.chat = msgs
		return in, nil
	}
	if err := checkInput(a.Agent, a.schema, req.Input); err != nil {
		return in, unprocessable("%v", err)
	}
	in.Update = req.Input
	return in, nil
}

// breakpoints reads a run's interrupt_before or interrupt_after: "*"
// (every node) or a list of agent a's node names; nil when not given.
func breakpoints(a *builtAgent, field string, raw json.RawMessage) ([]string, error) {
	if !present(raw) {
		return nil, nil
	}
	var all string
	if json.Unmarshal(raw, &all) == nil {
		if all != graph.AllNodes {
			return nil, errorf(http.StatusUnprocessableEntity, "invalid_input", "%s: want \"*\" or a list of node names, not %q", field, all)
		}
		return []string{graph.AllNodes}, nil
	}
	var names []string
	if err := json.Unmarshal(raw, &names); err != nil {
		return nil, errorf(http.StatusUnprocessableEntity, "invalid_input", "%s: want \"*\" or a list of node names", field)
	}
	nodes := a.runner.Spec().Nodes
	for _, n := range names {
		if n != graph.AllNodes && !slices.Contains(nodes, n) {
			return nil, errorf(http.StatusUnprocessableEntity, "invalid_input", "%s: agent %s has no node %q (its nodes: %s)", field, a.Name, n, strings.Join(nodes, ", "))
		}
	}
	return names, nil
}

// jump reads command.goto and command.update: a new run on the thread's
// state with update's fields over it, from the node goto names (from the
// start without one).
func (req *runRequest) jump(a *builtAgent, in *graph.JSONInput) error {
	c := req.Command
	in.Update = json.RawMessage("{}")
	if present(c.Update) {
		if err := checkInput(a.Agent, a.schema, c.Update); err != nil {
			return errorf(http.StatusUnprocessableEntity, "invalid_input", "command.update: %v", err)
		}
		in.Update = c.Update
	}
	if !present(c.Goto) {
		return nil
	}
	var to string
	if err := json.Unmarshal(c.Goto, &to); err != nil {
		return errorf(http.StatusUnprocessableEntity, "invalid_input", "command.goto: want one node name (sends to several nodes are not supported)")
	}
	nodes := a.runner.Spec().Nodes
	if !slices.Contains(nodes, to) {
		return errorf(http.StatusUnprocessableEntity, "invalid_input", "command.goto: agent %s has no node %q (its nodes: %s)", a.Name, to, strings.Join(nodes, ", "))
	}
	in.Goto = to
	return nil
}

// checkOptions refuses values of if_not_exists, on_disconnect and
// on_completion that the server does not know (a typo was taken as the
// default); LangGraph's on_completion "keep" is Loom's "continue".
func (req *runRequest) checkOptions() error {
	if req.OnCompletion == "keep" {
		req.OnCompletion = "continue"
	}
	for _, err := range []error{oneOf("if_not_exists", req.IfNotExists, "create", "reject"),
		oneOf("durability", req.Durability, "sync", "async", "exit"),
		oneOf("on_disconnect", req.OnDisconnect, "cancel", "continue"), oneOf("on_completion", req.OnCompletion, "delete", "continue")} {
		if err != nil {
			return err
		}
	}
	return nil
}

func (req *runRequest) strategy() (string, error) {
	switch req.MultitaskStrategy {
	case "":
		return strategyReject, nil
	case strategyReject, strategyEnqueue, strategyInterrupt, strategyRollback:
		return req.MultitaskStrategy, nil
	}
	return "", errorf(http.StatusUnprocessableEntity, "invalid_strategy", "multitask_strategy %q: want reject, enqueue, interrupt or rollback", req.MultitaskStrategy)
}

// prepareRun checks a run request on thread tid ("" for a new, temporary
// thread) and starts the run. Nothing is written when it fails, except a
// thread that if_not_exists asked to create.
func (s *Server) prepareRun(ctx context.Context, tid, owner string, req *runRequest, modes []string) (*run, error) {
	a, layers, err := s.runAssistant(ctx, owner, req.AssistantID)
	if err != nil {
		return nil, err
	}
	config, err := req.config(a, layers)
	if err != nil {
		return nil, err
	}
	in, err := req.input(a)
	if err != nil {
		return nil, err
	}
	strategy, err := req.strategy()
	if err != nil {
		return nil, err
	}
	from := req.CheckpointID
	if from == "" {
		from = req.Checkpoint.id()
	}
	temp := tid == ""
	var t *Thread
	if temp {
		if from != "" || in.Resume != nil {
			return nil, errorf(http.StatusUnprocessableEntity, "invalid_input", "a run without a thread starts fresh: no checkpoint or resume")
		}
		tid = checkpoint.NewID()
	} else {
		t, err = s.thread(ctx, tid, owner)
		if err != nil && req.IfNotExists != "create" {
			return nil, err
		}
		if err == nil && t.Agent != "" && t.Agent != a.Name {
			return nil, errorf(http.StatusConflict, "wrong_agent", "thread %s holds runs of agent %s, not %s", tid, t.Agent, a.Name)
		}
	}
	if req.chat != nil {
		before, after, durability := in.InterruptBefore, in.InterruptAfter, in.Durability
		if in, err = s.chatRunInput(ctx, a, t, req.chat); err != nil {
			return nil, err
		}
		in.InterruptBefore, in.InterruptAfter, in.Durability = before, after, durability
	}
	if t != nil && from != "" && t.Status != StatusBusy {
		if _, err := s.saver.Get(ctx, t.ID, from); err != nil {
			return nil, err
		}
	}
	// unlock, when set, lets go of the thread's acceptance lock, which a
	// resume takes in this process before its answer is checked.
	var unlock func()
	defer func() {
		if unlock != nil {
			unlock()
		}
	}()
	var answered *checkpoint.Checkpoint
	if t != nil && from == "" && in.Resume != nil {
		var idle bool
		if x, ok := s.exec.(*local); ok {
			unlock, idle = x.lockIdle(t.ID)
		}
		head, err := s.checkAnswer(ctx, t, &in)
		if err != nil {
			return nil, err
		}
		if idle {
			// No run holds the thread and none can start before this one
			// is submitted: submit checks the question on this head
			// rather than reading it again.
			answered = head
		}
	}
	if err := s.admitRun(ctx, owner, t, strategy, in, req.Metadata); err != nil {
		return nil, err
	}
	if t == nil {
		if !temp && in.Resume != nil {
			return nil, fmt.Errorf("resume thread %s: %w", tid, graph.ErrNoInterrupt)
		}
		if t, err = s.newThread(ctx, tid, owner, agentMetadata(assistantThreadMetadata(a, req.AssistantID), a.Name)); err != nil {
			return nil, err
		}
	}
	run := s.newRun(t.ID, a.Name, owner, strategy, req.Metadata, in)
	if req.AssistantID != a.Name {
		run.assistant = req.AssistantID
	}
	run.from, run.modes, run.config, run.webhook = from, modes, config, req.Webhook
	if req.StreamSubgraphs != nil && *req.StreamSubgraphs {
		run.modes = append(slices.Clip(modes), subgraphsMode)
	}
	run.user = userOf(ctx)
	run.temp = temp && req.OnCompletion != "continue"
	run.locked, run.answered = unlock != nil, answered
	if err := s.exec.submit(ctx, run); err != nil {
		if temp {
			s.removeThread(context.WithoutCancel(ctx), t.ID)
		}
		return nil, err
	}
	if unlock != nil {
		unlock()
		unlock = nil
	}
	if run.assistant != "" {
		if err := s.records.putRunAssistant(ctx, run.id, run.assistant); err != nil {
			// The run goes on; only its listing names its agent.
			s.log.Warn("run's assistant not recorded", "run", run.id, "err", err)
		}
	}
	if req.chat != nil && !run.temp {
		// A temporary thread goes with its run: its conversation is not
		// recorded (see createRun).
		s.recordChatInput(ctx, t, req.chat)
	}
	return run, nil
}

func runLocation(r *run) string { return "/threads/" + publicID(r.thread) + "/runs/" + r.id }

func (s *Server) createRun(w http.ResponseWriter, r *http.Request, owner string) error {
	var req runRequest
	if err := decodeKnown(r, "run", &req); err != nil {
		return err
	}
	if req.AssistantID == "" {
		return errorf(http.StatusUnprocessableEntity, "invalid_input", "assistant_id is required (one of: %s)", strings.Join(s.order, ", "))
	}
	modes, err := parseModes(string(req.StreamMode), true)
	if err != nil {
		return err
	}
	if err := req.checkOptions(); err != nil {
		return err
	}
	run, err := s.prepareRun(r.Context(), r.PathValue("tid"), owner, &req, modes)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Location", runLocation(run))
	// A run sent in the chat convention answers with the conversation;
	// one with the agent's own input does not look it up (the hot path).
	var view *chatView
	switch {
	case req.chat == nil:
	case run.temp: // its thread goes with it: the conversation sent
		view = s.inputView(run.agent, run.thread, req.chat)
	default:
		view = s.chatView(r.Context(), s.agents[run.agent], run.thread)
	}
	switch {
	case strings.HasSuffix(r.URL.Path, "/wait"):
		return s.writeRunResultWith(w, r, run, view)
	case strings.HasSuffix(r.URL.Path, "/stream"):
		err := s.streamRun(w, r, run, modes, 0, view)
		if req.OnDisconnect == "cancel" && r.Context().Err() != nil {
			return s.exec.cancel(context.WithoutCancel(r.Context()), run)
		}
		return err
	}
	writeJSON(w, http.StatusOK, runJSON(run.record()))
	return nil
}

// pending returns the questions a run's end or a question event carries.
func (e *event) pending() []checkpoint.Interrupt {
	if len(e.Interrupts) > 0 {
		return e.Interrupts
	}
	if e.Interrupt != nil {
		return []checkpoint.Interrupt{*e.Interrupt}
	}
	return nil
}

// resultValues is what a LangGraph wait or join returns for a run's end:
// the final state, with "__interrupt__" when the run waits for a person,
// or {"__error__": …} when it failed.
func resultValues(end event) any {
	if end.Kind == graph.KindError {
		return map[string]any{"__error__": map[string]string{"error": end.ErrCode, "message": end.Err}}
	}
	values := map[string]json.RawMessage{}
	if err := json.Unmarshal(end.Data, &values); err != nil {
		return end.Data // not an object: as it is
	}
	if pending := end.pending(); len(pending) > 0 {
		b, _ := json.Marshal(lgInterrupts(pending))
		values["__interrupt__"] = b
	}
	return values
}

// writeRunResult waits for run and writes its result. A client that goes
// away before does not stop the run.
func (s *Server) writeRunResult(w http.ResponseWriter, r *http.Request, run *run) error {
	return s.writeRunResultWith(w, r, run, s.chatView(r.Context(), s.agents[run.agent], run.thread))
}

// writeRunResultWith is writeRunResult whose values show view's
// conversation (none when nil).
func (s *Server) writeRunResultWith(w http.ResponseWriter, r *http.Request, run *run, view *chatView) error {
	end, err := s.result(r.Context(), run)
	if err != nil {
		if r.Context().Err() == nil {
			return fmt.Errorf("wait for run %s: %w", run.id, err)
		}
		return nil // the client went away; the run goes on
	}
	if end.Kind != graph.KindError {
		end.Data = view.values(end.Data, end.Data, end.Interrupt, true)
	}
	writeJSON(w, http.StatusOK, resultValues(end))
	return nil
}

// findRun returns run rid of thread tid, active (a *run) or finished (a
// record), if owner may see the thread.
func (s *Server) findRun(ctx context.Context, tid, rid, owner string) (*run, *RunRecord, error) {
	t, err := s.thread(ctx, tid, owner)
	if err != nil {
		return nil, nil, err
	}
	return s.exec.find(ctx, t.ID, rid)
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request, owner string) error {
	t, err := s.thread(r.Context(), r.PathValue("tid"), owner)
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", defaultPage, 1, maxPage)
	if err != nil {
		return err
	}
	offset, err := queryInt(r, "offset", 0, 0, maxOffset)
	if err != nil {
		return err
	}
	status := r.URL.Query().Get("status")
	if err := oneOf("query parameter status", status, runStatuses...); err != nil {
		return err
	}
	var out []lgRun
	for _, run := range s.exec.held(t.ID) {
		out = append(out, runJSON(run.record()))
	}
	recs, err := s.records.listRuns(r.Context(), t.ID, limit+offset, 0)
	if err != nil {
		return err
	}
	if err := s.records.fillRunAssistants(r.Context(), recs...); err != nil {
		return err
	}
	for _, rec := range recs {
		if !slices.ContainsFunc(out, func(x lgRun) bool { return x.RunID == rec.ID }) {
			out = append(out, runJSON(rec))
		}
	}
	if status != "" {
		out = slices.DeleteFunc(out, func(x lgRun) bool { return x.Status != status })
	}
	out = out[min(offset, len(out)):]
	out = out[:min(limit, len(out))]
	writeJSON(w, http.StatusOK, orEmpty(out))
	return nil
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request, owner string) error {
	_, rec, err := s.findRun(r.Context(), r.PathValue("tid"), r.PathValue("rid"), owner)
	if err != nil {
		return err
	}
	if err := s.records.fillRunAssistants(r.Context(), rec); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, runJSON(rec))
	return nil
}

func (s *Server) deleteRun(w http.ResponseWriter, r *http.Request, owner string) error {
	run, rec, err := s.findRun(r.Context(), r.PathValue("tid"), r.PathValue("rid"), owner)
	if err != nil {
		return err
	}
	if run != nil {
		return errorf(http.StatusConflict, "busy", "run %s is %s; cancel it first", run.id, rec.Status)
	}
	if err := s.records.deleteRun(r.Context(), rec.Thread, rec.ID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) cancelRunAPI(w http.ResponseWriter, r *http.Request, owner string) error {
	run, rec, err := s.findRun(r.Context(), r.PathValue("tid"), r.PathValue("rid"), owner)
	if err != nil {
		return err
	}
	action := r.URL.Query().Get("action")
	if action != "" && action != "interrupt" && action != "rollback" {
		return errorf(http.StatusUnprocessableEntity, "invalid_action", "action %q: want interrupt or rollback", action)
	}
	wait, err := queryBool(r, "wait")
	if err != nil {
		return err
	}
	if run == nil {
		return errorf(http.StatusConflict, "not_running", "run %s is %s already", rec.ID, rec.Status)
	}
	if err := s.exec.cancel(r.Context(), run); err != nil {
		return err
	}
	if action == "rollback" || wait {
		if _, err := s.result(r.Context(), run); err != nil {
			if r.Context().Err() == nil {
				return fmt.Errorf("wait for run %s: %w", run.id, err)
			}
			return nil
		}
	}
	if action == "rollback" {
		if err := s.undoRun(context.WithoutCancel(r.Context()), run.thread, run.id); err != nil {
			return err
		}
	}
	w.WriteHeader(http.StatusAccepted)
	return nil
}

func (s *Server) joinRun(w http.ResponseWriter, r *http.Request, owner string) error {
	run, rec, err := s.findRun(r.Context(), r.PathValue("tid"), r.PathValue("rid"), owner)
	if err != nil {
		return err
	}
	if run != nil {
		return s.writeRunResult(w, r, run)
	}
	// Finished earlier: its result is the thread's state now.
	if rec.Status == runError {
		writeJSON(w, http.StatusOK, resultValues(event{Kind: graph.KindError, ErrCode: "run_failed", Err: rec.Error}))
		return nil
	}
	cp, err := s.head(r.Context(), rec.Thread)
	if err != nil {
		return err
	}
	end := event{Kind: graph.KindRunEnd, Data: json.RawMessage("{}")}
	if cp != nil {
		end.Data, end.Interrupt, end.Interrupts = cp.State, cp.Interrupt, cp.Interrupts
	}
	writeJSON(w, http.StatusOK, resultValues(s.withConversation(r.Context(), rec.Agent, rec.Thread, end)))
	return nil
}

// lastEventID is where a reconnecting stream resumes.
func lastEventID(r *http.Request) int {
	n, _ := strconv.Atoi(r.Header.Get("Last-Event-ID"))
	return n
}

func (s *Server) joinRunStream(w http.ResponseWriter, r *http.Request, owner string) error {
	run, rec, err := s.findRun(r.Context(), r.PathValue("tid"), r.PathValue("rid"), owner)
	if err != nil {
		return err
	}
	if run == nil {
		// Over, but its events may be kept for a while: a client that
		// reconnects after the end still gets what it missed.
		if run, err = s.exec.kept(r.Context(), rec); err != nil {
			return err
		}
	}
	return s.joinStream(w, r, run)
}

func (s *Server) joinThreadStream(w http.ResponseWriter, r *http.Request, owner string) error {
	t, err := s.thread(r.Context(), r.PathValue("tid"), owner)
	if err != nil {
		return err
	}
	run, err := s.exec.current(r.Context(), t.ID)
	if err != nil {
		return err
	}
	return s.joinStream(w, r, run)
}

// joinStream streams a run that is already going (from the event after
// Last-Event-ID, or from the oldest event kept); for a run that is over,
// the stream ends at once.
func (s *Server) joinStream(w http.ResponseWriter, r *http.Request, run *run) error {
	modes, err := parseModes(strings.Join(r.URL.Query()["stream_mode"], ","), false)
	if err != nil {
		return err
	}
	cancelOnDisconnect, err := queryBool(r, "cancel_on_disconnect")
	if err != nil {
		return err
	}
	if run == nil {
		startStream(w, r, nil, `{"event":"heartbeat"}`)
		return nil
	}
	if len(modes) == 0 {
		modes = run.modes
	}
	err = s.streamRun(w, r, run, modes, lastEventID(r), s.chatView(r.Context(), s.agents[run.agent], run.thread))
	if cancelOnDisconnect && r.Context().Err() != nil {
		return s.exec.cancel(context.WithoutCancel(r.Context()), run)
	}
	return err
}

// streamModes LangGraph clients may ask for.
var streamModes = []string{"values", "updates", "messages", "messages-tuple", "custom", "events", "debug", "tasks", "checkpoints"}

// parseModes reads stream_mode: a JSON string or array, or (in a query)
// names separated by commas. With dflt, none gives ["values"].
func parseModes(raw string, dflt bool) ([]string, error) {
	raw = strings.TrimSpace(raw)
	var modes []string
	switch {
	case raw == "" || raw == "null":
	case strings.HasPrefix(raw, "["):
		if err := json.Unmarshal([]byte(raw), &modes); err != nil {
			return nil, errorf(http.StatusUnprocessableEntity, "invalid_stream_mode", "stream_mode: %v", err)
		}
	case strings.HasPrefix(raw, `"`):
		var m string
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			return nil, errorf(http.StatusUnprocessableEntity, "invalid_stream_mode", "stream_mode: %v", err)
		}
		modes = []string{m}
	default:
		for _, m := range strings.Split(raw, ",") {
			if m = strings.Trim(strings.TrimSpace(m), `[]"`); m != "" {
				modes = append(modes, m)
			}
		}
	}
	for _, m := range modes {
		if !slices.Contains(streamModes, m) {
			return nil, errorf(http.StatusUnprocessableEntity, "invalid_stream_mode", "stream_mode %q: want one of %s", m, strings.Join(streamModes, ", "))
		}
	}
	if len(modes) == 0 && dflt {
		modes = []string{"values"}
	}
	return modes, nil
}

// streamRun streams run's events after seq after, in LangGraph's SSE
// events for the stream modes asked; the values show view's
// conversation (none when nil).
func (s *Server) streamRun(w http.ResponseWriter, r *http.Request, run *run, modes []string, after int, view *chatView) error {
	sw := startStream(w, r, map[string]string{"Content-Location": runLocation(run), "Location": runLocation(run) + "/stream"}, `{"event":"heartbeat"}`)
	if err := sw.event("metadata", 0, map[string]string{"run_id": run.id, "thread_id": publicID(run.thread)}); err != nil {
		return nil
	}
	lr := newLGRender(run, modes, sw)
	lr.chat = view
	if err := s.pump(r.Context(), sw, run.feed, after, lr.render); err != nil && r.Context().Err() == nil && store.IsUnavailable(err) {
		ae := toAPI(err)
		sw.event("error", 0, map[string]string{"error": ae.code, "message": ae.message})
		sw.flush()
	}
	return nil // the client went away, or the server stops: the run is not affected
}
