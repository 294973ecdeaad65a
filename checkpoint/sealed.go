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
// s never sees a state in the clear, so it cannot store a state as a
// delta against its parent's (sealed values differ in every byte): each
// checkpoint costs its whole state, a third larger for base64.
// Checkpoints that were stored before sealing was turned on are read as
// they are. The Saver returned has Close, which closes s when s has one.
// A nil c returns s itself.
func Sealed(s Saver, c seal.Codec) Saver {
	if c == nil {
		return s
	}
	return &sealedSaver{s: s, c: c}
}

type sealedSaver struct {
	s Saver
	c seal.Codec
}

// envelopeVersion starts the plain text of a sealed checkpoint. No JSON
// value starts with this byte, so a state stored before sealing (which
// the codec opens as it is) is told apart.
const envelopeVersion = 1

// seal returns what s stores for cp: its clear fields, and State the
// sealed envelope of the rest. The envelope is envelopeVersion, the
// state's length (uvarint), the state, and when any other field is set,
// the checkpoint holding only those as JSON.
func (w *sealedSaver) seal(cp *Checkpoint) (*Checkpoint, error) {
	out := &Checkpoint{Thread: cp.Thread, ID: cp.ID, ParentID: cp.ParentID, Seq: cp.Seq, Step: cp.Step,
		Next: cp.Next, Counters: cp.Counters, Meta: cp.Meta}
	hidden := *cp
	hidden.Thread, hidden.ID, hidden.ParentID, hidden.Seq, hidden.Step = "", "", "", 0, 0
	hidden.Next, hidden.Counters, hidden.Meta, hidden.State = nil, nil, Meta{}, nil
	plain := make([]byte, 0, 1+binary.MaxVarintLen64+len(cp.State))
	plain = append(plain, envelopeVersion)
	plain = binary.AppendUvarint(plain, uint64(len(cp.State)))
	plain = append(plain, cp.State...)
	if !reflect.ValueOf(hidden).IsZero() {
		rest, err := json.Marshal(&hidden)
		if err != nil {
			return nil, fmt.Errorf("encode questions and answers: %w", err)
		}
		plain = append(plain, rest...)
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
	if len(plain) == 0 || plain[0] != envelopeVersion {
		return cp, nil // stored in the clear, before sealing was turned on
	}
	n, k := binary.Uvarint(plain[1:])
	if k <= 0 || n > uint64(len(plain)-1-k) {
		return nil, fmt.Errorf("checkpoint %s/%s: %w: sealed state length unreadable", cp.Thread, cp.ID, ErrCorrupt)
	}
	state := plain[1+k : 1+k+int(n)]
	out := &Checkpoint{}
	if rest := plain[1+k+int(n):]; len(rest) > 0 {
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
