package checkpoint_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/checkpoint/savertest"
	"github.com/loomkit/loom/checkpoint/sqlite"
	"github.com/loomkit/loom/seal"
	"github.com/loomkit/loom/seal/sealtest"
)

// The sealed saver passes the conformance suite over the memory saver
// and over SQLite.
func TestSealedSaver(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		savertest.Run(t, func(t *testing.T) checkpoint.Saver {
			return checkpoint.Sealed(checkpoint.NewMemory(), sealtest.Keys(t, "k1"))
		})
	})
	t.Run("sqlite", func(t *testing.T) {
		savertest.Run(t, func(t *testing.T) checkpoint.Saver {
			s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cp.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return checkpoint.Sealed(s, sealtest.Keys(t, "k1"))
		})
	})
}

const secret = "the launch code is 0451"

// secretCheckpoint has the secret in its state, its questions' payloads
// and defaults, its resumes, its branches' answers and a finished
// branch's result.
func secretCheckpoint(thread string, head *checkpoint.Checkpoint) *checkpoint.Checkpoint {
	cp := checkpoint.Next(thread, head, checkpoint.SourceStep)
	q := fmt.Sprintf(`{"text":%q}`, secret)
	cp.State = json.RawMessage(`{"note":` + fmt.Sprintf("%q", secret) + `}`)
	cp.Next = []string{"confirm"}
	cp.SetPending([]checkpoint.Interrupt{
		{ID: "a", Node: "confirm", Payload: json.RawMessage(q), Branch: "confirm[0]"},
		{ID: "b", Node: "confirm", Payload: json.RawMessage(`{}`), Default: json.RawMessage(q), Deadline: time.Now().Add(time.Hour), Branch: "confirm[1]"},
	})
	cp.Resumes = []json.RawMessage{json.RawMessage(q)}
	cp.Answers = map[string][]json.RawMessage{"confirm[0]": {json.RawMessage(q)}}
	cp.Done = map[string]json.RawMessage{"confirm[2]": json.RawMessage(q)}
	cp.Counters = map[string]int{"fix->check": 2}
	cp.Meta.Node = "draft"
	return cp
}

func TestSealedHidesUserData(t *testing.T) {
	ctx := context.Background()
	inner := checkpoint.NewMemory()
	s := checkpoint.Sealed(inner, sealtest.Keys(t, "k1"))
	cp := secretCheckpoint("t1", nil)
	if err := s.Put(ctx, cp); err != nil {
		t.Fatal(err)
	}
	stored, err := inner.Get(ctx, "t1", "")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(stored)
	if bytes.Contains(raw, []byte("0451")) {
		t.Fatalf("the saver underneath holds the secret: %s", raw)
	}
	if !seal.IsSealed(stored.State) || stored.Interrupt != nil || stored.Resumes != nil || stored.Answers != nil || stored.Done != nil {
		t.Fatalf("stored checkpoint keeps sealed fields in the clear: %s", raw)
	}
	// What the saver needs, and what lists and drawings show, stays clear.
	if stored.ID != cp.ID || stored.Seq != 0 || stored.Next[0] != "confirm" || stored.Counters["fix->check"] != 2 || stored.Meta.Node != "draft" {
		t.Fatalf("clear fields lost: %s", raw)
	}
	// The caller's checkpoint is left as it was.
	if !bytes.Contains(cp.State, []byte(secret)) || cp.Interrupt == nil {
		t.Fatal("Put changed the caller's checkpoint")
	}
	got, err := s.Get(ctx, "t1", "")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.State, cp.State) || len(got.Pending()) != 2 || string(got.Interrupts[1].Default) != string(cp.Interrupts[1].Default) ||
		!got.Interrupts[1].Deadline.Equal(cp.Interrupts[1].Deadline) || string(got.Resumes[0]) != string(cp.Resumes[0]) ||
		string(got.Answers["confirm[0]"][0]) != string(cp.Answers["confirm[0]"][0]) || string(got.Done["confirm[2]"]) != string(cp.Done["confirm[2]"]) {
		t.Fatalf("round trip lost data: got %+v", got)
	}
}

