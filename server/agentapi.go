package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/loomkit/loom/checkpoint"
)

// This file is what an agent's own endpoints (Agent.Routes) share with
// the API: its error responses, and reading a thread as the caller may.

// WriteError writes an error response in the API's shape,
// {"error":{"code":…,"message":…}}, for an agent's own endpoints.
// The message goes through Redact.
func WriteError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, errorBody{Error: errorDetail{Code: code, Message: Redact(message)}})
}

// Fail writes err as the API answers it, for an agent's own endpoints: an
// error of the API (a thread of another key is a 404, a quota's 429 comes
// with Retry-After, a database that refuses writes is a 503) with its
// status and code; any other error is a 500 that gives the client an id
// and not the error's text, and is logged with that id (see ErrorID).
func (s *Server) Fail(w http.ResponseWriter, r *http.Request, err error) {
	status, _, _ := PublicError(err)
	if status >= 500 {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "error_id", ErrorID(err), "err", err)
	}
	setRetryAfter(w, err)
	writeError(w, err)
}

// ThreadID is the thread id a client knows for key, the id a graph runs
// on (graph.Thread) under the server: a node that shows the client a
// link to its thread uses it (see Server.ThreadKey).
func ThreadID(key string) string { return publicID(key) }

// ThreadState returns the latest state of thread id for the caller of
// ctx, recording the turn for agent (see TrackThread). A thread that does
// not exist, or that another key owns, is an error wrapping ErrNotFound,
// as in the API.
func (s *Server) ThreadState(ctx context.Context, id, agent string) (json.RawMessage, error) {
	cp, err := s.saver.Get(ctx, threadKey(Caller(ctx), id), "")
	if errors.Is(err, checkpoint.ErrNotFound) {
		return nil, fmt.Errorf("thread %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read thread %s: %w", id, err)
	}
	if err := s.TrackThread(ctx, id, agent, ""); err != nil {
		return nil, err
	}
	return cp.State, nil
}
