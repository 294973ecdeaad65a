// Package stored is what the SQL and Redis savers share: a checkpoint as
// a stored row (its state full or as a delta against its parent, its
// other fields encoded as JSON), the resolver that rebuilds checkpoints
// from rows, and the cache of recent states that deltas are made
// against.
package stored

import (
	"github.com/loomkit/loom/checkpoint"

	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
)

// metaDoc is the JSON a saver stores beside a checkpoint's state: the
// fields that have no column (or record field) of their own.
type metaDoc struct {
	Next       []string                     `json:"next,omitempty"`
	Interrupt  *checkpoint.Interrupt        `json:"interrupt,omitempty"`
	Interrupts []checkpoint.Interrupt       `json:"interrupts,omitempty"`
	Resumes    []json.RawMessage            `json:"resumes,omitempty"`
	Answers    map[string][]json.RawMessage `json:"answers,omitempty"`
	Done       map[string]json.RawMessage   `json:"done,omitempty"`
	Nest       *checkpoint.Nest             `json:"nest,omitempty"`
	Counters   map[string]int               `json:"counters,omitempty"`
	Meta       checkpoint.Meta              `json:"meta"`
}

// EncodeMeta encodes the fields of cp that a Row keeps in Meta: next,
// interrupts, resumes, answers, finished branches, nesting, counters and
// metadata.
func EncodeMeta(cp *checkpoint.Checkpoint) ([]byte, error) {
	return json.Marshal(metaDoc{Next: cp.Next, Interrupt: cp.Interrupt, Interrupts: cp.Interrupts, Resumes: cp.Resumes, Answers: cp.Answers,
		Done: cp.Done, Nest: cp.Nest, Counters: cp.Counters, Meta: cp.Meta})
}

// Row is one stored checkpoint as the SQL and Redis savers keep it: its
// identity, its state (full, or a Diff delta against the row at Seq-1),
// and its other fields encoded by EncodeMeta. State and Meta may point
// into a driver's buffers, valid only until the next row is read.
type Row struct {
	Seq         int64
	ID, Parent  string
	Step        int64
	Full        bool
	State, Meta []byte
	Keep        bool // the caller wants this checkpoint, not only its state
}

// Resolver rebuilds checkpoints from stored rows, oldest first: a full row
// starts a state, each delta row patches it. Savers feed it the rows from
// the last full state up to the newest one wanted.
type Resolver struct {
	// Thread is the thread the rows belong to, for error messages.
	Thread string
	// Out holds the checkpoints of the rows marked Keep, oldest first.
	Out []*checkpoint.Checkpoint
	// Chain is the ChainCost of the deltas since the last full row, for
	// DeltaCache.Remember.
	Chain int

	started bool
	seq     int64  // of the last row added
	id      string // of the last row added
	state   []byte // of the last row added
	shared  bool   // state is also the State of a checkpoint in Out
}

// LastSeq returns the Seq of the last row added.
func (r *Resolver) LastSeq() int64 { return r.seq }

// Add takes the next row. A row that does not follow the one before, a
// delta that does not apply, or meta that does not decode gives an error
// that names the row and wraps checkpoint.ErrCorrupt.
func (r *Resolver) Add(rw *Row) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("checkpoint %s/%s (seq %d): %w: %s", r.Thread, rw.ID, rw.Seq, checkpoint.ErrCorrupt, fmt.Sprintf(format, args...))
	}
	switch {
	case !r.started && !rw.Full:
		return bad("no full state at or before it")
	case r.started && rw.Seq != r.seq+1:
		return bad("follows seq %d: rows missing", r.seq)
	case r.started && rw.Parent != r.id:
		return bad("parent %q, but the row before is %q", rw.Parent, r.id)
	}
	if rw.Full {
		r.state, r.shared, r.Chain = bytes.Clone(rw.State), false, 0
	} else {
		var next []byte
		var err error
		if r.shared {
			next, err = Patch(r.state, rw.State)
		} else {
			next, err = patchInPlace(r.state, rw.State)
		}
		if err != nil {
			return bad("apply delta to seq %d: %v", r.seq, err)
		}
		r.state, r.shared = next, false
		r.Chain += ChainCost(rw.State, len(next))
	}
	r.started, r.seq, r.id = true, rw.Seq, rw.ID
	if !rw.Keep {
		return nil
	}
	var m metaDoc
	if err := json.Unmarshal(rw.Meta, &m); err != nil {
		return bad("decode meta: %v", err)
	}
	r.Out = append(r.Out, &checkpoint.Checkpoint{
		Thread:     r.Thread,
		ID:         rw.ID,
		ParentID:   rw.Parent,
		Seq:        rw.Seq,
		Step:       int(rw.Step),
		State:      r.state,
		Next:       m.Next,
		Interrupt:  m.Interrupt,
		Interrupts: m.Interrupts,
		Resumes:    m.Resumes,
		Answers:    m.Answers,
		Done:       m.Done,
		Nest:       m.Nest,
		Counters:   m.Counters,
		Meta:       m.Meta,
	})
	r.shared = true
	return nil
}

// patchInPlace is Patch, writing into prev's array when it is
// large enough: only the bytes after the shared prefix move, so replaying
// a chain of appends costs the size of the appends, not of the state each
// time. prev must not be used afterwards.
func patchInPlace(prev, delta []byte) ([]byte, error) {
	p, n := binary.Uvarint(delta)
	if n <= 0 {
		return Patch(prev, delta) // for its error
	}
	s, m := binary.Uvarint(delta[n:])
	if m <= 0 || p > uint64(len(prev)) || s > uint64(len(prev))-p {
		return Patch(prev, delta)
	}
	mid := delta[n+m:]
	pre, suf := int(p), int(s)
	size := pre + len(mid) + suf
	if size > cap(prev) {
		out := make([]byte, size, size+size/4)
		copy(out, prev[:pre])
		copy(out[pre:], mid)
		copy(out[pre+len(mid):], prev[len(prev)-suf:])
		return out, nil
	}
	out := prev[:size]
	copy(out[pre+len(mid):], prev[len(prev)-suf:]) // memmove: may overlap
	copy(out[pre:], mid)
	return out, nil
}

// Last returns the newest checkpoint resolved, or nil. With head set (the
// rows were read up to the thread's head) it is remembered in cache, so
// the next Put after it can store a delta.
func (r *Resolver) Last(cache *DeltaCache, head bool) *checkpoint.Checkpoint {
	if len(r.Out) == 0 {
		return nil
	}
	cp := r.Out[len(r.Out)-1]
	if head {
		cache.Remember(r.Thread, cp.ID, bytes.Clone(cp.State), r.Chain)
	}
	return cp
}

// NewestFirst returns the checkpoints resolved from a read up to the
// thread's head, newest first, as List returns them; the head is
// remembered in cache.
func (r *Resolver) NewestFirst(cache *DeltaCache) []*checkpoint.Checkpoint {
	r.Last(cache, true)
	slices.Reverse(r.Out)
	return r.Out
}
