package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/internal/nulchar"
	"github.com/loomkit/loom/store"
)

// This file serves the LangGraph Platform API, as the official client
// @langchain/langgraph-sdk calls it: assistants are Loom's agents (the
// assistant id is the agent's name), threads and runs are Loom's.

func (s *Server) langGraphRoutes(m *http.ServeMux) {
	routes := map[string]handler{
		"POST /assistants/search":               s.searchAssistants,
		"POST /assistants/count":                s.countAssistants,
		"GET /assistants/{id}":                  s.getAssistant,
		"GET /assistants/{id}/graph":            s.assistantGraph,
		"GET /assistants/{id}/schemas":          s.assistantSchemas,
		"GET /assistants/{id}/subgraphs":        s.assistantSubgraphs,
		"POST /threads":                         s.createThread,
		"POST /threads/search":                  s.searchThreads,
		"POST /threads/count":                   s.countThreads,
		"GET /threads/{tid}":                    s.getThread,
		"PATCH /threads/{tid}":                  s.patchThread,
		"DELETE /threads/{tid}":                 s.deleteThread,
		"POST /threads/{tid}/copy":              s.copyThread,
		"GET /threads/{tid}/state":              s.getState,
		"GET /threads/{tid}/state/{cid}":        s.getState,
		"POST /threads/{tid}/state/checkpoint":  s.getStateAt,
		"POST /threads/{tid}/state":             s.updateState,
		"GET /threads/{tid}/history":            s.history,
		"POST /threads/{tid}/history":           s.history,
		"GET /threads/{tid}/stream":             s.joinThreadStream,
		"POST /threads/{tid}/runs":              s.createRun,
		"POST /threads/{tid}/runs/wait":         s.createRun,
		"POST /threads/{tid}/runs/stream":       s.createRun,
		"POST /runs":                            s.createRun,
		"POST /runs/wait":                       s.createRun,
		"POST /runs/stream":                     s.createRun,
		"GET /threads/{tid}/runs":               s.listRuns,
		"GET /threads/{tid}/runs/{rid}":         s.getRun,
		"DELETE /threads/{tid}/runs/{rid}":      s.deleteRun,
		"POST /threads/{tid}/runs/{rid}/cancel": s.cancelRunAPI,
		"GET /threads/{tid}/runs/{rid}/join":    s.joinRun,
		"GET /threads/{tid}/runs/{rid}/stream":  s.joinRunStream,
	}
	for p, h := range routes {
		m.Handle(p, s.api(h))
	}
}

// ---- assistants ----

type lgAssistant struct {
	AssistantID string         `json:"assistant_id"`
	GraphID     string         `json:"graph_id"`
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Config      map[string]any `json:"config"`
	Context     map[string]any `json:"context"`
	Metadata    map[string]any `json:"metadata"`
	Version     int            `json:"version"`
	CreatedAt   time.Time      `json:"created_at"`
	UpdatedAt   time.Time      `json:"updated_at"`
}

// started is when assistants were "created": they are built in.
var started = time.Now().UTC()

func assistantJSON(a *builtAgent) lgAssistant {
	return lgAssistant{AssistantID: a.Name, GraphID: a.Name, Name: a.Name, Description: a.Description,
		Config: map[string]any{}, Context: map[string]any{}, Metadata: map[string]any{"created_by": "system"},
		Version: 1, CreatedAt: started, UpdatedAt: started}
}

type assistantQuery struct {
	GraphID  string                     `json:"graph_id"`
	Name     string                     `json:"name"`
	Metadata map[string]json.RawMessage `json:"metadata"`
	page
}

func (s *Server) findAssistants(r *http.Request) ([]lgAssistant, assistantQuery, error) {
	var q assistantQuery
	if err := decode(r, &q); err != nil {
		return nil, q, err
	}
	out := []lgAssistant{}
	for _, name := range s.order {
		a := assistantJSON(s.agents[name])
		if (q.GraphID != "" && q.GraphID != a.GraphID) || (q.Name != "" && !strings.Contains(a.Name, q.Name)) {
			continue
		}
		if len(q.Metadata) > 0 && !matchesMetadata(a.Metadata, q.Metadata) {
			continue
		}
		out = append(out, a)
	}
	return out, q, nil
}

func matchesMetadata(have map[string]any, want map[string]json.RawMessage) bool {
	for k, v := range want {
		b, _ := json.Marshal(have[k])
		if !jsonEqual(b, v) {
			return false
		}
	}
	return true
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

func (s *Server) searchAssistants(w http.ResponseWriter, r *http.Request, _ string) error {
	as, q, err := s.findAssistants(r)
	if err != nil {
		return err
	}
	if err := q.check(); err != nil {
		return err
	}
	as = as[min(q.Offset, len(as)):]
	writeJSON(w, http.StatusOK, as[:min(q.Limit, len(as))])
	return nil
}

func (s *Server) countAssistants(w http.ResponseWriter, r *http.Request, _ string) error {
	as, _, err := s.findAssistants(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, len(as))
	return nil
}

func (s *Server) getAssistant(w http.ResponseWriter, r *http.Request, _ string) error {
	a, err := s.agent(r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, assistantJSON(a))
	return nil
}

type lgGraph struct {
	Nodes   []lgNode   `json:"nodes"`
	Edges   []lgEdge   `json:"edges"`
	Mermaid string     `json:"mermaid"`
	Spec    graph.Spec `json:"spec"`
}

type lgNode struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Type string `json:"type"`
	Data string `json:"data"`
}

