package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// This file serves the LangGraph API's assistant writes: create, update
// (a new version), delete, versions and the choice of the latest one.
// The assistants themselves are kept in assistants.go.

// assistantRoutes adds the assistant routes that write to routes.
func (s *Server) assistantRoutes(routes map[string]handler) {
	routes["POST /assistants"] = s.createAssistant
	routes["PATCH /assistants/{id}"] = s.patchAssistant
	routes["DELETE /assistants/{id}"] = s.deleteAssistant
	routes["POST /assistants/{id}/versions"] = s.assistantVersionsAPI
	routes["GET /assistants/{id}/versions"] = s.assistantVersionsAPI
	routes["POST /assistants/{id}/latest"] = s.setLatestAssistantAPI
}

// assistant is the assistant id that owner may use: one it created (at
// its latest version), or an agent's own; with the agent it runs.
func (s *Server) assistant(ctx context.Context, owner, id string) (*builtAgent, lgAssistant, error) {
	if a, ok := s.agents[id]; ok {
		return a, assistantJSON(a), nil
	}
	v, updated, err := s.records.latestAssistant(ctx, owner, id)
	if errors.Is(err, ErrNotFound) {
		return nil, lgAssistant{}, errorf(http.StatusNotFound, "not_found", "agent %q not found, nor an assistant by that id (agents: %s)", id, strings.Join(s.order, ", "))
	}
	if err != nil {
		return nil, lgAssistant{}, err
	}
	a, err := s.agent(v.graphID)
	if err != nil {
		return nil, lgAssistant{}, errorf(http.StatusConflict, "agent_gone", "assistant %s runs agent %s, which this server no longer serves", id, v.graphID)
	}
	return a, v.json(updated), nil
}

// runAssistant is the agent that a run of assistant id runs, and the
// assistant's configuration (config.configurable, then context) that the
// run's goes over.
func (s *Server) runAssistant(ctx context.Context, owner, id string) (*builtAgent, []map[string]json.RawMessage, error) {
	if a, ok := s.agents[id]; ok { // the common case reads nothing
		return a, nil, nil
	}
	a, as, err := s.assistant(ctx, owner, id)
	if err != nil {
		return nil, nil, err
	}
	config, _ := json.Marshal(as.Config)
	context, _ := json.Marshal(as.Context)
	layers, err := assistantLayers(a, config, context)
	if err != nil {
		return nil, nil, fmt.Errorf("assistant %s: %w", id, err)
	}
	return a, layers, nil
}

// config checks the run's config and context against agent a, over the
// assistant's layers, and returns the run's configuration (nil: none).
func (req *runRequest) config(a *builtAgent, layers []map[string]json.RawMessage) (json.RawMessage, error) {
	if !present(req.Config) && !present(req.Context) && len(layers) == 0 {
		return nil, nil
	}
	c, err := configurable("config", req.Config)
	if err != nil {
		return nil, err
	}
	x, err := contextObject("context", req.Context)
	if err != nil {
		return nil, err
	}
	return mergeConfig(a, append(layers, c, x)...)
}

// assistantRequest is the body of POST /assistants and PATCH
// /assistants/{id}.
type assistantRequest struct {
	AssistantID string          `json:"assistant_id"`
	GraphID     string          `json:"graph_id"`
	Config      json.RawMessage `json:"config"`
	Context     json.RawMessage `json:"context"`
	Metadata    json.RawMessage `json:"metadata"`
	IfExists    string          `json:"if_exists"`
	Name        *string         `json:"name"`
	Description *string         `json:"description"`
}