func TestSealedRotation(t *testing.T) {
	ctx := context.Background()
	inner := checkpoint.NewMemory()
	first := secretCheckpoint("t1", nil)
	if err := checkpoint.Sealed(inner, sealtest.Keys(t, "k1")).Put(ctx, first); err != nil {
		t.Fatal(err)
	}
	rotated := checkpoint.Sealed(inner, sealtest.Keys(t, "k2", "k1"))
	got, err := rotated.Get(ctx, "t1", "")
	if err != nil {
		t.Fatalf("keys k2,k1 read a k1 checkpoint: %v", err)
	}
	if !bytes.Equal(got.State, first.State) {
		t.Fatalf("state %s, want %s", got.State, first.State)
	}
	second := secretCheckpoint("t1", got)
	if err := rotated.Put(ctx, second); err != nil {
		t.Fatal(err)
	}
	stored, _ := inner.Get(ctx, "t1", "")
	if !bytes.HasPrefix(stored.State, []byte(`"sealed:aes256gcm:k2:`)) {
		t.Fatalf("new write sealed with %.25s…, want k2", stored.State)
	}
	// Without k1 the old checkpoint is an error naming the key; the new one reads.
	k2only := checkpoint.Sealed(inner, sealtest.Keys(t, "k2"))
	if _, err := k2only.Get(ctx, "t1", first.ID); !errors.Is(err, seal.ErrUnknownKey) || !strings.Contains(err.Error(), `"k1"`) {
		t.Fatalf("reading a k1 checkpoint with k2 alone: %v, want ErrUnknownKey naming k1", err)
	}
	if _, err := k2only.List(ctx, "t1", 0); !errors.Is(err, seal.ErrUnknownKey) {
		t.Fatalf("listing a history with a k1 checkpoint with k2 alone: %v, want ErrUnknownKey", err)
	}
	if _, err := k2only.Get(ctx, "t1", ""); err != nil {
		t.Fatalf("reading the k2 head with k2 alone: %v", err)
	}
}

// tamperer is a saver whose stored states can be changed in place.
type tamperer struct {
	checkpoint.Saver
	change func(state []byte) []byte
}

func (t tamperer) Get(ctx context.Context, thread, id string) (*checkpoint.Checkpoint, error) {
	cp, err := t.Saver.Get(ctx, thread, id)
	if err == nil {
		cp.State = t.change(bytes.Clone(cp.State))
	}
	return cp, err
}

func TestSealedTampered(t *testing.T) {
	ctx := context.Background()
	keys := sealtest.Keys(t, "k1")
	for name, change := range map[string]func([]byte) []byte{
		"a ciphertext byte": func(b []byte) []byte {
			i := len(b) / 2
			b[i] ^= 'A' ^ 'B'
			if b[i] == '"' || b[i] == ':' {
				b[i] = 'C'
			}
			return b
		},
		"cut short": func(b []byte) []byte { return append(b[:len(b)-10], '"') },
	} {
		inner := checkpoint.NewMemory()
		if err := checkpoint.Sealed(inner, keys).Put(ctx, secretCheckpoint("t1", nil)); err != nil {
			t.Fatal(err)
		}
		_, err := checkpoint.Sealed(tamperer{inner, change}, keys).Get(ctx, "t1", "")
		if !errors.Is(err, seal.ErrTampered) {
			t.Errorf("%s: got %v, want ErrTampered", name, err)
		}
	}
}