type lgEdge struct {
	Source      string `json:"source"`
	Target      string `json:"target"`
	Conditional bool   `json:"conditional"`
	Data        string `json:"data,omitempty"`
}

// graphJSON is a graph's structure in the LangGraph API's shape, with its
// Loom spec and Mermaid drawing alongside.
func graphJSON(r graph.Runner) lgGraph {
	sp := r.Spec()
	g := lgGraph{Nodes: []lgNode{}, Edges: []lgEdge{}, Mermaid: r.Mermaid(), Spec: sp}
	for _, n := range append(append([]string{graph.Start}, sp.Nodes...), graph.End) {
		g.Nodes = append(g.Nodes, lgNode{ID: n, Name: n, Type: "runnable", Data: n})
	}
	for _, e := range sp.Edges {
		le := lgEdge{Source: e.From, Target: e.To, Conditional: e.Conditional}
		switch {
		case e.Exit:
			le.Data = fmt.Sprintf("after %d×", e.Max)
		case e.Max > 0:
			le.Data = fmt.Sprintf("at most %d×", e.Max)
		}
		g.Edges = append(g.Edges, le)
	}
	return g
}

func (s *Server) assistantGraph(w http.ResponseWriter, r *http.Request, _ string) error {
	a, err := s.agent(r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, graphJSON(a.runner))
	return nil
}

func (s *Server) assistantSchemas(w http.ResponseWriter, r *http.Request, _ string) error {
	a, err := s.agent(r.PathValue("id"))
	if err != nil {
		return err
	}
	in := a.InputSchema
	if in == nil {
		in = json.RawMessage(`{"type":"object"}`)
	}
	writeJSON(w, http.StatusOK, map[string]any{"graph_id": a.Name, "input_schema": in, "output_schema": nil,
		"state_schema": nil, "config_schema": nil, "context_schema": nil})
	return nil
}

func (s *Server) assistantSubgraphs(w http.ResponseWriter, r *http.Request, _ string) error {
	if _, err := s.agent(r.PathValue("id")); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{})
	return nil
}

// ---- threads ----

type lgInterrupt struct {
	Value json.RawMessage `json:"value"`
	ID    string          `json:"id"`
}

type lgThread struct {
	ThreadID       string                   `json:"thread_id"`
	CreatedAt      time.Time                `json:"created_at"`
	UpdatedAt      time.Time                `json:"updated_at"`
	StateUpdatedAt time.Time                `json:"state_updated_at"`
	Metadata       json.RawMessage          `json:"metadata"`
	Status         string                   `json:"status"`
	Values         json.RawMessage          `json:"values"`
	Interrupts     map[string][]lgInterrupt `json:"interrupts"`
	Error          *string                  `json:"error,omitempty"`
}

type lgCheckpoint struct {
	ThreadID      string          `json:"thread_id"`
	CheckpointNS  string          `json:"checkpoint_ns"`
	CheckpointID  string          `json:"checkpoint_id"`
	CheckpointMap json.RawMessage `json:"checkpoint_map"`
}

type lgTask struct {
	ID         string        `json:"id"`
	Name       string        `json:"name"`
	Error      *string       `json:"error"`
	Interrupts []lgInterrupt `json:"interrupts"`
	Checkpoint *lgCheckpoint `json:"checkpoint"`
	State      any           `json:"state"`
}

type lgState struct {
	Values           json.RawMessage `json:"values"`
	Next             []string        `json:"next"`
	Checkpoint       *lgCheckpoint   `json:"checkpoint"`
	Metadata         map[string]any  `json:"metadata"`
	CreatedAt        *time.Time      `json:"created_at"`
	ParentCheckpoint *lgCheckpoint   `json:"parent_checkpoint"`
	Tasks            []lgTask        `json:"tasks"`
	// Reply is what the agent says at this state (Agent.Reply), for the
	// page: a Loom extension, left out for agents without a Reply.
	Reply string `json:"loom_reply,omitempty"`
}

func cpRef(thread, id string) *lgCheckpoint {
	if id == "" {
		return nil
	}
	return &lgCheckpoint{ThreadID: thread, CheckpointID: id, CheckpointMap: json.RawMessage("null")}
}

// langGraphSource maps a checkpoint's source to LangGraph's names.
func langGraphSource(src checkpoint.Source) string {
	switch src {
	case checkpoint.SourceStep, checkpoint.SourceResume:
		return "loop"
	}
	return string(src)
}

