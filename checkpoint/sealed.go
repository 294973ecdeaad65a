package checkpoint

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/loomkit/loom/seal"
)

// Sealed returns a Saver that keeps checkpoints on s with what they may
// hold of users' data sealed by c (see package seal): the state, the
// questions asked (their payloads and defaults), the answers given
// (Resumes, Answers), the results of finished fan-out branches (Done)
// and any field not listed below, together as one sealed value in
// State. Thread, ID, ParentID, Seq, Step, Next, Counters and Meta stay in
// the clear, so s keeps its history, compare-and-set and pruning as
// before. A field added to Checkpoint later is sealed unless it is added
// to that list.
//
// When s is a BlobSealer (the SQLite, PostgreSQL and Redis savers are),
// Sealed calls its SealBlobs(c) and hands it that value in the clear: s
// makes the delta against the parent's value as it does for any state,
// and seals what it stores, the delta or the whole value. A step that
// appends a message stores about the message, sealed (a third larger for
// base64, and about 60 bytes more). A delta is read with the checkpoint it
// applies to, so reading a checkpoint needs the keys that sealed the
// rows back to the last whole one: keep old keys listed at least until
// each thread has been written since the rotation. On any other saver
// (Memory) the value is sealed here, whole, and each checkpoint costs its
// whole state.
//
// Checkpoints stored before sealing was turned on are read as they are,
// and so are those sealed whole (before savers sealed their deltas). The
// Saver returned has Close, which closes s when s has one. A nil c
// returns s itself.
func Sealed(s Saver, c seal.Codec) Saver {
	if c == nil {
		return s
	}
	if b, ok := s.(BlobSealer); ok {
		b.SealBlobs(c)
		return &sealedSaver{s: s, c: c, inner: true}
	}
	return &sealedSaver{s: s, c: c}
}

// BlobSealer is a Saver that seals what it stores of each checkpoint's
// state itself, so that it can still store states as deltas against
// their parents' (see Sealed). SealBlobs gives it the codec; it is called
// once, before the saver is used, and from then on the saver seals every
// state or delta it writes with c and opens every one it reads (those
// not sealed are read as they are). Its Get and List then return states
// in the clear: Sealed wraps it so that only the envelope Sealed makes,
// never a plain state, reaches it.
type BlobSealer interface {
	Saver
	SealBlobs(c seal.Codec)
}

type sealedSaver struct {
	s     Saver
	c     seal.Codec
	inner bool // s seals what it stores (BlobSealer): hand it the envelope
}

// The plain text of a sealed checkpoint (its envelope) starts with a
// version byte. No JSON value starts with these, so a state stored before
// sealing (which the codec opens as it is) is told apart.
//
// Version 1, which Sealed wrote before savers sealed their deltas: the
// state's length (uvarint), the state, then the hidden fields as JSON.
// Version 2, written now: the state, the hidden fields as JSON (nothing
// when none is set), then that JSON's length as 4 bytes, big-endian.
// The state's length, which changes at every step, is left out, so that
// two envelopes share what their states share: a delta (one changed
// span, see stored.Diff) between two envelopes is what changed in the
// state, plus the hidden fields when they changed.
const (
	envelopeV1 = 1
	envelopeV2 = 2
)

// seal returns what s stores for cp: its clear fields, and State the
// envelope of the rest (see envelopeV2), sealed unless s seals it.
func (w *sealedSaver) seal(cp *Checkpoint) (*Checkpoint, error) {
	out := &Checkpoint{Thread: cp.Thread, ID: cp.ID, ParentID: cp.ParentID, Seq: cp.Seq, Step: cp.Step,
		Next: cp.Next, Counters: cp.Counters, Meta: cp.Meta}
	hidden := *cp
	hidden.Thread, hidden.ID, hidden.ParentID, hidden.Seq, hidden.Step = "", "", "", 0, 0
	hidden.Next, hidden.Counters, hidden.Meta, hidden.State = nil, nil, Meta{}, nil
	var rest []byte
	if !reflect.ValueOf(hidden).IsZero() {
		var err error
		if rest, err = json.Marshal(&hidden); err != nil {
			return nil, fmt.Errorf("encode questions and answers: %w", err)
		}
	}
	plain := make([]byte, 0, 1+len(cp.State)+len(rest)+4)
	plain = append(plain, envelopeV2)
	plain = append(plain, cp.State...)
	plain = append(plain, rest...)
	plain = binary.BigEndian.AppendUint32(plain, uint32(len(rest)))
	if w.inner {
		out.State = plain
		return out, nil
	}
	var err error
	if out.State, err = w.c.Seal(plain); err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return out, nil
}

