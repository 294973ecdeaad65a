// Package replay records a model's exchanges to a file and plays them back
// offline, so an agent's tests run without a network and give the same
// answers every time.
//
// A Recorder wraps any llm.Model and appends each completed exchange (the
// request's messages and options, and the response or the streamed chunks)
// to a file as one JSON line. A Player answers from such a file in order. It
// checks that each request is the one recorded; the first that differs
// fails with a *MismatchError naming the request's index and the first
// field that differs. Streamed exchanges replay as the same chunks; an
// exchange recorded whole can be streamed and the other way round.
//
//	// Record once against a real model:
//	rec, _ := replay.Record(model, "testdata/plan.jsonl")
//	defer rec.Close()
//	// Replay in tests:
//	player, _ := replay.Open("testdata/plan.jsonl")
package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/loomkit/loom/llm"
)

// Sentinel errors that callers branch on.
var (
	// ErrMismatch is wrapped (via *MismatchError) when a request differs
	// from the recorded one.
	ErrMismatch = errors.New("replay: request differs from the recording")
	// ErrExhausted is returned when a request comes after the recording's
	// last exchange.
	ErrExhausted = errors.New("replay: no recorded exchange left")
)

// Exchange is one recorded call: one line of a recording file.
type Exchange struct {
	// Messages and Options are the request.
	Messages []llm.Message `json:"messages"`
	Options  llm.Options   `json:"options"`
	// Stream says whether the call was streamed.
	Stream bool `json:"stream,omitempty"`
	// Response is the answer of a whole call.
	Response *llm.Response `json:"response,omitempty"`
	// Chunks are the chunks of a streamed call, in order.
	Chunks []llm.Chunk `json:"chunks,omitempty"`
	// Stopped says the caller stopped reading the stream early: Chunks is
	// all it read, and a replay may not read further.
	Stopped bool `json:"stopped,omitempty"`
}

// Recorder is an llm.Model that passes calls to another model and records
// every exchange that completes. Failed calls are passed on, not recorded.
// It is safe for concurrent use; exchanges are written in the order they
// complete.
type Recorder struct {
	model llm.Model
	mu    sync.Mutex
	w     io.Writer
	c     io.Closer
}

var _ llm.Model = (*Recorder)(nil)

// NewRecorder returns a Recorder that writes exchanges of m to w.
func NewRecorder(m llm.Model, w io.Writer) *Recorder {
	return &Recorder{model: m, w: w}
}

// Record returns a Recorder that writes exchanges of m to the file at path,
// creating it or emptying it first. Close the Recorder when done.
func Record(m llm.Model, path string) (*Recorder, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("replay record: %w", err)
	}
	return &Recorder{model: m, w: f, c: f}, nil
}

// Close closes the file opened by Record; it does nothing for NewRecorder.
func (r *Recorder) Close() error {
	if r.c == nil {
		return nil
	}
	if err := r.c.Close(); err != nil {
		return fmt.Errorf("replay record: close: %w", err)
	}
	return nil
}

func (r *Recorder) write(ex Exchange) error {
	line, err := json.Marshal(ex)
	if err != nil {
		return fmt.Errorf("replay record: encode: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.w.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("replay record: write: %w", err)
	}
	return nil
}

// Generate calls the wrapped model and records the exchange.
func (r *Recorder) Generate(ctx context.Context, msgs []llm.Message, opts ...llm.Option) (*llm.Response, error) {
	msgs = slices.Clone(msgs)
	resp, err := r.model.Generate(ctx, msgs, opts...)
	if err != nil {
		return nil, err
	}
	if err := r.write(Exchange{Messages: msgs, Options: llm.NewOptions(opts...), Response: resp}); err != nil {
		return resp, err
	}
	return resp, nil
}

// Stream calls the wrapped model, passes its chunks on, and records the
// exchange when the stream ends or the caller stops reading.
func (r *Recorder) Stream(ctx context.Context, msgs []llm.Message, opts ...llm.Option) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		ex := Exchange{Messages: slices.Clone(msgs), Options: llm.NewOptions(opts...), Stream: true}
		for c, err := range r.model.Stream(ctx, msgs, opts...) {
			if err != nil {
				yield(c, err)
				return
			}
			ex.Chunks = append(ex.Chunks, c)
			if !yield(c, nil) {
				ex.Stopped = true
				if err := r.write(ex); err != nil {
					slog.Warn("replay: exchange not recorded", "err", err)
				}
				return
			}
		}
		if err := r.write(ex); err != nil {
			yield(llm.Chunk{}, err)
		}
	}
}

// Player is an llm.Model that answers from a recording, in order. It is safe
// for concurrent use, but concurrent calls take exchanges in the order they
// arrive, so a replayed agent should call its model from one goroutine.
type Player struct {
	mu        sync.Mutex
	exchanges []Exchange
	next      int
}

var _ llm.Model = (*Player)(nil)

// Open loads the recording at path.
func Open(path string) (*Player, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("replay open: %w", err)
	}
	defer f.Close()
	p, err := Load(f)
	if err != nil {
		return nil, fmt.Errorf("replay open %s: %w", path, err)
	}
	return p, nil
}

// Load reads a recording: JSON exchanges, one per line.
func Load(r io.Reader) (*Player, error) {
	dec := json.NewDecoder(r)
	p := &Player{}
	for {
		var ex Exchange
		err := dec.Decode(&ex)
		if errors.Is(err, io.EOF) {
			return p, nil
		}
		if err != nil {
			return nil, fmt.Errorf("replay load: exchange %d: %w", len(p.exchanges), err)
		}
		p.exchanges = append(p.exchanges, ex)
	}
}

