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

	"github.com/loomkit/loom/seal"
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
	// Codec, when set, opens each row's State before it is used (see
	// SealBlob): the saver seals what it stores. Rows that are not sealed
	// (written before sealing was turned on, or by Sealed over a saver
	// that sealed whole states) are read as they are.
	Codec seal.Codec

	started bool
	seq     int64  // of the last row added
	id      string // of the last row added
	state   []byte // of the last row added, opened
	shared  bool   // state is also the State of a checkpoint in Out
	// raw is the last row's state as stored before opening, when a delta
	// that is not sealed may follow: such a delta applies to the value
	// stored, which was sealed whole when raw is sealed. nil after a
	// sealed delta.
	raw []byte
}

// LastSeq returns the Seq of the last row added.
func (r *Resolver) LastSeq() int64 { return r.seq }

// Add takes the next row. A row that does not follow the one before, a
// delta that does not apply, a sealed delta without a Codec, or meta
// that does not decode gives an error that names the row and wraps
// checkpoint.ErrCorrupt; a row the Codec cannot open gives the codec's
// error (seal.ErrUnknownKey, seal.ErrTampered), naming the row.
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
	var err error
	switch {
	case r.Codec != nil:
		err = r.addSealed(rw)
	case seal.IsSealed(rw.State) && !rw.Full:
		return bad("the state is sealed (encrypted at rest) and this saver cannot open it: give it the keys that sealed it (%s)", seal.EnvKeys)
	case rw.Full:
		r.state, r.shared, r.Chain = bytes.Clone(rw.State), false, 0
	default:
		var next []byte
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
	if err != nil {
		return fmt.Errorf("checkpoint %s/%s (seq %d): %w", r.Thread, rw.ID, rw.Seq, err)
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

// addSealed is Add's part for a saver with a Codec. A full row is
// opened; a sealed delta is opened and applied to the state before it
// (the state in the clear); a delta that is not sealed applies to the
// value stored before it (raw), which is then opened: Sealed over a
// saver without a codec stored whole sealed states, as deltas of each
// other when they were small. Errors wrap checkpoint.ErrCorrupt, or are
// the codec's own (a key it lacks, a sealed value changed).
func (r *Resolver) addSealed(rw *Row) error {
	switch {
	case rw.Full:
		raw := bytes.Clone(rw.State)
		state, err := r.Codec.Open(raw)
		if err != nil {
			return err
		}
		r.raw, r.state, r.shared, r.Chain = raw, state, false, 0
	case seal.IsSealed(rw.State):
		d, err := r.Codec.Open(rw.State)
		if err != nil {
			return err
		}
		var next []byte
		if r.shared {
			next, err = Patch(r.state, d)
		} else {
			next, err = patchInPlace(r.state, d)
		}
		if err != nil {
			return fmt.Errorf("%w: apply sealed delta to seq %d: %v", checkpoint.ErrCorrupt, r.seq, err)
		}
		r.raw, r.state, r.shared = nil, next, false
		r.Chain += ChainCost(d, len(next))
	default:
		if r.raw == nil {
			return fmt.Errorf("%w: a delta in the clear follows the sealed delta of seq %d", checkpoint.ErrCorrupt, r.seq)
		}
		raw, err := Patch(r.raw, rw.State)
		if err != nil {
			return fmt.Errorf("%w: apply delta to seq %d: %v", checkpoint.ErrCorrupt, r.seq, err)
		}
		state, err := r.Codec.Open(raw)
		if err != nil {
			return err
		}
		r.raw, r.state, r.shared = raw, state, false
		r.Chain += ChainCost(rw.State, len(raw))
	}
	return nil
}

// SealBlob returns what a saver with codec c stores for blob, a full
// state or a delta made by DeltaCache.Encode: blob sealed by c, or blob
// itself when c is nil.
func SealBlob(c seal.Codec, blob []byte) ([]byte, error) {
	if c == nil {
		return blob, nil
	}
	sealed, err := c.Seal(blob)
	if err != nil {
		return nil, fmt.Errorf("seal state: %w", err)
	}
	return sealed, nil
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
