package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// This file serves the LangGraph API's runs in bulk: POST /runs/batch
// starts several runs without a thread at once, and POST /runs/cancel
// cancels the runs of a thread, some runs by id, or every run of a
// status.

// maxBatch is how many runs one batch may start.
const maxBatch = 100

// batchRoutes adds the bulk run routes to routes.
func (s *Server) batchRoutes(routes map[string]handler) {
	routes["POST /runs/batch"] = s.createRunBatch
	routes["POST /runs/cancel"] = s.cancelRuns
}

// camelRunFields are the names the official JS client's createBatch
// sends a run's fields under (it copies the caller's camelCase payload
// and adds assistant_id): each is taken as its snake_case field.
var camelRunFields = map[string]string{
	"assistantId": "assistant_id", "streamMode": "stream_mode", "multitaskStrategy": "multitask_strategy",
	"ifNotExists": "if_not_exists", "onCompletion": "on_completion", "onDisconnect": "on_disconnect",
	"checkpointId": "checkpoint_id", "interruptBefore": "interrupt_before", "interruptAfter": "interrupt_after",
	"afterSeconds": "after_seconds", "streamResumable": "stream_resumable", "streamSubgraphs": "stream_subgraphs",
	"checkpointDuring": "checkpoint_during",
}

// snakeRunFields renames item's camelCase fields (see camelRunFields); a
// field given both ways must have one value.
func snakeRunFields(i int, item map[string]json.RawMessage) error {
	for camel, snake := range camelRunFields {
		v, ok := item[camel]
		if !ok {
			continue
		}
		if have, both := item[snake]; both && !jsonEqual(have, v) {
			return errorf(http.StatusUnprocessableEntity, "invalid_input", "runs[%d]: %s and %s differ", i, camel, snake)
		}
		delete(item, camel)
		item[snake] = v
	}
	return nil
}

// batchItem prefixes err, an error of the batch's item i, with where it
// is.
func batchItem(i int, err error) error {
	ae := toAPI(err)
	if ae.status >= 500 {
		return fmt.Errorf("runs[%d]: %w", i, err)
	}
	return errorf(ae.status, ae.code, "runs[%d]: %s", i, ae.message)
}