// NewPlayer returns a Player that answers with exchanges in order.
func NewPlayer(exchanges ...Exchange) *Player {
	return &Player{exchanges: slices.Clone(exchanges)}
}

// Remaining returns how many recorded exchanges have not been replayed.
func (p *Player) Remaining() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.exchanges) - p.next
}

// take checks a request against the next exchange and, if it matches,
// moves past it.
// It returns the exchange and its index.
func (p *Player) take(msgs []llm.Message, opts []llm.Option) (Exchange, int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := p.next
	if i >= len(p.exchanges) {
		return Exchange{}, i, fmt.Errorf("replay: request %d: %w (the recording has %d)", i, ErrExhausted, len(p.exchanges))
	}
	rec := p.exchanges[i]
	if path, got, want, differ := diffRequest(msgs, llm.NewOptions(opts...), rec); differ {
		return Exchange{}, i, &MismatchError{Index: i, Path: path, Got: got, Recorded: want}
	}
	p.next++
	return rec, i, nil
}

// Generate answers with the next recorded exchange. A streamed exchange is
// assembled into its Response.
func (p *Player) Generate(ctx context.Context, msgs []llm.Message, opts ...llm.Option) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ex, i, err := p.take(msgs, opts)
	if err != nil {
		return nil, err
	}
	if ex.Response != nil {
		resp := *ex.Response
		return &resp, nil
	}
	if ex.Stopped {
		return nil, fmt.Errorf("replay: request %d: the recorded stream was stopped early by its reader: %w", i, llm.ErrTruncated)
	}
	var acc llm.Accumulator
	for _, c := range ex.Chunks {
		acc.Add(c)
	}
	return acc.Response(), nil
}

// Stream answers with the next recorded exchange as chunks: the recorded
// ones, or, for an exchange recorded whole, chunks made from its Response.
func (p *Player) Stream(ctx context.Context, msgs []llm.Message, opts ...llm.Option) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		ex, i, err := p.take(msgs, opts)
		if err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		chunks := ex.Chunks
		if ex.Response != nil {
			chunks = llm.Chunks(ex.Response)
		}
		for _, c := range chunks {
			if err := ctx.Err(); err != nil {
				yield(llm.Chunk{}, err)
				return
			}
			if !yield(c, nil) {
				return
			}
		}
		if ex.Stopped {
			yield(llm.Chunk{}, fmt.Errorf("replay: request %d: the recorded stream ends here because its reader stopped early: %w", i, llm.ErrTruncated))
		}
	}
}

// MismatchError says which request differs from the recording, and where.
type MismatchError struct {
	// Index is the position of the request among the player's calls,
	// counting from 0.
	Index int
	// Path names the first field that differs, e.g. "messages[2].content"
	// or "options.temperature".
	Path string
	// Got and Recorded are that field's JSON in the request and in the
	// recording; empty when the field is missing on that side.
	Got, Recorded string
}

// Error describes the difference.
func (e *MismatchError) Error() string {
	return fmt.Sprintf("replay: request %d differs from the recording at %s: got %s, recorded %s",
		e.Index, e.Path, orMissing(e.Got), orMissing(e.Recorded))
}

// Is makes errors.Is(err, ErrMismatch) true.
func (e *MismatchError) Is(target error) bool { return target == ErrMismatch }

func orMissing(s string) string {
	if s == "" {
		return "(missing)"
	}
	return s
}

// diffRequest compares a request with a recorded one as JSON, so that what
// round-trips through the file compares equal.
func diffRequest(msgs []llm.Message, opts llm.Options, rec Exchange) (path, got, want string, differ bool) {
	type request struct {
		Messages []llm.Message `json:"messages"`
		Options  llm.Options   `json:"options"`
	}
	a, errA := generic(request{msgs, opts})
	b, errB := generic(request{rec.Messages, rec.Options})
	if errA != nil || errB != nil {
		return "request", fmt.Sprint(errA), fmt.Sprint(errB), true
	}
	return diff("", a, b)
}

func generic(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(b, &out)
	return out, err
}

// diff returns the first path at which a and b differ, depth first, with
// the JSON of each side there.
func diff(path string, a, b any) (string, string, string, bool) {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(x)+len(y))
		for k := range x {
			keys = append(keys, k)
		}
		for k := range y {
			if _, ok := x[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			va, okA := x[k]
			vb, okB := y[k]
			if !okA || !okB {
				return p, show(va, okA), show(vb, okB), true
			}
			if p, g, w, d := diff(p, va, vb); d {
				return p, g, w, true
			}
		}
		return "", "", "", false
	case []any:
		y, ok := b.([]any)
		if !ok {
			break
		}
		for i := range min(len(x), len(y)) {
			if p, g, w, d := diff(path+"["+strconv.Itoa(i)+"]", x[i], y[i]); d {
				return p, g, w, true
			}
		}
		if len(x) != len(y) {
			return path, fmt.Sprintf("%d items", len(x)), fmt.Sprintf("%d items", len(y)), true
		}
		return "", "", "", false
	default:
		if a == b {
			return "", "", "", false
		}
	}
	return path, show(a, true), show(b, true), true
}

func show(v any, ok bool) string {
	if !ok {
		return ""
	}
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return strings.TrimSpace(s)
}
