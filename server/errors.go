package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/store"
)

// Sentinel errors that callers of the server's Go API branch on.
var (
	// ErrNotFound: no such agent, thread, run or checkpoint — or one that
	// belongs to another API key.
	ErrNotFound = errors.New("not found")
	// ErrBusy: a run was refused because its thread is running another
	// and the multitask strategy is reject.
	ErrBusy = errors.New("thread is busy with another run")
	// ErrExists: a thread with that id exists already.
	ErrExists = errors.New("already exists")
	// ErrInsecure: the server was asked to listen on a non-loopback
	// address without API keys.
	ErrInsecure = errors.New("refusing to listen beyond loopback without API keys")
	// ErrUnsupportedDatabase: the database URL names a backend the
	// server cannot use, or SQLitePath was given one that is not SQLite.
	ErrUnsupportedDatabase = errors.New("unsupported database")
	// ErrClosing: the server is shutting down and starts no new runs.
	ErrClosing = errors.New("server is shutting down")
)

// apiError is an error with the HTTP status and the machine-readable code
// the client gets. Every error response is {"error":{"code","message"}}.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.message }

// HTTPStatus is the status the API answers the error with, for handlers
// mounted beside the API that write their own errors.
func (e *apiError) HTTPStatus() int { return e.status }

// ErrorCode is the machine-readable code the API answers the error with.
func (e *apiError) ErrorCode() string { return e.code }

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

// toAPI maps any error to what the client sees. Errors that are not API
// errors or known sentinels become a 500 that gives an id for the error,
// not its text (see internalError); the server logs it with the id.
func toAPI(err error) *apiError {
	var ae *apiError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &mbe):
		return errorf(http.StatusRequestEntityTooLarge, "too_large", "request body is larger than %d bytes", mbe.Limit)
	case errors.Is(err, ErrNotFound), errors.Is(err, checkpoint.ErrNotFound):
		return errorf(http.StatusNotFound, "not_found", "%v", err)
	case errors.Is(err, ErrBusy):
		return errorf(http.StatusConflict, "busy", "%v", err)
	case errors.Is(err, ErrExists):
		return errorf(http.StatusConflict, "exists", "%v", err)
	case errors.Is(err, graph.ErrInvalidAnswer):
		return errorf(http.StatusUnprocessableEntity, "invalid_answer", "%v", err)
	case errors.Is(err, graph.ErrNoInterrupt):
		return errorf(http.StatusConflict, "no_interrupt", "%v", err)
	case errors.Is(err, graph.ErrVersion):
		return errorf(http.StatusConflict, "graph_version", "%v", err)
	case errors.Is(err, checkpoint.ErrConflict):
		return errorf(http.StatusConflict, "conflict", "%v", err)
	case errors.Is(err, ErrClosing):
		return errorf(http.StatusServiceUnavailable, "closing", "%v", err)
	case store.IsInvalidText(err):
		return errorf(http.StatusBadRequest, "invalid_text", "ids and text may not contain the character NUL (\\u0000)")
	case store.IsUnavailable(err):
		// What the database said names files and hosts: it goes to the
		// log (see apiUploads), not to the client.
		return errorf(http.StatusServiceUnavailable, "database_unavailable", "the database cannot be reached or written just now; try again shortly")
	}
	return internalError(err)
}

// errorBody is the JSON every error response carries.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, err error) {
	ae := toAPI(err)
	if ae.status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, ae.status, errorBody{Error: errorDetail{Code: ae.code, Message: Redact(ae.message)}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(errorBody{Error: errorDetail{Code: "internal", Message: "encode response: " + err.Error()}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
