package cabin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/internal/nulchar"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/store"
)

// maxBody bounds a request body.
const maxBody = 64 << 10

// Routes returns the assistant's HTTP API (chat, streamed chat, fill-slots,
// sessions, the simulated vehicles and orders), to mount beside
// Loom's own API (for instance with server.Server.Handle("/api/v1/", …)):
//
//	POST /api/v1/agent/chat           one turn: ChatRequest → Reply
//	POST /api/v1/agent/chat-stream    the same as NDJSON: an ack line when
//	                                  the answer takes long, then the final
//	POST /api/v1/agent/fill-slots     FillRequest → Reply
//	GET  /api/v1/agent/sessions/{id}  the session and what it waits for
//	GET  /api/v1/cabin/vehicles/{id}  a simulated vehicle's state
//	GET  /api/v1/cabin/orders         the simulated orders (?user_id=)
//	GET  /api/v1/cabin/orders/{id}    one order
//	GET  /api/v1/cabin/handoffs       the hand-offs to a person
//
// Errors are JSON: {"error": {"code": "...", "message": "..."}}.
//
// With threads (Loom's server, mounting Routes with HandleAPI), each
// session is a thread of the caller's: listed by the server's API and
// page, and not found for another API key. nil threads keep no record.
func Routes(app *App, threads Threads) http.Handler {
	if threads != nil {
		app = app.withThreads(threads)
	}
	m := http.NewServeMux()
	m.HandleFunc("POST /api/v1/agent/chat", func(w http.ResponseWriter, r *http.Request) {
		var req ChatRequest
		if !decodeBody(w, r, &req) {
			return
		}
		ctx, cancel := turnContext(r)
		defer cancel()
		reply, err := app.Chat(ctx, req)
		writeFound(w, reply, err, "session", req.SessionID)
	})
	m.HandleFunc("POST /api/v1/agent/fill-slots", func(w http.ResponseWriter, r *http.Request) {
		var req fillRequest
		if !decodeBody(w, r, &req) {
			return
		}
		ctx, cancel := turnContext(r)
		defer cancel()
		reply, err := app.FillSlots(ctx, req)
		writeFound(w, reply, err, "session", req.SessionID)
	})
	m.HandleFunc("POST /api/v1/agent/chat-stream", app.chatStream)
	m.HandleFunc("GET /api/v1/agent/sessions/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(w, r, "session")
		if !ok {
			return
		}
		info, err := app.Session(r.Context(), id)
		if err == nil && app.threads != nil {
			err = app.threads.TrackThread(r.Context(), id, agentName, "")
		}
		writeFound(w, info, err, "session", id)
	})
	m.HandleFunc("GET /api/v1/cabin/vehicles/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(w, r, "vehicle")
		if !ok {
			return
		}
		v, err := app.store.Vehicle(r.Context(), id)
		writeResult(w, v, err)
	})
	m.HandleFunc("GET /api/v1/cabin/orders", func(w http.ResponseWriter, r *http.Request) {
		user := r.URL.Query().Get("user_id")
		if strings.ContainsRune(user, 0) {
			writeResult(w, map[string]any{"orders": nil}, nil) // no user's id holds NUL
			return
		}
		orders, err := app.store.Orders(r.Context(), user)
		writeResult(w, map[string]any{"orders": orders}, err)
	})
	m.HandleFunc("GET /api/v1/cabin/orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(w, r, "order")
		if !ok {
			return
		}
		o, err := app.store.Order(r.Context(), id)
		writeFound(w, o, err, "order", id)
	})
	m.HandleFunc("POST /api/v1/cabin/reset", func(w http.ResponseWriter, r *http.Request) {
		writeResult(w, map[string]bool{"reset": true}, app.store.Reset(r.Context()))
	})
	m.HandleFunc("GET /api/v1/cabin/handoffs", func(w http.ResponseWriter, r *http.Request) {
		hs, err := app.store.Handoffs(r.Context())
		writeResult(w, map[string]any{"handoffs": hs}, err)
	})
	return m
}

// Threads is where sessions are recorded as threads of Loom's server;
// *server.Server is one.
type Threads interface {
	// TrackThread records that the caller uses thread id: it creates the
	// thread on first use, fails for another caller's thread, and sets the
	// thread's status when status is not "" (see server.Server.TrackThread).
	TrackThread(ctx context.Context, id, agent, status string) error
	// HoldThread gives the turn thread id, so that no run of Loom's API
	// goes on it at the same time (see server.Server.HoldThread).
	HoldThread(ctx context.Context, id string) (release func(), err error)
	// ThreadKey is the id the session's checkpoints are kept under: each
	// API key has its own session ids (see server.Server.ThreadKey).
	ThreadKey(ctx context.Context, id string) string
}

// turnTimeout bounds a turn that runs on after its client went away.
const turnTimeout = time.Minute

// turnContext keeps a turn running when its client disconnects, so that
// the vehicle and the session never disagree; a turn is bounded anyway.
func turnContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(r.Context()), turnTimeout)
}

// streamLine is one line of chat-stream: an ack, the final reply, or an
// error.
type streamLine struct {
	// Event is "ack", "final" or "error".
	Event     string `json:"event"`
	SessionID string `json:"session_id"`
	// Message is the ack's text.
	Message string `json:"message,omitempty"`
	// Reply is the final reply.
	Reply *Reply     `json:"reply,omitempty"`
	Error *httpError `json:"error,omitempty"`
}

