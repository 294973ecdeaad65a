package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/loomkit/loom/internal/text"
	"github.com/loomkit/loom/llm"
)

// Backoff between attempts when the server gives no Retry-After:
// backoffBase doubled per attempt up to backoffMax, then jittered down by
// up to half.
const (
	backoffBase = 500 * time.Millisecond
	backoffMax  = 8 * time.Second
)

// errAttemptTimeout is the cause of an attempt's context when the attempt
// ran past Config.Timeout.
var errAttemptTimeout = fmt.Errorf("attempt timed out: %w", context.DeadlineExceeded)

// failure is an attempt's error, classified.
type failure struct {
	err      error         // what went wrong; wraps an llm sentinel where one fits
	retry    bool          // whether another attempt may succeed
	after    time.Duration // the server's Retry-After, when hasAfter
	hasAfter bool
}

// Error returns the message of the underlying error.
func (f *failure) Error() string { return f.err.Error() }

// Unwrap returns the underlying error.
func (f *failure) Unwrap() error { return f.err }

// finalError strips the classification from an attempt's error.
func finalError(err error) error {
	var f *failure
	if errors.As(err, &f) {
		return f.err
	}
	return err
}

// attemptError classifies the error of a request: raw is the HTTP response,
// if one came, actx the attempt's context and ctx the caller's.
func (m *Model) attemptError(ctx, actx context.Context, raw *http.Response, err error) error {
	if ctx.Err() != nil {
		if errors.Is(err, ctx.Err()) {
			return err
		}
		return errors.Join(ctx.Err(), err)
	}
	if errors.Is(context.Cause(actx), errAttemptTimeout) {
		return &failure{err: fmt.Errorf("%w: no response within %s: %w", llm.ErrUnavailable, m.cfg.Timeout, errAttemptTimeout), retry: true}
	}
	status := 0
	var header http.Header
	var apiErr *oa.Error
	if errors.As(err, &apiErr) {
		status = apiErr.StatusCode
		if apiErr.Response != nil {
			header = apiErr.Response.Header
		}
		if msg := apiErr.Message; msg != "" {
			err = fmt.Errorf("%w: %s", err, text.Clip(msg, 300))
		}
	} else if raw != nil && raw.StatusCode >= 400 {
		status, header = raw.StatusCode, raw.Header
	}
	if status != 0 {
		f := &failure{err: err}
		switch {
		case status == http.StatusTooManyRequests:
			f.err, f.retry = fmt.Errorf("%w: %w", llm.ErrRateLimited, err), true
		case status == http.StatusRequestTimeout || status == http.StatusConflict || status >= 500:
			f.err, f.retry = fmt.Errorf("%w: %w", llm.ErrUnavailable, err), true
		}
		f.after, f.hasAfter = retryAfter(header, time.Now())
		return f
	}
	return bodyError(err, raw != nil)
}

// streamError classifies an error met while reading a stream.
func (m *Model) streamError(ctx, actx context.Context, err error) error {
	if ctx.Err() != nil {
		return errors.Join(ctx.Err(), err)
	}
	if errors.Is(context.Cause(actx), errAttemptTimeout) {
		return &failure{err: fmt.Errorf("%w: stream stalled for %s: %w", llm.ErrUnavailable, m.cfg.Timeout, errAttemptTimeout), retry: true}
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		return &failure{err: fmt.Errorf("provider error in stream: %s", text.Clip(se.Message, 300))}
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syn) || errors.As(err, &typ) {
		return &failure{err: fmt.Errorf("%w: bad chunk: %w", llm.ErrMalformed, err)}
	}
	// The connection broke after the response began: the answer is cut.
	return &failure{err: fmt.Errorf("%w: %w", llm.ErrTruncated, err), retry: true}
}

// bodyError classifies an error that is not an HTTP error status: a
// connection that failed or broke, or a body that is not a chat completion.
// gotResponse says whether response headers had arrived.
func bodyError(err error, gotResponse bool) *failure {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var ne net.Error
	switch {
	case errors.As(err, &syn), errors.As(err, &typ):
		return &failure{err: fmt.Errorf("%w: %w", llm.ErrMalformed, err)}
	case errors.Is(err, io.ErrUnexpectedEOF), gotResponse && (errors.Is(err, io.EOF) || errors.As(err, &ne)):
		return &failure{err: fmt.Errorf("%w: %w", llm.ErrTruncated, err), retry: true}
	case gotResponse:
		return &failure{err: fmt.Errorf("%w: %w", llm.ErrMalformed, err)}
	}
	// No response: the connection failed.
	return &failure{err: fmt.Errorf("%w: %w", llm.ErrUnavailable, err), retry: true}
}

// retry decides what follows a failed attempt: it waits and returns nil
// when the call should be tried again, and returns the final error
// otherwise.
func (m *Model) retry(ctx context.Context, op string, attempt int, err error) error {
	var f *failure
	if !errors.As(err, &f) || !f.retry {
		return finalError(err)
	}
	if attempt >= m.cfg.MaxRetries {
		if attempt == 0 {
			return f.err
		}
		return fmt.Errorf("%w (gave up after %d attempts)", f.err, attempt+1)
	}
	wait := m.backoff(attempt)
	if f.hasAfter {
		if f.after > m.cfg.MaxRetryWait {
			return fmt.Errorf("%w (Retry-After %s is longer than %s)", f.err, f.after, m.cfg.MaxRetryWait)
		}
		wait = f.after
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
		return fmt.Errorf("%w (no time left to wait %s for a retry)", f.err, wait)
	}
	m.log.Warn("openai: retrying", "op", op, "attempt", attempt+2, "wait", wait, "err", f.err)
	if werr := m.wait(ctx, wait); werr != nil {
		return fmt.Errorf("%w (while waiting to retry: %w)", f.err, werr)
	}
	return nil
}

// backoff returns the wait before attempt+2 when the server named none.
func (m *Model) backoff(attempt int) time.Duration {
	d := backoffMax
	if attempt < 8 {
		d = min(backoffBase<<attempt, backoffMax)
	}
	return d/2 + time.Duration(m.jitter()*float64(d/2))
}

// retryAfter reads how long the server asked to wait: Retry-After-Ms
// (OpenAI), or Retry-After in seconds or as an HTTP date.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if h == nil {
		return 0, false
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && !math.IsInf(ms, 0) {
			return durationOf(ms / 1000), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 || math.IsNaN(s) {
			return 0, false
		}
		return durationOf(s), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// durationOf converts seconds to a Duration, saturating instead of
// overflowing.
func durationOf(seconds float64) time.Duration {
	if seconds >= float64(math.MaxInt64)/float64(time.Second) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(seconds * float64(time.Second))
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func randFloat() float64 { return rand.Float64() }