// open returns cp as it was before seal: cp itself when its State was
// never sealed.
func (w *sealedSaver) open(cp *Checkpoint) (*Checkpoint, error) {
	plain, err := w.c.Open(cp.State)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s/%s: %w", cp.Thread, cp.ID, err)
	}
	if len(plain) == 0 || plain[0] != envelopeV1 && plain[0] != envelopeV2 {
		return cp, nil // stored in the clear, before sealing was turned on
	}
	var state, rest []byte
	if plain[0] == envelopeV1 {
		n, k := binary.Uvarint(plain[1:])
		if k <= 0 || n > uint64(len(plain)-1-k) {
			return nil, fmt.Errorf("checkpoint %s/%s: %w: sealed state length unreadable", cp.Thread, cp.ID, ErrCorrupt)
		}
		state, rest = plain[1+k:1+k+int(n)], plain[1+k+int(n):]
	} else {
		body := plain[1:]
		if len(body) < 4 || uint64(binary.BigEndian.Uint32(body[len(body)-4:])) > uint64(len(body)-4) {
			return nil, fmt.Errorf("checkpoint %s/%s: %w: sealed fields' length unreadable", cp.Thread, cp.ID, ErrCorrupt)
		}
		n := int(binary.BigEndian.Uint32(body[len(body)-4:]))
		body = body[:len(body)-4]
		state, rest = body[:len(body)-n], body[len(body)-n:]
	}
	out := &Checkpoint{}
	if len(rest) > 0 {
		if err := json.Unmarshal(rest, out); err != nil {
			return nil, fmt.Errorf("checkpoint %s/%s: %w: decode sealed fields: %v", cp.Thread, cp.ID, ErrCorrupt, err)
		}
	}
	out.Thread, out.ID, out.ParentID, out.Seq, out.Step = cp.Thread, cp.ID, cp.ParentID, cp.Seq, cp.Step
	out.Next, out.Counters, out.Meta = cp.Next, cp.Counters, cp.Meta
	out.State = json.RawMessage(state)
	return out, nil
}

// Put implements Saver.
func (w *sealedSaver) Put(ctx context.Context, cp *Checkpoint) error {
	stored, err := w.seal(cp)
	if err != nil {
		return fmt.Errorf("checkpoint put %s/%s: %w", cp.Thread, cp.ID, err)
	}
	return w.s.Put(ctx, stored)
}

// Get implements Saver.
func (w *sealedSaver) Get(ctx context.Context, thread, id string) (*Checkpoint, error) {
	cp, err := w.s.Get(ctx, thread, id)
	if err != nil {
		return nil, err
	}
	return w.open(cp)
}

// List implements Saver.
func (w *sealedSaver) List(ctx context.Context, thread string, limit int) ([]*Checkpoint, error) {
	cps, err := w.s.List(ctx, thread, limit)
	if err != nil {
		return nil, err
	}
	for i, cp := range cps {
		if cps[i], err = w.open(cp); err != nil {
			return nil, err
		}
	}
	return cps, nil
}

// DeleteThread implements Saver.
func (w *sealedSaver) DeleteThread(ctx context.Context, thread string) error {
	return w.s.DeleteThread(ctx, thread)
}

// TrimHistory deletes the checkpoints of thread older than its newest
// keep on the saver underneath, which keeps them sealed as they are
// stored; an error when that saver has no TrimHistory.
func (w *sealedSaver) TrimHistory(ctx context.Context, thread string, keep int) (int, error) {
	t, ok := w.s.(interface {
		TrimHistory(ctx context.Context, thread string, keep int) (int, error)
	})
	if !ok {
		return 0, fmt.Errorf("checkpoint trim %s: %T cannot delete checkpoints", thread, w.s)
	}
	return t.TrimHistory(ctx, thread, keep)
}

// Close closes the saver underneath when it has a Close method.
func (w *sealedSaver) Close() error {
	if c, ok := w.s.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}
