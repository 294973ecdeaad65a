// Package threadstate reads, for an app's own HTTP routes, a thread's
// state as the app's state type, answering the request itself when it
// cannot.
package threadstate

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/loomkit/loom/server"
)

// Read reads the state of thread id, of agent, for the caller as an S.
// When it cannot it answers the request and reports false: a thread that
// does not exist or is another key's is a 404; one whose state is not an
// S is a 409 with code, saying "thread ID is not " and whose (such as
// "the SQL agent's"); any other error is answered as the server answers
// it (another agent's thread a 409, a database that cannot be read a
// 503), no text of the error but the thread's id reaching the client.
func Read[S any](w http.ResponseWriter, r *http.Request, srv *server.Server, id, agent, code, whose string) (S, bool) {
	var s S
	raw, err := srv.ThreadState(r.Context(), id, agent)
	switch {
	case errors.Is(err, server.ErrNotFound):
		server.WriteError(w, http.StatusNotFound, "not_found", "no thread "+id)
		return s, false
	case err != nil:
		srv.Fail(w, r, err)
		return s, false
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		server.WriteError(w, http.StatusConflict, code, "thread "+id+" is not "+whose)
		return s, false
	}
	return s, true
}
