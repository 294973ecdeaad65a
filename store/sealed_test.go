package store_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/seal"
)

// TestSealedKeepsDeltas: a saver that store.Open returns, wrapped in
// checkpoint.Sealed, stores a growing conversation as sealed deltas on
// both dialects: far less than a sealed whole state a checkpoint, with
// no word of it in the clear, and every checkpoint reads back whole.
func TestSealedKeepsDeltas(t *testing.T) {
	keys, err := seal.NewKeyring(seal.Key{ID: "k1", Secret: bytes.Repeat([]byte{7}, seal.KeySize)})
	if err != nil {
		t.Fatal(err)
	}
	table := map[string]string{"sqlite": "checkpoints", "postgres": "loom_checkpoints"}
	for name, db := range dbs(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := checkpoint.Sealed(db.Saver(), keys)
			thread := "sealed-" + name
			var head *checkpoint.Checkpoint
			var msgs []string
			const steps = 40
			for i := range steps {
				msgs = append(msgs, fmt.Sprintf("%q", fmt.Sprintf("secret-word message %03d %s", i, strings.Repeat("x", 150))))
				cp := checkpoint.Next(thread, head, checkpoint.SourceStep)
				cp.State = []byte(`{"messages":[` + strings.Join(msgs, ",") + `]}`)
				if err := s.Put(ctx, cp); err != nil {
					t.Fatal(err)
				}
				head = cp
			}
			q := db.Dialect().Rebind(fmt.Sprintf(`SELECT state FROM %s WHERE thread = ?`, table[name]))
			rows, err := db.SQL().QueryContext(ctx, q, thread)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var stored, n int
			for rows.Next() {
				var b []byte
				if err := rows.Scan(&b); err != nil {
					t.Fatal(err)
				}
				if bytes.Contains(b, []byte("secret-word")) {
					t.Fatalf("a stored state holds the conversation in the clear")
				}
				stored += len(b)
				n++
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			// Whole sealed states would take at least the last state's
			// size for each of the last half of the steps.
			whole := len(head.State) * steps / 2
			if n != steps || stored >= whole/2 {
				t.Errorf("%d rows of %d bytes in all; whole sealed states would take over %d: not stored as deltas", n, stored, whole)
			}
			got, err := s.Get(ctx, thread, "")
			if err != nil || string(got.State) != string(head.State) {
				t.Fatalf("head: %v", err)
			}
		})
	}
}
