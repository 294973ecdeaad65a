package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/loomkit/loom/checkpoint"
)

// This file serves the LangGraph API's a thread's state, its updates and its history (see langgraph.go).

func (s *Server) writeState(w http.ResponseWriter, r *http.Request, owner, id string) error {
	t, err := s.thread(r.Context(), r.PathValue("tid"), owner)
	if err != nil {
		return err
	}
	var cp *checkpoint.Checkpoint
	if id == "" {
		cp, err = s.head(r.Context(), t.ID)
	} else {
		cp, err = s.checkpointOf(r.Context(), t.ID, id)
	}
	if err != nil {
		return err
	}
	st := stateJSON(t.ID, cp)
	if id == "" && cp != nil {
		// The latest state shows the thread's conversation (see chatconv.go).
		st.Values = s.chatView(r.Context(), s.agents[t.Agent], t.ID).values(st.Values, cp.State, cp.Interrupt, t.Status != StatusBusy)
	}
	// A thread that has no checkpoint yet (made by POST /threads, or by an
	// agent's own endpoint such as an upload) has empty values and no
	// reply.
	if a := s.agents[t.Agent]; a != nil && a.Reply != nil && cp != nil {
		st.Reply = a.Reply(cp.State, cp.Interrupt)
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

// checkpointOf returns checkpoint id of the thread kept under key; one
// it does not have is a 404 that names the thread by the id its client
// gave (the saver's error names the key).
func (s *Server) checkpointOf(ctx context.Context, key, id string) (*checkpoint.Checkpoint, error) {
	cp, err := s.saver.Get(ctx, key, id)
	if errors.Is(err, checkpoint.ErrNotFound) {
		return nil, errorf(http.StatusNotFound, "not_found", "thread %s has no checkpoint %q", publicID(key), id)
	}
	if err != nil {
		return nil, fmt.Errorf("read checkpoint %s of thread %s: %w", id, publicID(key), err)
	}
	return cp, nil
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
		return fmt.Errorf("update state of thread %s: %w", publicID(t.ID), ErrBusy)
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
		if base, err = s.checkpointOf(ctx, t.ID, id); err != nil {
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
		return fmt.Errorf("update state of thread %s: %w", publicID(t.ID), err)
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
		cp.Interrupts, cp.Answers = base.Interrupts, base.Answers // every pending question, and the answers given
		cp.Meta.Version = base.Meta.Version                       // the graph version its state and next node are of
		if base != head {
			cp.Meta.From = base.ID
		}
	}
	cp.Meta.Node = req.AsNode
	cp.State = merged
	if err := s.saver.Put(ctx, cp); err != nil {
		return fmt.Errorf("update state of thread %s: %w", publicID(t.ID), err)
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