func (s *Server) createAssistant(w http.ResponseWriter, r *http.Request, owner string) error {
	var req assistantRequest
	if err := decodeKnown(r, "assistant", &req); err != nil {
		return err
	}
	if err := oneOf("if_exists", req.IfExists, "raise", "do_nothing"); err != nil {
		return err
	}
	if req.GraphID == "" {
		return errorf(http.StatusUnprocessableEntity, "invalid_input", "graph_id is required (one of: %s)", strings.Join(s.order, ", "))
	}
	a, err := s.agent(req.GraphID)
	if err != nil {
		return err
	}
	id := req.AssistantID
	if id == "" {
		id = newAssistantID()
	} else if err := validAssistantID(id); err != nil {
		return err
	}
	if _, ok := s.agents[id]; ok {
		return errorf(http.StatusConflict, "exists", "assistant %s is an agent's own; choose another id", id)
	}
	name, description := deref(req.Name), deref(req.Description)
	if name == "" {
		name = id
	}
	if err := assistantFields(a, name, description, req.Config, req.Context, req.Metadata); err != nil {
		return err
	}
	v := &assistantVersion{owner: owner, id: id, version: 1, graphID: a.Name, name: name, description: description,
		config: orEmptyObject(req.Config), context: orEmptyObject(req.Context), metadata: orEmptyObject(req.Metadata), created: time.Now().UTC()}
	err = s.records.putAssistantVersion(r.Context(), v)
	if errors.Is(err, ErrExists) {
		if req.IfExists == "do_nothing" {
			_, as, err := s.assistant(r.Context(), owner, id)
			if err != nil {
				return err
			}
			writeJSON(w, http.StatusOK, as)
			return nil
		}
		return errorf(http.StatusConflict, "exists", "assistant %s exists already", id)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v.json(v.created))
	return nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// patchAssistant makes a new version of an assistant, the latest: what
// the request sets over the latest version (metadata merged key by key).
func (s *Server) patchAssistant(w http.ResponseWriter, r *http.Request, owner string) error {
	id := r.PathValue("id")
	if _, ok := s.agents[id]; ok {
		return errorf(http.StatusConflict, "read_only", "assistant %s is an agent's own and cannot be changed; create an assistant with graph_id %s", id, id)
	}
	var req assistantRequest
	if err := decodeKnown(r, "assistant", &req); err != nil {
		return err
	}
	if req.AssistantID != "" || req.IfExists != "" {
		return errorf(http.StatusUnprocessableEntity, "unsupported_field", "assistant_id and if_exists are set when an assistant is created, not updated")
	}
	cur, _, err := s.records.latestAssistant(r.Context(), owner, id)
	if errors.Is(err, ErrNotFound) {
		return errorf(http.StatusNotFound, "not_found", "assistant %q not found", id)
	}
	if err != nil {
		return err
	}
	versions, err := s.records.assistantVersions(r.Context(), owner, id)
	if err != nil {
		return err
	}
	if len(versions) >= maxVersions {
		return errorf(http.StatusUnprocessableEntity, "too_many_versions", "assistant %s has %d versions, the most it may have; create a new assistant", id, maxVersions)
	}
	next := *cur
	next.version = versions[0].version + 1
	next.created = time.Now().UTC()
	if req.GraphID != "" {
		next.graphID = req.GraphID
	}
	a, err := s.agent(next.graphID)
	if err != nil {
		return err
	}
	if req.Name != nil {
		next.name = *req.Name
	}
	if req.Description != nil {
		next.description = *req.Description
	}
	if present(req.Config) {
		next.config = req.Config
	}
	if present(req.Context) {
		next.context = req.Context
	}
	if err := assistantFields(a, next.name, next.description, next.config, next.context, req.Metadata); err != nil {
		return err
	}
	if present(req.Metadata) {
		next.metadata = mergeObjects(cur.metadata, req.Metadata)
	}
	// The new version follows the newest one, even when an older one was
	// made the latest.
	if err := s.records.setLatestAssistant(r.Context(), owner, id, versions[0].version); err != nil {
		return err
	}
	if err := s.records.putAssistantVersion(r.Context(), &next); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, next.json(next.created))
	return nil
}