// Checkpoints written before sealing was turned on read as they were;
// the next one written is sealed.
func TestSealedReadsClearHistory(t *testing.T) {
	ctx := context.Background()
	inner := checkpoint.NewMemory()
	old := secretCheckpoint("t1", nil)
	if err := inner.Put(ctx, old); err != nil {
		t.Fatal(err)
	}
	s := checkpoint.Sealed(inner, sealtest.Keys(t, "k1"))
	got, err := s.Get(ctx, "t1", "")
	if err != nil || !bytes.Equal(got.State, old.State) || got.Interrupt == nil || got.Interrupt.ID != "a" {
		t.Fatalf("clear checkpoint read as %+v, %v", got, err)
	}
	if err := s.Put(ctx, secretCheckpoint("t1", got)); err != nil {
		t.Fatal(err)
	}
	stored, _ := inner.Get(ctx, "t1", "")
	if !seal.IsSealed(stored.State) {
		t.Fatal("the checkpoint written after sealing was turned on is in the clear")
	}
	if cps, err := s.List(ctx, "t1", 0); err != nil || len(cps) != 2 || !bytes.Equal(cps[0].State, cps[1].State) {
		t.Fatalf("history of a clear and a sealed checkpoint: %v, %v", cps, err)
	}
}

// BenchmarkSealedPut is savertest.BenchPut on the memory saver, in the
// clear and sealed: the difference is the seal's cost per checkpoint.
// The large case puts a 64 KiB state with questions and answers.
func BenchmarkSealedPut(b *testing.B) {
	b.Run("clear", func(b *testing.B) { savertest.BenchPut(b, checkpoint.NewMemory()) })
	b.Run("sealed", func(b *testing.B) {
		savertest.BenchPut(b, checkpoint.Sealed(checkpoint.NewMemory(), sealtest.Keys(b, "k1")))
	})
	big := func(b *testing.B, s checkpoint.Saver) {
		ctx := context.Background()
		state := json.RawMessage(`{"messages":["` + strings.Repeat("word ", 64<<10/5) + `"]}`)
		var head *checkpoint.Checkpoint
		b.SetBytes(int64(len(state)))
		b.ReportAllocs()
		for b.Loop() {
			cp := secretCheckpoint("bench", head)
			cp.State = state
			if err := s.Put(ctx, cp); err != nil {
				b.Fatal(err)
			}
			head = cp
		}
	}
	b.Run("clear-64KiB", func(b *testing.B) { big(b, checkpoint.NewMemory()) })
	b.Run("sealed-64KiB", func(b *testing.B) { big(b, checkpoint.Sealed(checkpoint.NewMemory(), sealtest.Keys(b, "k1"))) })
}

// BenchmarkSealedGet reads the head back: the open's cost.
func BenchmarkSealedGet(b *testing.B) {
	b.Run("clear", func(b *testing.B) { savertest.BenchGetHead(b, checkpoint.NewMemory()) })
	b.Run("sealed", func(b *testing.B) {
		savertest.BenchGetHead(b, checkpoint.Sealed(checkpoint.NewMemory(), sealtest.Keys(b, "k1")))
	})
}

