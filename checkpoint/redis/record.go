package redis

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/checkpoint/internal/stored"
)

// recordVersion is the first byte of every stored record.
const recordVersion = 1

// flagFull marks a record whose state is a full state, not a delta.
const flagFull = 1

// appendRecord appends the stored form of cp to b: the version byte, a
// flags byte, then the id, seq, step, parent id and meta (see metaDoc),
// each string preceded by its length as a uvarint and each number a
// varint, then state (a full state or a stored.Diff delta) to the end.
// The id comes first so that a record broken further on can still be named.
func appendRecord(b []byte, cp *checkpoint.Checkpoint, full bool, meta, state []byte) []byte {
	var flags byte
	if full {
		flags |= flagFull
	}
	b = append(b, recordVersion, flags)
	b = binary.AppendUvarint(b, uint64(len(cp.ID)))
	b = append(b, cp.ID...)
	b = binary.AppendVarint(b, cp.Seq)
	b = binary.AppendVarint(b, int64(cp.Step))
	b = binary.AppendUvarint(b, uint64(len(cp.ParentID)))
	b = append(b, cp.ParentID...)
	b = binary.AppendUvarint(b, uint64(len(meta)))
	b = append(b, meta...)
	return append(b, state...)
}

var errShort = errors.New("record ends early")

// parseRecord fills rw from a stored record; rw.State and rw.Meta point
// into b. On an error rw.ID holds the id when it could be read.
func parseRecord(b []byte, rw *stored.Row) error {
	*rw = stored.Row{}
	if len(b) < 2 {
		return errShort
	}
	if b[0] != recordVersion {
		return fmt.Errorf("record version %d, want %d", b[0], recordVersion)
	}
	if b[1]&^flagFull != 0 {
		return fmt.Errorf("unknown record flags %#x", b[1])
	}
	rw.Full = b[1]&flagFull != 0
	b = b[2:]
	str := func() (string, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return "", false
		}
		s := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return s, true
	}
	num := func() (int64, bool) {
		v, k := binary.Varint(b)
		if k <= 0 {
			return 0, false
		}
		b = b[k:]
		return v, true
	}
	var ok bool
	if rw.ID, ok = str(); !ok {
		return errShort
	}
	if rw.Seq, ok = num(); !ok {
		return errShort
	}
	if rw.Step, ok = num(); !ok {
		return errShort
	}
	if rw.Parent, ok = str(); !ok {
		return errShort
	}
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return errShort
	}
	rw.Meta = b[k : k+int(n)]
	rw.State = b[k+int(n):]
	return nil
}
