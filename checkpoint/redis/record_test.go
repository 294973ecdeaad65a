package redis

import (
	"bytes"
	"testing"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/checkpoint/internal/stored"
)

// FuzzRecord checks that a record reads back as written, that every cut
// of it short of the state is refused, and that parsing arbitrary bytes
// never panics and, when it succeeds, describes those bytes.
func FuzzRecord(f *testing.F) {
	f.Add("0198a3c4-7e2b-7c3e-9f10-123456789abc", "0198a3c4-7e2b-7c3e-9f10-123456789abb", int64(3), int64(2), true, []byte(`{"meta":{"source":"step"}}`), []byte(`{"n":1}`), []byte{1, 1, 0})
	f.Add("", "", int64(0), int64(-1), false, []byte(nil), []byte(nil), []byte{1, 0, 0x80})
	f.Add("x", "y", int64(1<<40), int64(1<<31), false, []byte("{}"), []byte{5, 0, 'a'}, []byte{1, 0, 5, 'a', 'b'})
	f.Fuzz(func(t *testing.T, id, parent string, seq, step int64, full bool, meta, state, junk []byte) {
		cp := &checkpoint.Checkpoint{ID: id, ParentID: parent, Seq: seq, Step: int(step)}
		rec := appendRecord(nil, cp, full, meta, state)
		var rw stored.Row
		if err := parseRecord(rec, &rw); err != nil {
			t.Fatalf("parse a written record: %v", err)
		}
		if rw.ID != id || rw.Parent != parent || rw.Seq != seq || rw.Step != int64(int(step)) || rw.Full != full ||
			!bytes.Equal(rw.Meta, meta) || !bytes.Equal(rw.State, state) {
			t.Fatalf("record read back as %+v", rw)
		}
		for n := range len(rec) - len(state) {
			if err := parseRecord(rec[:n], &rw); err == nil {
				t.Fatalf("record cut to %d of %d bytes (before the state) parsed", n, len(rec))
			}
		}

		if err := parseRecord(junk, &rw); err == nil {
			if len(rw.State) > len(junk) || !bytes.HasSuffix(junk, rw.State) {
				t.Fatalf("state %q is not the end of the record %q", rw.State, junk)
			}
			if !bytes.Contains(junk, rw.Meta) || !bytes.Contains(junk, []byte(rw.ID)) {
				t.Fatalf("parsed fields not in the record: %+v", rw)
			}
		}
	})
}