// BenchmarkSealedSQLiteStorage puts conversations of 100 steps, each
// step adding a 200-byte message, on SQLite, in the clear and sealed,
// and reports the state bytes stored per checkpoint: sealed, the saver
// stores sealed deltas, each about a third larger than in the clear
// (base64) plus the nonce, tag and key's name.
func BenchmarkSealedSQLiteStorage(b *testing.B) {
	const steps = 100
	for _, sealed := range []bool{false, true} {
		b.Run(fmt.Sprintf("sealed=%v", sealed), func(b *testing.B) {
			ctx := context.Background()
			raw, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "cp.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer raw.Close()
			var s checkpoint.Saver = raw
			if sealed {
				s = checkpoint.Sealed(raw, sealtest.Keys(b, "k1"))
			}
			thread := ""
			for b.Loop() {
				thread = checkpoint.NewID()
				var head *checkpoint.Checkpoint
				var msgs []string
				for n := range steps {
					msgs = append(msgs, fmt.Sprintf("message %3d: %s", n, strings.Repeat("words ", 31)))
					cp := checkpoint.Next(thread, head, checkpoint.SourceStep)
					cp.State, _ = json.Marshal(map[string]any{"messages": msgs})
					if err := s.Put(ctx, cp); err != nil {
						b.Fatal(err)
					}
					head = cp
				}
			}
			var stored int64
			if err := raw.DB().QueryRow(`SELECT sum(length(state)) FROM checkpoints WHERE thread = ?`, thread).Scan(&stored); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(stored)/steps, "state-B/checkpoint")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkSealedSQLite is savertest.BenchPut and BenchGetHead on SQLite,
// in the clear and sealed: what sealing costs a put (sealing the delta)
// and a read of the head.
func BenchmarkSealedSQLite(b *testing.B) {
	for _, op := range []string{"put", "get"} {
		for _, sealed := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/sealed=%v", op, sealed), func(b *testing.B) {
				raw, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "cp.db"))
				if err != nil {
					b.Fatal(err)
				}
				defer raw.Close()
				var s checkpoint.Saver = raw
				if sealed {
					s = checkpoint.Sealed(raw, sealtest.Keys(b, "k1"))
				}
				if op == "put" {
					savertest.BenchPut(b, s)
				} else {
					savertest.BenchGetHead(b, s)
				}
			})
		}
	}
}

// A sealed delta changed in the database fails to open (ErrTampered); a
// delta in the clear put in its place is ErrCorrupt, never applied.
func TestSealedSQLiteTamperedDelta(t *testing.T) {
	ctx := context.Background()
	keys := sealtest.Keys(t, "k1")
	for name, c := range map[string]struct {
		update string
		want   error
	}{
		"a byte of a sealed delta": {`UPDATE checkpoints SET state = CAST(substr(state, 1, 40) || 'A' || substr(state, 42) AS BLOB) WHERE seq = 2 AND substr(state, 41, 1) <> 'A'`, seal.ErrTampered},
		"a sealed delta cut short": {`UPDATE checkpoints SET state = CAST(substr(state, 1, length(state) - 9) || '"' AS BLOB) WHERE seq = 2`, seal.ErrTampered},
		"a delta in the clear":     {`UPDATE checkpoints SET state = CAST(x'0000' || '{"evil":1}' AS BLOB) WHERE seq = 2`, checkpoint.ErrCorrupt},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cp.db")
			raw, err := sqlite.Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			s := checkpoint.Sealed(raw, keys)
			var head *checkpoint.Checkpoint
			var cps []*checkpoint.Checkpoint
			for range 4 {
				cp := secretCheckpoint("t1", head)
				cp.State = json.RawMessage(fmt.Sprintf(`{"note":%q,"n":%d}`, strings.Repeat(secret+" ", 100), len(cps)))
				if err := s.Put(ctx, cp); err != nil {
					t.Fatal(err)
				}
				head, cps = cp, append(cps, cp)
			}
			var full bool
			if err := raw.DB().QueryRow(`SELECT full FROM checkpoints WHERE seq = 2`).Scan(&full); err != nil || full {
				t.Fatalf("seq 2 full %v, %v; want a delta", full, err)
			}
			res, err := raw.DB().Exec(c.update)
			if err != nil {
				t.Fatalf("update: %v", err)
			}
			if n, _ := res.RowsAffected(); n != 1 {
				t.Fatalf("update: %d rows, want 1", n)
			}
			cold, err := sqlite.Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer cold.Close()
			r := checkpoint.Sealed(cold, keys)
			for _, id := range []string{cps[2].ID, cps[3].ID, ""} {
				if _, err := r.Get(ctx, "t1", id); !errors.Is(err, c.want) {
					t.Errorf("get %q: %v, want %v", id, err, c.want)
				}
			}
			if got, err := r.Get(ctx, "t1", cps[1].ID); err != nil || !bytes.Equal(got.State, cps[1].State) {
				t.Errorf("get the checkpoint before the damaged one: %v", err)
			}
		})
	}
}
