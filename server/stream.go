package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/loomkit/loom/store"
)

// streamWriter writes a stream of events as SSE or as NDJSON.
type streamWriter struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	ndjson bool
	// beat is the heartbeat line for NDJSON streams (SSE streams get a
	// comment line).
	beat []byte
}

// wantsNDJSON reports whether the client asked for NDJSON, with
// "Accept: application/x-ndjson" or "?format=ndjson".
func wantsNDJSON(r *http.Request) bool {
	return r.URL.Query().Get("format") == "ndjson" ||
		strings.Contains(r.Header.Get("Accept"), "application/x-ndjson") ||
		strings.Contains(r.Header.Get("Accept"), "application/ndjson")
}

// startStream sends the headers of a stream response.
func startStream(w http.ResponseWriter, r *http.Request, header map[string]string, beat string) *streamWriter {
	sw := &streamWriter{w: w, rc: http.NewResponseController(w), ndjson: wantsNDJSON(r), beat: []byte(beat + "\n")}
	h := w.Header()
	if sw.ndjson {
		h.Set("Content-Type", "application/x-ndjson")
	} else {
		h.Set("Content-Type", "text/event-stream")
	}
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	for k, v := range header {
		h.Set(k, v)
	}
	w.WriteHeader(http.StatusOK)
	sw.flush()
	return sw
}

// event writes one named event: SSE "id/event/data", or the NDJSON line
// {"event":name,"id":id,"data":data}.
func (sw *streamWriter) event(name string, id int, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encode %s event: %w", name, err)
	}
	if sw.ndjson {
		line := struct {
			Event string          `json:"event"`
			ID    int             `json:"id,omitempty"`
			Data  json.RawMessage `json:"data"`
		}{name, id, b}
		return sw.line(line)
	}
	var buf []byte
	if id > 0 {
		buf = append(append(append(buf, "id: "...), strconv.Itoa(id)...), '\n')
	}
	buf = append(append(append(buf, "event: "...), name...), '\n')
	buf = append(append(append(buf, "data: "...), b...), "\n\n"...)
	_, err = sw.w.Write(buf)
	return err
}

// data writes an unnamed event: SSE "data: JSON", or an NDJSON line.
func (sw *streamWriter) data(v any) error {
	if sw.ndjson {
		return sw.line(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode stream data: %w", err)
	}
	_, err = sw.w.Write(append(append([]byte("data: "), b...), "\n\n"...))
	return err
}

func (sw *streamWriter) line(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode stream line: %w", err)
	}
	_, err = sw.w.Write(append(b, '\n'))
	return err
}

// done writes SSE's "data: [DONE]" (nothing for NDJSON).
func (sw *streamWriter) done() {
	if !sw.ndjson {
		sw.w.Write([]byte("data: [DONE]\n\n"))
	}
}

func (sw *streamWriter) heartbeat() error {
	var err error
	if sw.ndjson {
		_, err = sw.w.Write(sw.beat)
	} else {
		_, err = sw.w.Write([]byte(": heartbeat\n\n"))
	}
	return err
}

func (sw *streamWriter) flush() { sw.rc.Flush() }

// pump writes f's events after seq after to sw through render, with a
// heartbeat on idle stretches, until the run ends, ctx ends (the client
// went away, or the server stops) or a write fails. The run is not
// affected either way.
func (s *Server) pump(ctx context.Context, sw *streamWriter, f feed, after int, render func(e *event) error) error {
	return s.follow(ctx, f, after, render, sw.flush, func() error {
		if err := sw.heartbeat(); err != nil {
			return err
		}
		sw.flush()
		return nil
	})
}

// outage bounds how long follow waits out a database that cannot be
// reached before it gives up with the error.
const outage = 30 * time.Second

// follow calls each for f's events after seq after, and flushed after each
// batch, until the run ends or ctx ends; idle, when not nil, is called
// when no event came for a heartbeat interval. Reads that fail because
// the database is unavailable are tried again, for up to a while.
func (s *Server) follow(ctx context.Context, f feed, after int, each func(e *event) error, flushed func(), idle func() error) error {
	t := time.NewTicker(s.opts.Heartbeat)
	defer t.Stop()
	var down time.Time // when reads began to fail
	for {
		evs, wake, closed, err := f.since(ctx, after)
		var retry <-chan time.Time
		switch {
		case err == nil:
			down = time.Time{}
		case ctx.Err() != nil:
			return ctx.Err()
		case !store.IsUnavailable(err):
			return err
		case down.IsZero():
			down = time.Now()
			fallthrough
		default:
			if time.Since(down) > outage {
				return err
			}
			retry = time.After(250 * time.Millisecond)
		}
		for i := range evs {
			if err := each(&evs[i]); err != nil {
				return err
			}
			after = evs[i].Seq
		}
		if len(evs) > 0 {
			if flushed != nil {
				flushed()
			}
			t.Reset(s.opts.Heartbeat)
		}
		if closed {
			return nil
		}
		select {
		case <-wake:
		case <-retry:
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			if idle != nil {
				if err := idle(); err != nil {
					return err
				}
			}
		}
	}
}
