package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"time"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
)

// This file serves the LangGraph API's threads: create, read, search, copy, delete (see langgraph.go).

type lgInterrupt struct {
	Value json.RawMessage `json:"value"`
	ID    string          `json:"id"`
}

// lgInterrupts shows pending questions as LangGraph does.
func lgInterrupts(pending []checkpoint.Interrupt) []lgInterrupt {
	out := make([]lgInterrupt, len(pending))
	for i, p := range pending {
		out[i] = lgInterrupt{Value: p.Payload, ID: p.ID}
	}
	return out
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
	return &lgCheckpoint{ThreadID: publicID(thread), CheckpointID: id, CheckpointMap: json.RawMessage("null")}
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
		for _, i := range cp.Pending() {
			if i.Node == n {
				t.Interrupts = append(t.Interrupts, lgInterrupt{Value: i.Payload, ID: i.ID})
			}
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
	out := lgThread{ThreadID: publicID(t.ID), CreatedAt: t.Created, UpdatedAt: t.Updated, StateUpdatedAt: t.Updated,
		Metadata: orEmptyObject(t.Metadata), Status: t.Status, Values: json.RawMessage("{}"), Interrupts: map[string][]lgInterrupt{}}
	if t.Error != "" && t.Status == StatusError {
		e := Redact(t.Error) // recorded before redaction, perhaps
		out.Error = &e
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

// agentMetadata is the metadata of a thread the server creates for agent:
// meta with graph_id and assistant_id naming the agent, as LangGraph
// records them, so that a search by graph_id finds the agent's threads;
// keys meta sets already are kept as they are.
func agentMetadata(meta json.RawMessage, agent string) json.RawMessage {
	m := map[string]json.RawMessage{}
	if len(meta) > 0 && string(meta) != "null" {
		if err := json.Unmarshal(meta, &m); err != nil {
			return meta // not an object: checked, and refused, where it came in
		}
	}
	name, _ := json.Marshal(agent)
	for _, k := range []string{"graph_id", "assistant_id"} {
		if _, ok := m[k]; !ok {
			m[k] = name
		}
	}
	b, _ := json.Marshal(m)
	return b
}

// newThread creates owner's thread id; id "" gets a fresh id.
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
	t := &Thread{ID: threadKey(owner, id), Owner: owner, Status: StatusIdle, Metadata: orEmptyObject(meta), Created: now, Updated: now}
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
		TTL        json.RawMessage            `json:"ttl"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	ttl, err := parseTTL(req.TTL)
	if err != nil {
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
	if err := s.setThreadTTL(r.Context(), t.ID, ttl); err != nil {
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
		TTL      json.RawMessage            `json:"ttl"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if err := checkMetadata(req.Metadata); err != nil {
		return err
	}
	ttl, err := parseTTL(req.TTL)
	if err != nil {
		return err
	}
	if err := s.setThreadTTL(r.Context(), t.ID, ttl); err != nil {
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
		return fmt.Errorf("delete thread %s: %w; cancel its run first", publicID(t.ID), ErrBusy)
	}
	if err := s.removeThread(r.Context(), t.ID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// removeThread deletes a thread's record, runs and checkpoints, with
// the checkpoints its agent's subgraphs kept: theirs first, so that a
// deletion that fails leaves the thread to be deleted again.
func (s *Server) removeThread(ctx context.Context, id string) error {
	agent := ""
	t, err := s.records.thread(ctx, id)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("delete thread %s: %w", publicID(id), err)
	}
	if t != nil {
		agent = t.Agent
	}
	for _, thread := range s.checkpointThreads(id, agent) {
		if err := s.saver.DeleteThread(ctx, thread); err != nil {
			return fmt.Errorf("delete thread %s: %w", publicID(id), err)
		}
	}
	return s.records.deleteThread(ctx, id)
}

// checkpointThreads returns the threads whose checkpoints thread id of
// agent keeps: those its agent's subgraphs keep (see
// graph.SubgraphThreads), then its own.
func (s *Server) checkpointThreads(id, agent string) []string {
	if a := s.agents[agent]; a != nil {
		return append(graph.SubgraphThreads(a.runner, id), id)
	}
	return []string{id}
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
	} else if _, err := s.checkpointOf(r.Context(), t.ID, from); err != nil {
		return err
	}
	if from == "" && len(req.Values) > 0 {
		return errorf(http.StatusUnprocessableEntity, "invalid_values", "thread %s has no checkpoint to copy values onto", publicID(t.ID))
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

// threadQuery reads a search of owner's threads.
func (s *Server) threadQuery(r *http.Request, owner string) (threadQuery, error) {
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
	var ids []string
	for _, id := range q.IDs {
		if checkThreadID(id) == nil {
			ids = append(ids, threadKey(owner, id))
		}
	}
	if len(q.IDs) > 0 && len(ids) == 0 {
		ids = []string{""} // matches nothing
	}
	tq := threadQuery{IDs: ids, Status: q.Status, Metadata: orEmptyMap(q.Metadata), Limit: q.Limit, Offset: q.Offset,
		SortBy: q.SortBy, Desc: q.SortOrder != "asc"}
	if q.Status != StatusBusy {
		return tq, nil
	}
	if busy, inMemory := s.exec.busyThreads(); inMemory {
		// Busy lives in the executor's memory, not in the table.
		tq.Status = ""
		tq.IDs = tq.IDs[:0:0]
		for _, id := range busy {
			if len(q.IDs) == 0 || slices.Contains(ids, id) {
				tq.IDs = append(tq.IDs, id)
			}
		}
		if len(tq.IDs) == 0 {
			tq.IDs = []string{""} // matches nothing
		}
	}
	return tq, nil
}

func (s *Server) searchThreads(w http.ResponseWriter, r *http.Request, owner string) error {
	q, err := s.threadQuery(r, owner)
	if err != nil {
		return err
	}
	ts, err := s.records.searchThreads(r.Context(), owner, q)
	if err != nil {
		return err
	}
	out := make([]lgThread, 0, len(ts))
	for _, t := range ts {
		if s.busy(t.ID) {
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
	q, err := s.threadQuery(r, owner)
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