// stateJSON is a checkpoint as a LangGraph thread state; cp may be nil for
// a thread with no checkpoint yet.
func stateJSON(thread string, cp *checkpoint.Checkpoint) lgState {
	if cp == nil {
		return lgState{Values: json.RawMessage("{}"), Next: []string{}, Metadata: map[string]any{}, Tasks: []lgTask{}}
	}
	st := lgState{Values: cp.State, Next: cp.Next, Checkpoint: cpRef(thread, cp.ID), ParentCheckpoint: cpRef(thread, cp.ParentID),
		Tasks: []lgTask{}, CreatedAt: &cp.Meta.Created,
		Metadata: map[string]any{"source": langGraphSource(cp.Meta.Source), "loom_source": cp.Meta.Source, "step": cp.Step,
			"seq": cp.Seq, "run_id": cp.Meta.Run, "node": cp.Meta.Node, "duration_ms": float64(cp.Meta.Duration.Microseconds()) / 1000}}
	if len(st.Values) == 0 {
		st.Values = json.RawMessage("{}")
	}
	if cp.Meta.From != "" {
		st.Metadata["from"] = cp.Meta.From
	}
	if st.Next == nil {
		st.Next = []string{}
	}
	for _, n := range cp.Next {
		t := lgTask{ID: cp.ID + ":" + n, Name: n, Interrupts: []lgInterrupt{}}
		if i := cp.Interrupt; i != nil && i.Node == n {
			t.Interrupts = append(t.Interrupts, lgInterrupt{Value: i.Payload, ID: i.ID})
		}
		st.Tasks = append(st.Tasks, t)
	}
	return st
}

// head returns the thread's latest checkpoint, or nil when it has none.
func (s *Server) head(ctx context.Context, thread string) (*checkpoint.Checkpoint, error) {
	cp, err := s.saver.Get(ctx, thread, "")
	if errors.Is(err, checkpoint.ErrNotFound) {
		return nil, nil
	}
	return cp, err
}

// threadJSON is a thread as LangGraph shows it, with its latest values.
func (s *Server) threadJSON(ctx context.Context, t *Thread, withValues bool) (lgThread, error) {
	out := lgThread{ThreadID: t.ID, CreatedAt: t.Created, UpdatedAt: t.Updated, StateUpdatedAt: t.Updated,
		Metadata: orEmptyObject(t.Metadata), Status: t.Status, Values: json.RawMessage("{}"), Interrupts: map[string][]lgInterrupt{}}
	if t.Error != "" && t.Status == StatusError {
		out.Error = &t.Error
	}
	if !withValues {
		return out, nil
	}
	cp, err := s.head(ctx, t.ID)
	if err != nil {
		return out, err
	}
	if cp != nil {
		st := stateJSON(t.ID, cp)
		out.Values = st.Values
		for _, task := range st.Tasks {
			if len(task.Interrupts) > 0 {
				out.Interrupts[task.ID] = task.Interrupts
			}
		}
	}
	return out, nil
}

var threadIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$`)

func checkThreadID(id string) error {
	if !threadIDPattern.MatchString(id) {
		return errorf(http.StatusUnprocessableEntity, "invalid_thread_id", "thread id %q: want 1 to 128 letters, digits, '.', '_', ':', '@' or '-'", id)
	}
	return nil
}

// newThread creates a thread owned by owner; id "" gets a fresh id.
func (s *Server) newThread(ctx context.Context, id, owner string, meta json.RawMessage) (*Thread, error) {
	if id == "" {
		id = checkpoint.NewID()
	} else if err := checkThreadID(id); err != nil {
		return nil, err
	}
	if err := s.admitThread(ctx, owner, meta); err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	t := &Thread{ID: id, Owner: owner, Status: StatusIdle, Metadata: orEmptyObject(meta), Created: now, Updated: now}
	if err := s.records.createThread(ctx, t); err != nil {
		return nil, err
	}
	return t, nil
}

func (s *Server) createThread(w http.ResponseWriter, r *http.Request, owner string) error {
	var req struct {
		ThreadID   string                     `json:"thread_id"`
		Metadata   map[string]json.RawMessage `json:"metadata"`
		IfExists   string                     `json:"if_exists"`
		Supersteps json.RawMessage            `json:"supersteps"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if len(req.Supersteps) > 0 && string(req.Supersteps) != "null" {
		return errorf(http.StatusUnprocessableEntity, "unsupported", "supersteps are not supported; create the thread, then start runs")
	}
	if err := checkMetadata(req.Metadata); err != nil {
		return err
	}
	meta, _ := json.Marshal(orEmptyMap(req.Metadata))
	t, err := s.newThread(r.Context(), req.ThreadID, owner, meta)
	if errors.Is(err, ErrExists) {
		old, gerr := s.thread(r.Context(), req.ThreadID, owner)
		if req.IfExists != "do_nothing" || gerr != nil {
			return errorf(http.StatusConflict, "exists", "thread %s exists already", req.ThreadID)
		}
		t, err = old, nil
	}
	if err != nil {
		return err
	}
	out, err := s.threadJSON(r.Context(), t, req.IfExists == "do_nothing")
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func orEmptyMap(m map[string]json.RawMessage) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		if len(v) > 0 && string(v) != "null" {
			out[k] = v
		}
	}
	return out
}