// createRunBatch starts each run of the body (an array of POST /runs
// bodies) on a thread of its own and answers with the runs, in order.
// Every item is checked before any run starts; a run that cannot start
// then (the server is shutting down, a quota is reached) fails the
// request, naming it, with the runs before it started.
func (s *Server) createRunBatch(w http.ResponseWriter, r *http.Request, owner string) error {
	var items []map[string]json.RawMessage
	if err := decode(r, &items); err != nil {
		return err
	}
	if len(items) == 0 || len(items) > maxBatch {
		return errorf(http.StatusUnprocessableEntity, "invalid_input", "a batch is an array of 1 to %d runs, not %d", maxBatch, len(items))
	}
	reqs := make([]*runRequest, len(items))
	modes := make([][]string, len(items))
	for i, item := range items {
		if item == nil {
			return errorf(http.StatusUnprocessableEntity, "invalid_input", "runs[%d] must be a JSON object", i)
		}
		if err := snakeRunFields(i, item); err != nil {
			return err
		}
		b, _ := json.Marshal(item)
		req := new(runRequest)
		if err := unmarshalKnown(b, fmt.Sprintf("runs[%d]", i), req); err != nil {
			return err
		}
		if req.AssistantID == "" {
			return errorf(http.StatusUnprocessableEntity, "invalid_input", "runs[%d]: assistant_id is required (one of: %s)", i, strings.Join(s.order, ", "))
		}
		m, err := parseModes(string(req.StreamMode), true)
		if err != nil {
			return batchItem(i, err)
		}
		if err := req.checkOptions(); err != nil {
			return batchItem(i, err)
		}
		if err := s.checkRun(r.Context(), owner, req); err != nil {
			return batchItem(i, err)
		}
		reqs[i], modes[i] = req, m
	}
	out := make([]lgRun, 0, len(reqs))
	for i, req := range reqs {
		run, err := s.prepareRun(r.Context(), "", owner, req, modes[i])
		if err != nil {
			return batchItem(i, err)
		}
		out = append(out, runJSON(run.record()))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// checkRun checks what prepareRun checks of a run without a thread
// before anything starts: its assistant, configuration and input.
func (s *Server) checkRun(ctx context.Context, owner string, req *runRequest) error {
	a, layers, err := s.runAssistant(ctx, owner, req.AssistantID)
	if err != nil {
		return err
	}
	if _, err := req.config(a, layers); err != nil {
		return err
	}
	if _, err := req.input(a); err != nil {
		return err
	}
	if _, err := req.strategy(); err != nil {
		return err
	}
	req.chat = nil // prepareRun reads the input again
	return nil
}

// cancelRequest is the body of POST /runs/cancel: a thread's runs (all,
// or those of run_ids), or every run of the caller whose status is
// status (pending, running or all).
type cancelRequest struct {
	ThreadID string   `json:"thread_id"`
	RunIDs   []string `json:"run_ids"`
	Status   string   `json:"status"`
}

// cancelRuns cancels runs in bulk (see cancelRequest); those over
// already are left as they are. With ?action=rollback each cancelled
// run's checkpoints are undone once it stopped.
func (s *Server) cancelRuns(w http.ResponseWriter, r *http.Request, owner string) error {
	var req cancelRequest
	if err := decodeKnown(r, "cancel", &req); err != nil {
		return err
	}
	action := r.URL.Query().Get("action")
	if err := oneOf("query parameter action", action, "interrupt", "rollback"); err != nil {
		return err
	}
	if err := oneOf("status", req.Status, "pending", "running", "all"); err != nil {
		return err
	}
	if len(req.RunIDs) > maxPage {
		return errorf(http.StatusUnprocessableEntity, "invalid_input", "run_ids: at most %d, not %d", maxPage, len(req.RunIDs))
	}
	var runs []*run
	switch {
	case req.Status != "" && (req.ThreadID != "" || len(req.RunIDs) > 0):
		return errorf(http.StatusUnprocessableEntity, "invalid_input", "give status, or thread_id with run_ids if any, not both")
	case req.Status != "":
		var err error
		if runs, err = s.activeRuns(r.Context(), owner, req.Status); err != nil {
			return err
		}
	case req.ThreadID != "":
		t, err := s.thread(r.Context(), req.ThreadID, owner)
		if err != nil {
			return err
		}
		if len(req.RunIDs) == 0 {
			if runs, err = s.threadRuns(r.Context(), t.ID); err != nil {
				return err
			}
			break
		}
		for _, id := range req.RunIDs {
			run, _, err := s.exec.find(r.Context(), t.ID, id)
			if err != nil {
				return err
			}
			if run != nil {
				runs = append(runs, run)
			}
		}
	default:
		return errorf(http.StatusUnprocessableEntity, "invalid_input", "give thread_id (with run_ids if not all its runs) or status")
	}
	for _, run := range runs {
		if err := s.exec.cancel(r.Context(), run); err != nil {
			return err
		}
	}
	if action == "rollback" {
		for _, run := range runs {
			if _, err := s.result(r.Context(), run); err != nil {
				return fmt.Errorf("wait for run %s: %w", run.id, err)
			}
			if err := s.undoRun(context.WithoutCancel(r.Context()), run.thread, run.id); err != nil {
				return err
			}
		}
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// threadRuns is the runs of thread (its key) not over yet.
func (s *Server) threadRuns(ctx context.Context, thread string) ([]*run, error) {
	ids, err := s.records.unfinishedRunIDs(ctx, "", thread)
	if err != nil {
		return nil, err
	}
	runs := slices.Clone(s.exec.held(thread))
	for _, id := range ids {
		if slices.ContainsFunc(runs, func(r *run) bool { return r.id == id[1] }) {
			continue
		}
		run, _, err := s.exec.find(ctx, thread, id[1])
		if err != nil && !errors.Is(err, ErrNotFound) {
			return nil, err
		}
		if run != nil {
			runs = append(runs, run)
		}
	}
	return runs, nil
}

// activeRuns is owner's runs whose status is status (pending, running,
// or all: either).
func (s *Server) activeRuns(ctx context.Context, owner, status string) ([]*run, error) {
	ids, err := s.records.unfinishedRunIDs(ctx, owner, "")
	if err != nil {
		return nil, err
	}
	threads := map[string]bool{}
	var runs []*run
	for _, id := range ids {
		threads[id[0]] = true
	}
	for t := range threads {
		rs, err := s.threadRuns(ctx, t)
		if err != nil {
			return nil, err
		}
		runs = append(runs, rs...)
	}
	if status == "all" {
		return runs, nil
	}
	return slices.DeleteFunc(runs, func(r *run) bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.status != status
	}), nil
}

// unfinishedRunIDs is the thread and id of each run recorded as pending
// or running: of owner's threads, or of thread when it is set.
func (s *records) unfinishedRunIDs(ctx context.Context, owner, thread string) ([][2]string, error) {
	q := `SELECT r.thread, r.id FROM loom_runs r JOIN loom_threads t ON t.id = r.thread WHERE t.owner = ? AND r.status IN ('pending', 'running')`
	arg := owner
	if thread != "" {
		q, arg = `SELECT thread, id FROM loom_runs WHERE thread = ? AND status IN ('pending', 'running')`, thread
	}
	rows, err := s.db.SQL().QueryContext(ctx, s.q(q), arg)
	if err != nil {
		return nil, fmt.Errorf("list unfinished runs: %w", err)
	}
	defer rows.Close()
	var out [][2]string
	for rows.Next() {
		var id [2]string
		if err := rows.Scan(&id[0], &id[1]); err != nil {
			return nil, fmt.Errorf("list unfinished runs: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
