package sqlite

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/loomkit/loom/checkpoint"
)

// metaDoc is the JSON in a row's meta column: the checkpoint fields that
// have no column of their own.
type metaDoc struct {
	Next      []string              `json:"next,omitempty"`
	Interrupt *checkpoint.Interrupt `json:"interrupt,omitempty"`
	Resumes   []json.RawMessage     `json:"resumes,omitempty"`
	Counters  map[string]int        `json:"counters,omitempty"`
	Meta      checkpoint.Meta       `json:"meta"`
}

func encodeMeta(cp *checkpoint.Checkpoint) ([]byte, error) {
	return json.Marshal(metaDoc{Next: cp.Next, Interrupt: cp.Interrupt, Resumes: cp.Resumes, Counters: cp.Counters, Meta: cp.Meta})
}

// row is one row of a read query. state and meta may point into the
// driver's buffers, valid only until the next row is read.
type row struct {
	seq         int64
	id, parent  string
	step        int64
	full        bool
	state, meta []byte
	keep        bool // the caller wants this checkpoint
}

// resolver rebuilds checkpoints from the rows of a read query, oldest
// first: a full row starts a state, each delta row patches it.
type resolver struct {
	thread  string
	started bool
	seq     int64  // of the last row added
	id      string // of the last row added
	state   []byte // of the last row added
	shared  bool   // state is also the State of a checkpoint in out
	chain   int    // checkpoint.ChainCost of the deltas since the full row
	out     []*checkpoint.Checkpoint
}

// add takes the next row. A row that does not follow the one before, a
// delta that does not apply, or meta that does not decode gives an error
// that names the row and wraps checkpoint.ErrCorrupt.
func (r *resolver) add(rw *row) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("checkpoint %s/%s (seq %d): %w: %s", r.thread, rw.id, rw.seq, checkpoint.ErrCorrupt, fmt.Sprintf(format, args...))
	}
	switch {
	case !r.started && !rw.full:
		return bad("no full state at or before it")
	case r.started && rw.seq != r.seq+1:
		return bad("follows seq %d: rows missing", r.seq)
	case r.started && rw.parent != r.id:
		return bad("parent %q, but the row before is %q", rw.parent, r.id)
	}
	if rw.full {
		r.state, r.shared, r.chain = clone(rw.state), false, 0
	} else {
		var next []byte
		var err error
		if r.shared {
			next, err = checkpoint.Patch(r.state, rw.state)
		} else {
			next, err = patchInPlace(r.state, rw.state)
		}
		if err != nil {
			return bad("apply delta to seq %d: %v", r.seq, err)
		}
		r.state, r.shared = next, false
		r.chain += checkpoint.ChainCost(rw.state, len(next))
	}
	r.started, r.seq, r.id = true, rw.seq, rw.id
	if !rw.keep {
		return nil
	}
	var m metaDoc
	if err := json.Unmarshal(rw.meta, &m); err != nil {
		return bad("decode meta: %v", err)
	}
	r.out = append(r.out, &checkpoint.Checkpoint{
		Thread:    r.thread,
		ID:        rw.id,
		ParentID:  rw.parent,
		Seq:       rw.seq,
		Step:      int(rw.step),
		State:     r.state,
		Next:      m.Next,
		Interrupt: m.Interrupt,
		Resumes:   m.Resumes,
		Counters:  m.Counters,
		Meta:      m.Meta,
	})
	r.shared = true
	return nil
}

// patchInPlace is checkpoint.Patch, writing into prev's array when it is
// large enough: only the bytes after the shared prefix move, so replaying
// a chain of appends costs the size of the appends, not of the state each
// time. prev must not be used afterwards.
func patchInPlace(prev, delta []byte) ([]byte, error) {
	p, n := binary.Uvarint(delta)
	if n <= 0 {
		return checkpoint.Patch(prev, delta) // for its error
	}
	s, m := binary.Uvarint(delta[n:])
	if m <= 0 || p > uint64(len(prev)) || s > uint64(len(prev))-p {
		return checkpoint.Patch(prev, delta)
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