func (s *Server) getThread(w http.ResponseWriter, r *http.Request, owner string) error {
	t, err := s.thread(r.Context(), r.PathValue("tid"), owner)
	if err != nil {
		return err
	}
	out, err := s.threadJSON(r.Context(), t, true)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) patchThread(w http.ResponseWriter, r *http.Request, owner string) error {
	t, err := s.thread(r.Context(), r.PathValue("tid"), owner)
	if err != nil {
		return err
	}
	var req struct {
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if err := checkMetadata(req.Metadata); err != nil {
		return err
	}
	meta := map[string]json.RawMessage{}
	_ = json.Unmarshal(t.Metadata, &meta)
	for k, v := range req.Metadata {
		meta[k] = v
	}
	b, _ := json.Marshal(meta)
	if err := s.quotas.metadataSize("thread", b); err != nil {
		return err
	}
	if err := s.records.setThreadMetadata(r.Context(), t.ID, b); err != nil {
		return err
	}
	t.Metadata, t.Updated = b, time.Now().UTC()
	out, err := s.threadJSON(r.Context(), t, true)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) deleteThread(w http.ResponseWriter, r *http.Request, owner string) error {
	t, err := s.thread(r.Context(), r.PathValue("tid"), owner)
	if err != nil {
		return err
	}
	if t.Status == StatusBusy {
		return fmt.Errorf("delete thread %s: %w; cancel its run first", t.ID, ErrBusy)
	}
	if err := s.removeThread(r.Context(), t.ID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// removeThread deletes a thread's record, runs and checkpoints.
func (s *Server) removeThread(ctx context.Context, id string) error {
	if err := s.saver.DeleteThread(ctx, id); err != nil {
		return fmt.Errorf("delete thread %s: %w", id, err)
	}
	return s.records.deleteThread(ctx, id)
}

// copyThread copies a thread: its head, or with {"checkpoint_id"} any
// checkpoint of it, with {"values"} merged into the copied state (a fork
// to a new thread).
func (s *Server) copyThread(w http.ResponseWriter, r *http.Request, owner string) error {
	var req struct {
		CheckpointID string                     `json:"checkpoint_id"`
		Values       map[string]json.RawMessage `json:"values"`
	}
	if r.ContentLength != 0 {
		if err := decode(r, &req); err != nil {
			return err
		}
	}
	t, err := s.thread(r.Context(), r.PathValue("tid"), owner)
	if err != nil {
		return err
	}
	from := req.CheckpointID
	if from == "" {
		cp, err := s.head(r.Context(), t.ID)
		if err != nil {
			return err
		}
		if cp != nil {
			from = cp.ID
		}
	} else if _, err := s.saver.Get(r.Context(), t.ID, from); err != nil {
		return err
	}
	if from == "" && len(req.Values) > 0 {
		return errorf(http.StatusUnprocessableEntity, "invalid_values", "thread %s has no checkpoint to copy values onto", t.ID)
	}
	var edit func(json.RawMessage) (json.RawMessage, error)
	if len(req.Values) > 0 {
		edit = func(state json.RawMessage) (json.RawMessage, error) {
			m := map[string]json.RawMessage{}
			if len(state) > 0 {
				if err := json.Unmarshal(state, &m); err != nil {
					return nil, errorf(http.StatusUnprocessableEntity, "invalid_values", "the thread's state is not a JSON object; it cannot take field updates")
				}
			}
			for k, v := range req.Values {
				m[k] = v
			}
			return json.Marshal(m)
		}
	}
	c, err := s.newThread(r.Context(), "", owner, t.Metadata)
	if err != nil {
		return err
	}
	if from != "" {
		if _, err := checkpoint.Fork(r.Context(), s.saver, t.ID, from, c.ID, edit); err != nil {
			return err
		}
	}
	out, err := s.threadJSON(r.Context(), c, true)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type threadSearch struct {
	IDs       []string                   `json:"ids"`
	Metadata  map[string]json.RawMessage `json:"metadata"`
	Status    string                     `json:"status"`
	SortBy    string                     `json:"sort_by"`
	SortOrder string                     `json:"sort_order"`
	Values    json.RawMessage            `json:"values"`
	page
}

func (s *Server) threadQuery(r *http.Request) (threadQuery, error) {
	var q threadSearch
	if err := decode(r, &q); err != nil {
		return threadQuery{}, err
	}
	if len(q.Values) > 0 && string(q.Values) != "null" && string(q.Values) != "{}" {
		return threadQuery{}, errorf(http.StatusUnprocessableEntity, "unsupported", "searching threads by values is not supported")
	}
	for _, err := range []error{q.check(), oneOf("status", q.Status, threadStatuses...), oneOf("sort_by", q.SortBy, threadSorts...),
		oneOf("sort_order", q.SortOrder, "asc", "desc"), checkMetadata(q.Metadata)} {
		if err != nil {
			return threadQuery{}, err
		}
	}
	// An id that is not a thread id names no thread.
	ids := slices.DeleteFunc(slices.Clone(q.IDs), func(id string) bool { return checkThreadID(id) != nil })
	if len(q.IDs) > 0 && len(ids) == 0 {
		ids = []string{""} // matches nothing
	}
	q.IDs = ids
	tq := threadQuery{IDs: q.IDs, Status: q.Status, Metadata: orEmptyMap(q.Metadata), Limit: q.Limit, Offset: q.Offset,
		SortBy: q.SortBy, Desc: q.SortOrder != "asc"}
	if q.Status == StatusBusy && s.jobs == nil {
		// Busy lives in the run lanes, not in the table.
		tq.Status = ""
		s.mu.Lock()
		tq.IDs = tq.IDs[:0:0]
		for id := range s.lanes {
			if len(q.IDs) == 0 || slices.Contains(q.IDs, id) {
				tq.IDs = append(tq.IDs, id)
			}
		}
		s.mu.Unlock()
		if len(tq.IDs) == 0 {
			tq.IDs = []string{""} // matches nothing
		}
	}
	return tq, nil
}

func (s *Server) searchThreads(w http.ResponseWriter, r *http.Request, owner string) error {
	q, err := s.threadQuery(r)
	if err != nil {
		return err
	}
	ts, err := s.records.searchThreads(r.Context(), owner, q)
	if err != nil {
		return err
	}
	out := make([]lgThread, 0, len(ts))
	for _, t := range ts {
		if s.jobs == nil && s.busy(t.ID) {
			t.Status = StatusBusy
		}
		lt, err := s.threadJSON(r.Context(), t, true)
		if err != nil {
			return err
		}
		out = append(out, lt)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) countThreads(w http.ResponseWriter, r *http.Request, owner string) error {
	q, err := s.threadQuery(r)
	if err != nil {
		return err
	}
	n, err := s.records.countThreads(r.Context(), owner, q)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, n)
	return nil
}

// ---- state and history ----

func (s *Server) writeState(w http.ResponseWriter, r *http.Request, owner, id string) error {
	t, err := s.thread(r.Context(), r.PathValue("tid"), owner)
	if err != nil {
		return err
	}
	var cp *checkpoint.Checkpoint
	if id == "" {
		cp, err = s.head(r.Context(), t.ID)
	} else {
		cp, err = s.saver.Get(r.Context(), t.ID, id)
	}
	if err != nil {
		return err
	}
	st := stateJSON(t.ID, cp)
	if a := s.agents[t.Agent]; a != nil && a.Reply != nil {
		st.Reply = a.Reply(cp.State, cp.Interrupt)
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

func (s *Server) getState(w http.ResponseWriter, r *http.Request, owner string) error {
	return s.writeState(w, r, owner, r.PathValue("cid"))
}

// checkpointRef is how requests name a checkpoint: {"checkpoint_id": …},
// possibly inside "configurable".
type checkpointRef struct {
	CheckpointID string `json:"checkpoint_id"`
	Configurable *struct {
		CheckpointID string `json:"checkpoint_id"`
	} `json:"configurable"`
}

func (c *checkpointRef) id() string {
	if c == nil {
		return ""
	}
	if c.CheckpointID == "" && c.Configurable != nil {
		return c.Configurable.CheckpointID
	}
	return c.CheckpointID
}

func (s *Server) getStateAt(w http.ResponseWriter, r *http.Request, owner string) error {
	var req struct {
		Checkpoint *checkpointRef `json:"checkpoint"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	return s.writeState(w, r, owner, req.Checkpoint.id())
}

// updateState writes a checkpoint whose state is the thread's latest (or
// the named checkpoint's) with the given values' fields set over it: the
// LangGraph update_state, recorded with source update. Pending work and
// questions stay as they were.
func (s *Server) updateState(w http.ResponseWriter, r *http.Request, owner string) error {
	var req struct {
		Values       json.RawMessage `json:"values"`
		CheckpointID string          `json:"checkpoint_id"`
		Checkpoint   *checkpointRef  `json:"checkpoint"`
		AsNode       string          `json:"as_node"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	t, err := s.thread(r.Context(), r.PathValue("tid"), owner)
	if err != nil {
		return err
	}
	if t.Status == StatusBusy {
		return fmt.Errorf("update state of thread %s: %w", t.ID, ErrBusy)
	}
	var patch map[string]json.RawMessage
	if err := json.Unmarshal(req.Values, &patch); err != nil || patch == nil {
		return errorf(http.StatusUnprocessableEntity, "invalid_values", "values must be a JSON object of state fields")
	}
	ctx := r.Context()
	head, err := s.head(ctx, t.ID)
	if err != nil {
		return err
	}
	base := head
	if id := req.CheckpointID; id != "" || req.Checkpoint.id() != "" {
		if id == "" {
			id = req.Checkpoint.id()
		}
		if base, err = s.saver.Get(ctx, t.ID, id); err != nil {
			return err
		}
		if len(patch) == 0 && head != nil && base.ID != head.ID {
			// No values: make that checkpoint the head again, an undo.
			cp, err := checkpoint.Undo(ctx, s.saver, t.ID, base.ID)
			if err != nil {
				return err
			}
			writeJSON(w, http.StatusOK, map[string]any{"checkpoint": cpRef(t.ID, cp.ID), "configurable": cpRef(t.ID, cp.ID)})
			return nil
		}
	}
	state := map[string]json.RawMessage{}
	if base != nil && len(base.State) > 0 {
		if err := json.Unmarshal(base.State, &state); err != nil {
			return errorf(http.StatusUnprocessableEntity, "invalid_values", "the thread's state is not a JSON object; it cannot take field updates")
		}
	}
	for k, v := range patch {
		state[k] = v
	}
	merged, err := json.Marshal(state)
	if err != nil {
		return fmt.Errorf("update state of thread %s: %w", t.ID, err)
	}
	// The state after the update must still fit the agent's input schema;
	// the update alone need not carry its required fields.
	if a, ok := s.agents[t.Agent]; ok && a.schema != nil && len(patch) > 0 {
		if err := a.schema.Validate(merged); err != nil {
			return errorf(http.StatusUnprocessableEntity, "invalid_values", "values do not fit agent %s: %v", a.Name, err)
		}
	}
	cp := checkpoint.Next(t.ID, head, checkpoint.SourceUpdate)
	if base != nil {
		cp.Step, cp.Next, cp.Interrupt, cp.Resumes, cp.Counters = max(cp.Step, base.Step), base.Next, base.Interrupt, base.Resumes, base.Counters
		if base != head {
			cp.Meta.From = base.ID
		}
	}
	cp.Meta.Node = req.AsNode
	cp.State = merged
	if err := s.saver.Put(ctx, cp); err != nil {
		return fmt.Errorf("update state of thread %s: %w", t.ID, err)
	}
	ref := cpRef(t.ID, cp.ID)
	writeJSON(w, http.StatusOK, map[string]any{"checkpoint": ref, "configurable": ref})
	return nil
}

func (s *Server) history(w http.ResponseWriter, r *http.Request, owner string) error {
	var req struct {
		page
		Before *checkpointRef `json:"before"`
	}
	var err error
	if r.Method == http.MethodGet {
		req.Limit, err = queryInt(r, "limit", defaultPage, 1, maxPage)
	} else if err = decode(r, &req); err == nil {
		err = req.check()
	}
	if err != nil {
		return err
	}
	t, err := s.thread(r.Context(), r.PathValue("tid"), owner)
	if err != nil {
		return err
	}
	before := req.Before.id()
	limit := req.Limit
	if before != "" {
		limit = 0
	}
	cps, err := s.saver.List(r.Context(), t.ID, limit)
	if err != nil {
		return err
	}
	out := []lgState{}
	skipping := before != ""
	for _, cp := range cps {
		if skipping {
			skipping = cp.ID != before
			continue
		}
		if len(out) == req.Limit {
			break
		}
		out = append(out, stateJSON(t.ID, cp))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// ---- runs ----

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
	return lgRun{RunID: rec.ID, ThreadID: rec.Thread, AssistantID: rec.Agent, CreatedAt: rec.Created, UpdatedAt: rec.Updated,
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
}

func present(b json.RawMessage) bool { return len(b) > 0 && string(b) != "null" }

// input checks the request's input and command against agent a and turns
// them into the runtime's input.
func (req *runRequest) input(a *builtAgent) (graph.JSONInput, error) {
	var in graph.JSONInput
	unprocessable := func(format string, args ...any) error {
		return errorf(http.StatusUnprocessableEntity, "invalid_input", format, args...)
	}
	switch {
	case present(req.InterruptBefore) || present(req.InterruptAfter):
		return in, errorf(http.StatusUnprocessableEntity, "unsupported", "interrupt_before and interrupt_after are not supported; nodes ask with graph.Ask")
	case req.Webhook != "":
		return in, errorf(http.StatusUnprocessableEntity, "unsupported", "webhooks are not supported")
	case req.AfterSeconds > 0:
		return in, errorf(http.StatusUnprocessableEntity, "unsupported", "after_seconds is not supported")
	}
	if c := req.Command; c != nil {
		if present(c.Update) || present(c.Goto) {
			return in, errorf(http.StatusUnprocessableEntity, "unsupported", "command.update and command.goto are not supported; use command.resume, or update the thread's state")
		}
		if present(c.Resume) {
			if present(req.Input) {
				return in, unprocessable("give input or command.resume, not both")
			}
			in.Resume = c.Resume
			return in, nil
		}
	}
	if !present(req.Input) {
		return in, nil // continue where the thread stopped
	}
	if err := checkInput(a.Agent, a.schema, req.Input); err != nil {
		return in, unprocessable("%v", err)
	}
	in.Update = req.Input
	return in, nil
}

// checkOptions refuses values of if_not_exists, on_disconnect and
// on_completion that the server does not know (a typo was taken as the
// default); LangGraph's on_completion "keep" is Loom's "continue".
func (req *runRequest) checkOptions() error {
	if req.OnCompletion == "keep" {
		req.OnCompletion = "continue"
	}
	for _, err := range []error{oneOf("if_not_exists", req.IfNotExists, "create", "reject"),
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
	a, err := s.agent(req.AssistantID)
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
	if t != nil && from != "" && t.Status != StatusBusy {
		if _, err := s.saver.Get(ctx, tid, from); err != nil {
			return nil, err
		}
	}
	if t != nil && from == "" && in.Resume != nil {
		if err := s.checkAnswer(ctx, t, &in); err != nil {
			return nil, err
		}
	}
	if err := s.admitRun(ctx, owner, t, strategy, in, req.Metadata); err != nil {
		return nil, err
	}
	if t == nil {
		if !temp && in.Resume != nil {
			return nil, fmt.Errorf("resume thread %s: %w", tid, graph.ErrNoInterrupt)
		}
		if t, err = s.newThread(ctx, tid, owner, nil); err != nil {
			return nil, err
		}
	}
	run := s.newRun(t.ID, a.Name, owner, strategy, req.Metadata, in)
	run.from, run.modes = from, modes
	run.temp = temp && req.OnCompletion != "continue"
	if err := s.submit(ctx, run); err != nil {
		if temp {
			s.removeThread(context.WithoutCancel(ctx), t.ID)
		}
		return nil, err
	}
	return run, nil
}

func runLocation(r *run) string { return "/threads/" + r.thread + "/runs/" + r.id }

func (s *Server) createRun(w http.ResponseWriter, r *http.Request, owner string) error {
	var req runRequest
	if err := decode(r, &req); err != nil {
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
	switch {
	case strings.HasSuffix(r.URL.Path, "/wait"):
		return s.writeRunResult(w, r, run)
	case strings.HasSuffix(r.URL.Path, "/stream"):
		err := s.streamRun(w, r, run, modes, 0)
		if req.OnDisconnect == "cancel" && r.Context().Err() != nil {
			return s.cancelRun(context.WithoutCancel(r.Context()), run)
		}
		return err
	}
	writeJSON(w, http.StatusOK, runJSON(run.record()))
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
	if end.Interrupt != nil {
		b, _ := json.Marshal([]lgInterrupt{{Value: end.Interrupt.Payload, ID: end.Interrupt.ID}})
		values["__interrupt__"] = b
	}
	return values
}

// writeRunResult waits for run and writes its result. A client that goes
// away before does not stop the run.
func (s *Server) writeRunResult(w http.ResponseWriter, r *http.Request, run *run) error {
	end, err := s.result(r.Context(), run)
	if err != nil {
		if r.Context().Err() == nil {
			return fmt.Errorf("wait for run %s: %w", run.id, err)
		}
		return nil // the client went away; the run goes on
	}
	writeJSON(w, http.StatusOK, resultValues(end))
	return nil
}

// findRun returns run rid of thread tid, active (a *run) or finished (a
// record), if owner may see the thread.
func (s *Server) findRun(ctx context.Context, tid, rid, owner string) (*run, *RunRecord, error) {
	if _, err := s.thread(ctx, tid, owner); err != nil {
		return nil, nil, err
	}
	if s.jobs == nil {
		if run := s.lookupRun(rid); run != nil && run.thread == tid {
			return run, run.record(), nil
		}
	}
	rec, err := s.records.run(ctx, tid, rid)
	if err != nil {
		return nil, nil, err
	}
	if s.jobs != nil && (rec.Status == runPending || rec.Status == runRunning) {
		run, err := s.jobs.view(ctx, rec)
		return run, rec, err
	}
	return nil, rec, nil
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request, owner string) error {
	tid := r.PathValue("tid")
	if _, err := s.thread(r.Context(), tid, owner); err != nil {
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
	s.mu.Lock()
	var active []*run
	if l := s.lanes[tid]; l != nil && s.jobs == nil {
		active = append(append(active, l.queue...), l.cur)
		slices.Reverse(active)
	}
	s.mu.Unlock()
	for _, run := range active {
		out = append(out, runJSON(run.record()))
	}
	recs, err := s.records.listRuns(r.Context(), tid, limit+offset, 0)
	if err != nil {
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
	if err := s.cancelRun(r.Context(), run); err != nil {
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
		end.Data, end.Interrupt = cp.State, cp.Interrupt
	}
	writeJSON(w, http.StatusOK, resultValues(end))
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
	if run == nil && s.jobs != nil {
		// Over, but its events are kept for a while: a client that
		// reconnects after the end still gets what it missed.
		if run, err = s.jobs.view(r.Context(), rec); err != nil {
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
	run, err := s.activeRun(r.Context(), t.ID)
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
	err = s.streamRun(w, r, run, modes, lastEventID(r))
	if cancelOnDisconnect && r.Context().Err() != nil {
		return s.cancelRun(context.WithoutCancel(r.Context()), run)
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
// events for the stream modes asked.
func (s *Server) streamRun(w http.ResponseWriter, r *http.Request, run *run, modes []string, after int) error {
	sw := startStream(w, r, map[string]string{"Content-Location": runLocation(run), "Location": runLocation(run) + "/stream"}, `{"event":"heartbeat"}`)
	if err := sw.event("metadata", 0, map[string]string{"run_id": run.id, "thread_id": run.thread}); err != nil {
		return nil
	}
	lr := newLGRender(run, modes, sw)
	if err := s.pump(r.Context(), sw, run.feed, after, lr.render); err != nil && r.Context().Err() == nil && store.IsUnavailable(err) {
		ae := toAPI(err)
		sw.event("error", 0, map[string]string{"error": ae.code, "message": ae.message})
		sw.flush()
	}
	return nil // the client went away, or the server stops: the run is not affected
}

// ---- parameters ----

// Bounds of the list endpoints' pages.
const (
	defaultPage = 10
	maxPage     = 1000
	maxOffset   = 1 << 30
)

// page is the limit and offset of a list request's body; a limit of 0
// means defaultPage.
type page struct {
	Limit  int `json:"limit"`
	Offset int `json:"offset"`
}

// check checks p and fills in the default limit.
func (p *page) check() error {
	if err := inRange("limit", p.Limit, 0, maxPage); err != nil {
		return err
	}
	if err := inRange("offset", p.Offset, 0, maxOffset); err != nil {
		return err
	}
	if p.Limit == 0 {
		p.Limit = defaultPage
	}
	return nil
}

// invalidParameter is the error for a parameter the request gave wrong.
func invalidParameter(name, got, want string) error {
	return errorf(http.StatusUnprocessableEntity, "invalid_parameter", "%s: want %s, not %s", name, want, got)
}

// inRange checks the number n that a request gave for name.
func inRange(name string, n, lo, hi int) error {
	if n < lo || n > hi {
		return invalidParameter(name, strconv.Itoa(n), fmt.Sprintf("a whole number from %d to %d", lo, hi))
	}
	return nil
}

// queryInt reads the query parameter name: a whole number from lo to hi,
// or dflt when it is absent.
func queryInt(r *http.Request, name string, dflt, lo, hi int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return dflt, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, invalidParameter("query parameter "+name, strconv.Quote(v), fmt.Sprintf("a whole number from %d to %d", lo, hi))
	}
	return n, nil
}

// queryBool reads the query parameter name: true, false, 1 or 0 (false
// when it is absent).
func queryBool(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, invalidParameter("query parameter "+name, strconv.Quote(v), "true or false")
	}
	return b, nil
}

// oneOf checks that v, which a request gave for name, is "" or one of
// choices.
func oneOf(name, v string, choices ...string) error {
	if v == "" || slices.Contains(choices, v) {
		return nil
	}
	return invalidParameter(name, strconv.Quote(v), "one of "+strings.Join(choices, ", "))
}

// What thread searches and run lists may filter and sort by.
var (
	threadStatuses = []string{StatusIdle, StatusBusy, StatusInterrupted, StatusError}
	threadSorts    = []string{"thread_id", "status", "created_at", "updated_at", "state_updated_at"}
	runStatuses    = []string{runPending, runRunning, runSuccess, runError, runInterrupted}
)

// checkMetadata refuses thread metadata holding the character NUL
// (\u0000), which PostgreSQL's jsonb cannot hold: searching threads by
// metadata works alike on every database.
func checkMetadata(m map[string]json.RawMessage) error {
	for k, v := range m {
		var x any
		if strings.ContainsRune(k, 0) || (json.Unmarshal(v, &x) == nil && nulchar.In(x)) {
			return errorf(http.StatusUnprocessableEntity, "invalid_metadata", "metadata %q: keys and values may not contain the character NUL (\\u0000)", k)
		}
	}
	return nil
}

// errNotUTF8 is what a request body that is not UTF-8 fails with: JSON
// is UTF-8, and PostgreSQL refuses text that is not.
var errNotUTF8 = errors.New("the body is not UTF-8")

// utf8Reader reads r and fails with errNotUTF8 at the first bytes that
// are not UTF-8; a character split between two reads is checked whole.
type utf8Reader struct {
	r    io.Reader
	tail []byte // the start of a character the last read split
}

func (u *utf8Reader) Read(p []byte) (int, error) {
	n, err := u.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		return n, err // too large, too slow: that, not what was cut
	}
	b := p[:n]
	if len(u.tail) > 0 {
		b = append(u.tail, b...)
	}
	end := len(b)
	if err == nil {
		// Leave a character begun at the end for the next read.
		for i := len(b) - 1; i >= max(len(b)-utf8.UTFMax+1, 0); i-- {
			if utf8.RuneStart(b[i]) {
				if !utf8.FullRune(b[i:]) {
					end = i
				}
				break
			}
		}
	}
	if !utf8.Valid(b[:end]) {
		return 0, errNotUTF8
	}
	u.tail = append([]byte(nil), b[end:]...)
	return n, err
}