// chatStream runs a turn and streams NDJSON: the final reply at once when
// it comes within Options.AckAfter, else an ack line first.
func (a *App) chatStream(w http.ResponseWriter, r *http.Request) {
	var req ChatRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if strings.TrimSpace(req.Text) == "" {
		writeResult(w, nil, fmt.Errorf("%w: text is empty", errBadRequest))
		return
	}
	if req.SessionID == "" {
		req.SessionID = checkpoint.NewID()
	}
	start := time.Now()
	type outcome struct {
		reply *Reply
		err   error
	}
	done := make(chan outcome, 1)
	ctx, cancel := turnContext(r)
	go func() {
		defer cancel()
		reply, err := a.Chat(ctx, req)
		done <- outcome{reply, err}
	}()
	enc := json.NewEncoder(w)
	rc := http.NewResponseController(w) // reaches Flush through wrappers such as Loom's server's
	flush := func() { _ = rc.Flush() }
	timer := time.NewTimer(a.ackAfter)
	defer timer.Stop()
	var first time.Duration
	var o outcome
	select {
	case o = <-done:
		if o.err != nil {
			// Nothing is streamed yet: the error gets its own status.
			writeFound(w, nil, o.err, "session", req.SessionID)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
	case <-timer.C:
		first = time.Since(start)
		w.Header().Set("Content-Type", "application/x-ndjson")
		_ = enc.Encode(streamLine{Event: typeAck, SessionID: req.SessionID, Message: a.replies.text("ack", nil)})
		flush()
		o = <-done
	}
	if o.err != nil { // after the ack, an error is the stream's last line
		_, e := classify(o.err)
		_ = enc.Encode(streamLine{Event: "error", SessionID: req.SessionID, Error: &e})
		return
	}
	if first > 0 {
		o.reply.Latency.FirstResponse = ms(first)
	}
	_ = enc.Encode(streamLine{Event: "final", SessionID: req.SessionID, Reply: o.reply})
	flush()
}

// httpError is the body of an error answer.
type httpError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// decodeBody reads the request's JSON body into v, or answers the error
// and returns false. Strings holding NUL (\u0000), which no id and no
// PostgreSQL text may hold, are refused.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	var raw json.RawMessage
	err := dec.Decode(&raw)
	if err == nil {
		_, err = dec.Token()
		var doc any
		switch {
		case err == nil:
			err = errors.New("data after the JSON object")
		case !errors.Is(err, io.EOF):
		case json.Unmarshal(raw, &doc) == nil && nulchar.In(doc):
			err = errors.New("strings may not contain the character NUL (\\u0000)")
		default:
			strict := json.NewDecoder(bytes.NewReader(raw))
			strict.DisallowUnknownFields()
			if err = strict.Decode(v); err == nil {
				return true
			}
		}
	}
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		writeError(w, http.StatusRequestEntityTooLarge, httpError{"too_large", fmt.Sprintf("request body is larger than %d bytes", tooLarge.Limit)})
	} else {
		writeError(w, http.StatusBadRequest, httpError{"bad_request", fmt.Sprintf("request body: %v", err)})
	}
	return false
}

// classify maps an error to an HTTP status and body.
func classify(err error) (int, httpError) {
	var api interface {
		HTTPStatus() int
		ErrorCode() string
	}
	switch {
	case errors.Is(err, errBadRequest):
		return http.StatusBadRequest, httpError{"bad_request", err.Error()}
	case errors.Is(err, errNotFound), errors.Is(err, checkpoint.ErrNotFound), errors.Is(err, server.ErrNotFound):
		return http.StatusNotFound, httpError{"not_found", err.Error()}
	case errors.Is(err, checkpoint.ErrConflict):
		return http.StatusConflict, httpError{"conflict", err.Error()}
	case errors.Is(err, server.ErrBusy):
		return http.StatusConflict, httpError{"busy", err.Error()}
	case store.IsUnavailable(err):
		return http.StatusServiceUnavailable, httpError{"database_unavailable", err.Error()}
	case errors.As(err, &api): // Loom's server's, from Threads
		return api.HTTPStatus(), httpError{api.ErrorCode(), err.Error()}
	}
	return http.StatusInternalServerError, httpError{"internal", err.Error()}
}

// pathID returns the request's {id}, or answers that the thing what with
// that id is not found when it holds NUL, which no id holds.
func pathID(w http.ResponseWriter, r *http.Request, what string) (string, bool) {
	id := r.PathValue("id")
	if strings.ContainsRune(id, 0) {
		writeFound(w, nil, errNotFound, what, id)
		return "", false
	}
	return id, true
}

// writeFound is writeResult for a request about the thing what called
// id: not finding it (another key's is not found either) says so in
// those words.
func writeFound(w http.ResponseWriter, v any, err error, what, id string) {
	if err != nil {
		if status, _ := classify(err); status == http.StatusNotFound {
			writeError(w, status, httpError{"not_found", fmt.Sprintf("%s %s not found", what, id)})
			return
		}
	}
	writeResult(w, v, err)
}

func writeResult(w http.ResponseWriter, v any, err error) {
	if err != nil {
		status, e := classify(err)
		writeError(w, status, e)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func writeError(w http.ResponseWriter, status int, e httpError) {
	writeJSON(w, status, map[string]httpError{"error": e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