func (s *Server) deleteAssistant(w http.ResponseWriter, r *http.Request, owner string) error {
	id := r.PathValue("id")
	if _, ok := s.agents[id]; ok {
		return errorf(http.StatusConflict, "read_only", "assistant %s is an agent's own and cannot be deleted", id)
	}
	del, err := queryBool(r, "delete_threads")
	if err != nil {
		return err
	}
	if _, _, err := s.records.latestAssistant(r.Context(), owner, id); errors.Is(err, ErrNotFound) {
		return errorf(http.StatusNotFound, "not_found", "assistant %q not found", id)
	} else if err != nil {
		return err
	}
	if del {
		if err := s.deleteAssistantThreads(r.Context(), owner, id); err != nil {
			return err
		}
	}
	err = s.records.deleteAssistant(r.Context(), owner, id)
	if errors.Is(err, ErrNotFound) {
		return errorf(http.StatusNotFound, "not_found", "assistant %q not found", id)
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// deleteAssistantThreads deletes owner's threads that a run of assistant
// id created (their metadata's assistant_id names it, as in LangGraph).
// A busy one stops it before anything is deleted: 409 naming the thread.
func (s *Server) deleteAssistantThreads(ctx context.Context, owner, id string) error {
	name, _ := json.Marshal(id)
	q := threadQuery{Metadata: map[string]json.RawMessage{"assistant_id": name}, Limit: maxPage}
	var all []*Thread
	for {
		ts, err := s.records.searchThreads(ctx, owner, q)
		if err != nil {
			return fmt.Errorf("find the threads of assistant %s: %w", id, err)
		}
		for _, t := range ts {
			if t.Status == StatusBusy || s.busy(t.ID) {
				return errorf(http.StatusConflict, "busy", "thread %s of assistant %s has a run going; cancel it first (nothing was deleted)", publicID(t.ID), id)
			}
		}
		all = append(all, ts...)
		if len(ts) < q.Limit {
			break
		}
		q.Offset += len(ts)
	}
	for _, t := range all {
		if err := s.removeThread(ctx, t.ID); err != nil {
			return fmt.Errorf("delete the threads of assistant %s: %w", id, err)
		}
	}
	return nil
}

// assistantVersionsAPI lists an assistant's versions, newest first; an
// agent's own assistant has one.
func (s *Server) assistantVersionsAPI(w http.ResponseWriter, r *http.Request, owner string) error {
	var q struct {
		Metadata map[string]json.RawMessage `json:"metadata"`
		page
	}
	if r.Method == http.MethodPost {
		if err := decodeKnown(r, "versions query", &q); err != nil {
			return err
		}
	}
	if err := q.check(); err != nil {
		return err
	}
	id := r.PathValue("id")
	var out []lgAssistant
	if a, ok := s.agents[id]; ok {
		out = []lgAssistant{assistantJSON(a)}
	} else {
		vs, err := s.records.assistantVersions(r.Context(), owner, id)
		if err != nil {
			return err
		}
		if len(vs) == 0 {
			return errorf(http.StatusNotFound, "not_found", "assistant %q not found", id)
		}
		for _, v := range vs {
			out = append(out, v.json(v.created))
		}
	}
	kept := []lgAssistant{}
	for _, a := range out {
		if len(q.Metadata) == 0 || matchesMetadata(a.Metadata, q.Metadata) {
			kept = append(kept, a)
		}
	}
	kept = kept[min(q.Offset, len(kept)):]
	writeJSON(w, http.StatusOK, kept[:min(q.Limit, len(kept))])
	return nil
}

func (s *Server) setLatestAssistantAPI(w http.ResponseWriter, r *http.Request, owner string) error {
	id := r.PathValue("id")
	var req struct {
		Version *int `json:"version"`
	}
	if err := decodeKnown(r, "latest", &req); err != nil {
		return err
	}
	if req.Version == nil {
		return errorf(http.StatusUnprocessableEntity, "invalid_input", "version is required")
	}
	if a, ok := s.agents[id]; ok {
		if *req.Version != 1 {
			return errorf(http.StatusNotFound, "not_found", "assistant %s has no version %d", id, *req.Version)
		}
		writeJSON(w, http.StatusOK, assistantJSON(a))
		return nil
	}
	if _, _, err := s.assistant(r.Context(), owner, id); err != nil {
		return err
	}
	if err := s.records.setLatestAssistant(r.Context(), owner, id, *req.Version); err != nil {
		return err
	}
	_, as, err := s.assistant(r.Context(), owner, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, as)
	return nil
}
