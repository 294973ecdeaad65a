package openai

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/loomkit/loom/llm"
)

// doneDecoder passes server-sent events through and notes whether the
// stream's end marker, [DONE], came. openai-go's stream ends quietly when
// the body ends, so without this a cut stream would pass for a whole one.
type doneDecoder struct {
	ssestream.Decoder
	done    bool
	onEvent func()
}

// Next moves to the next event, noting [DONE] and that data arrived.
func (d *doneDecoder) Next() bool {
	if !d.Decoder.Next() {
		return false
	}
	d.onEvent()
	if bytes.HasPrefix(d.Event().Data, []byte("[DONE]")) {
		d.done = true
	}
	return true
}

// streamOnce makes one streamed attempt, handing chunks to yield. It
// reports whether any chunk was handed over and whether the caller stopped.
func (m *Model) streamOnce(ctx context.Context, params oa.ChatCompletionNewParams, yield func(llm.Chunk, error) bool) (yielded, stopped bool, err error) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// The attempt times out when no event comes for Timeout: before the
	// response headers, and between two events while the caller waits.
	timer := time.AfterFunc(m.cfg.Timeout, func() { cancel(errAttemptTimeout) })
	defer timer.Stop()

	var raw *http.Response
	if _, err := m.svc.New(actx, params, option.WithResponseBodyInto(&raw)); err != nil {
		return false, false, m.attemptError(ctx, actx, raw, err)
	}
	if raw == nil || raw.Body == nil {
		return false, false, &failure{err: fmt.Errorf("%w: empty stream response", llm.ErrMalformed)}
	}
	if mt, _, _ := mime.ParseMediaType(raw.Header.Get("Content-Type")); mt == "application/json" {
		body, _ := io.ReadAll(io.LimitReader(raw.Body, 512))
		_ = raw.Body.Close()
		return false, false, &failure{err: fmt.Errorf("%w: asked for a stream, got JSON: %s", llm.ErrMalformed, body)}
	}

	dec := &doneDecoder{Decoder: ssestream.NewDecoder(raw), onEvent: func() { timer.Reset(m.cfg.Timeout) }}
	stream := ssestream.NewStream[oa.ChatCompletionChunk](dec, nil)
	defer stream.Close()

	var st chunkState
	for stream.Next() {
		c := st.chunk(stream.Current())
		if empty(c) {
			continue
		}
		yielded = true
		// The caller's time with a chunk is not the server's stall.
		timer.Stop()
		if !yield(c, nil) {
			return true, true, nil
		}
		timer.Reset(m.cfg.Timeout)
	}
	if err := stream.Err(); err != nil {
		return yielded, false, m.streamError(ctx, actx, err)
	}
	if !dec.done {
		return yielded, false, &failure{err: fmt.Errorf("%w: stream ended without [DONE]", llm.ErrTruncated), retry: true}
	}
	if !yield(llm.Chunk{FinishReason: st.finish, Usage: st.usage}, nil) {
		return true, true, nil
	}
	return true, false, nil
}
