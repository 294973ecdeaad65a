package savertest

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/seal"
	"github.com/loomkit/loom/seal/sealtest"
)

// RunSealed checks a backend that is a checkpoint.BlobSealer under
// checkpoint.Sealed: it passes Run; it stores a chain as a sealed full
// state and sealed deltas, with nothing of the states, questions or
// answers in the clear (st.Dump must be set); what was stored before
// (in the clear, or sealed whole by Sealed over a saver that did not
// seal its deltas) still reads, and what is written after it is stored
// as deltas; a delta sealed with a new key over a parent sealed with the
// old one reads with both keys and fails with the old key alone, naming
// it; a saver without keys fails on a sealed delta with an error naming
// seal.EnvKeys; and a trimmed history keeps its oldest state sealed.
func RunSealed(t *testing.T, st Storage) {
	t.Helper()
	if st.Dump == nil {
		t.Fatal("savertest.RunSealed needs Storage.Dump")
	}
	t.Run("Conformance", func(t *testing.T) {
		Run(t, func(t *testing.T) checkpoint.Saver {
			return checkpoint.Sealed(st.Open(t, st.New(t)), sealtest.Keys(t, "k1"))
		})
	})
	t.Run("Deltas", func(t *testing.T) { testSealedDeltas(t, st) })
	t.Run("OldStorage", func(t *testing.T) { testSealedOldStorage(t, st) })
	t.Run("Rotation", func(t *testing.T) { testSealedRotation(t, st) })
	t.Run("NoKeys", func(t *testing.T) { testSealedNoKeys(t, st) })
	t.Run("Trim", func(t *testing.T) { testSealedTrim(t, st) })
}

// sealedOpen opens a saver on loc and wraps it in Sealed with the
// keys ids, checking that the saver seals its own deltas.
func sealedOpen(t *testing.T, st Storage, loc string, ids ...string) checkpoint.Saver {
	t.Helper()
	s := st.Open(t, loc)
	if _, ok := s.(checkpoint.BlobSealer); !ok {
		t.Fatalf("%T is not a checkpoint.BlobSealer", s)
	}
	return checkpoint.Sealed(s, sealtest.Keys(t, ids...))
}

// noBlobs hides a saver's SealBlobs, so that Sealed seals whole states
// over it, as it did before savers sealed their deltas.
type noBlobs struct{ checkpoint.Saver }

func (n noBlobs) Close() error {
	if c, ok := n.Saver.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}

// history is the start of the conversations secretChain makes with long
// set: 8 KB, so that its deltas (a message, and the question and answer
// that change at every step) make many before a full state is due.
var history = `"` + strings.Repeat("history ", 1000) + `"`

// secretCheckpoint follows head on thread, appending a message with
// secret to a conversation (which starts with history when long is set)
// and asking a question that quotes it (its default too), with the
// answer to head's question.
func secretCheckpoint(thread string, head *checkpoint.Checkpoint, secret string, long bool) *checkpoint.Checkpoint {
	cp := checkpoint.Next(thread, head, checkpoint.SourceStep)
	msg := fmt.Sprintf(`{"i":%d,"text":"message %d says %s"}`, cp.Seq, cp.Seq, secret)
	switch {
	case head != nil:
		cp.State = appended(head, ","+msg)
	case long:
		cp.State = []byte(`{"messages":[` + history + `,` + msg + `]}`)
	default:
		cp.State = []byte(`{"messages":[` + msg + `]}`)
	}
	cp.Next = []string{"confirm"}
	q := json.RawMessage(fmt.Sprintf(`{"question":"keep %s? (%d)"}`, secret, cp.Seq))
	cp.SetPending([]checkpoint.Interrupt{{ID: fmt.Sprintf("q%d", cp.Seq), Node: "confirm", Payload: q,
		Default: q, Deadline: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}})
	if head != nil {
		cp.Resumes = []json.RawMessage{json.RawMessage(fmt.Sprintf(`"yes, %s"`, secret))}
	}
	return cp
}

// secretChain puts n checkpoints made by secretCheckpoint on thread after
// head, starting with history, and returns them oldest first.
func secretChain(t *testing.T, s checkpoint.Saver, thread string, head *checkpoint.Checkpoint, n int, secret string) []*checkpoint.Checkpoint {
	t.Helper()
	return chainOf(t, s, thread, head, n, secret, true)
}

// shortChain is secretChain without history: states of a few hundred
// bytes, which Sealed over a saver that did not seal its deltas stored
// as deltas of each other's sealed values.
func shortChain(t *testing.T, s checkpoint.Saver, thread string, head *checkpoint.Checkpoint, n int, secret string) []*checkpoint.Checkpoint {
	t.Helper()
	return chainOf(t, s, thread, head, n, secret, false)
}

func chainOf(t *testing.T, s checkpoint.Saver, thread string, head *checkpoint.Checkpoint, n int, secret string, long bool) []*checkpoint.Checkpoint {
	t.Helper()
	var out []*checkpoint.Checkpoint
	for range n {
		cp := secretCheckpoint(thread, head, secret, long)
		put(t, s, cp)
		out = append(out, cp)
		head = cp
	}
	return out
}

// wantAll checks that s reads every checkpoint of cps, which are all of
// thread's, field for field by id and in List.
func wantAll(t *testing.T, s checkpoint.Saver, thread string, cps ...*checkpoint.Checkpoint) {
	t.Helper()
	for _, cp := range cps {
		same(t, fmt.Sprintf("get seq %d", cp.Seq), cp, get(t, s, thread, cp.ID))
	}
	same(t, "get head", cps[len(cps)-1], get(t, s, thread, ""))
	wantHistory(t, s, thread, cps...)
}

func noLeak(t *testing.T, st Storage, loc string, secrets ...string) {
	t.Helper()
	dump := st.Dump(t, loc)
	for _, secret := range secrets {
		if bytes.Contains(dump, []byte(secret)) {
			t.Errorf("the storage holds %q in the clear", secret)
		}
	}
}

// testSealedDeltas: a sealed chain is a full row and small deltas, read
// back whole by a saver with a cold cache, with nothing in the clear;
// the same chain unsealed shows its secret, so the dump can see a leak.
func testSealedDeltas(t *testing.T, st Storage) {
	loc := st.New(t)
	cps := secretChain(t, sealedOpen(t, st, loc, "k1"), "t", nil, 12, "zebra-owl-6189")
	rows := st.Rows(t, loc, "t")
	if len(rows) != 12 || !rows[0].Full {
		t.Fatalf("rows %+v, want 12, the first full", rows)
	}
	for i, r := range rows[1:] {
		// A message, a question and an answer (about 300 bytes) sealed:
		// base64 of them, the nonce and the tag, and the key's name.
		if r.Full || r.Size > 600 {
			t.Errorf("row %d: %+v; want a sealed delta of at most 600 bytes", i+1, r)
		}
	}
	wantAll(t, sealedOpen(t, st, loc, "k1"), "t", cps...)
	noLeak(t, st, loc, "zebra-owl-6189")

	clear := st.New(t)
	secretChain(t, st.Open(t, clear), "t", nil, 2, "zebra-owl-6189")
	if !bytes.Contains(st.Dump(t, clear), []byte("zebra-owl-6189")) {
		t.Fatal("the dump of a clear chain does not show its secret: the test cannot see a leak")
	}
}

// sealV1 seals cp's state and hidden fields as Sealed did first: an
// envelope of version 1 (the state's length, the state, the hidden
// fields as JSON), sealed whole.
func sealV1(t *testing.T, c seal.Codec, cp *checkpoint.Checkpoint) *checkpoint.Checkpoint {
	t.Helper()
	hidden := checkpoint.Checkpoint{Interrupt: cp.Interrupt, Interrupts: cp.Interrupts, Resumes: cp.Resumes}
	rest, err := json.Marshal(&hidden)
	if err != nil {
		t.Fatal(err)
	}
	plain := append(binary.AppendUvarint([]byte{1}, uint64(len(cp.State))), cp.State...)
	out := *cp
	out.Interrupt, out.Interrupts, out.Resumes = nil, nil, nil
	if out.State, err = c.Seal(append(plain, rest...)); err != nil {
		t.Fatal(err)
	}
	return &out
}

// testSealedOldStorage: chains stored in the clear, sealed whole by
// Sealed over a saver that did not seal its deltas (small sealed states
// then stored as deltas of each other), and sealed whole in the first
// envelope's form, read with the saver sealing its deltas; what it adds
// to them is stored as deltas, and all of it reads from a cold saver.
func testSealedOldStorage(t *testing.T, st Storage) {
	loc := st.New(t)
	keys := sealtest.Keys(t, "k1")
	want := map[string][]*checkpoint.Checkpoint{}

	whole := checkpoint.Sealed(noBlobs{st.Open(t, loc)}, keys)
	want["whole"] = shortChain(t, whole, "whole", nil, 6, "old-sealed-4711")
	if rows := st.Rows(t, loc, "whole"); len(rows) != 6 || !rows[0].Full || rows[1].Full {
		t.Fatalf("whole sealed rows %+v; want a full row then sealed states stored as deltas of each other", rows)
	}
	want["clear"] = shortChain(t, st.Open(t, loc), "clear", nil, 6, "before-sealing")
	raw := st.Open(t, loc)
	var head *checkpoint.Checkpoint
	for range 3 {
		cp := secretCheckpoint("v1", head, "old-sealed-4711", false)
		put(t, raw, sealV1(t, keys, cp))
		want["v1"] = append(want["v1"], cp)
		head = cp
	}

	s := sealedOpen(t, st, loc, "k1")
	for thread, cps := range want {
		wantAll(t, s, thread, cps...)
		n := len(cps)
		want[thread] = append(cps, shortChain(t, s, thread, cps[n-1], 4, "new-sealed-2718")...)
		deltas := 0
		for _, r := range st.Rows(t, loc, thread)[n:] {
			if !r.Full {
				deltas++
			}
		}
		if deltas == 0 {
			t.Errorf("%s: the rows written after the old ones are all full, want deltas", thread)
		}
	}
	cold := sealedOpen(t, st, loc, "k1")
	for thread, cps := range want {
		wantAll(t, cold, thread, cps...)
	}
	noLeak(t, st, loc, "old-sealed-4711", "new-sealed-2718")
}

// testSealedRotation: deltas sealed with k2 over a full state sealed with
// k1 read with keys k2,k1; with k2 alone, or k1 alone, the reads that need
// the missing key fail naming it.
func testSealedRotation(t *testing.T, st Storage) {
	loc := st.New(t)
	first := secretChain(t, sealedOpen(t, st, loc, "k1"), "t", nil, 3, "rotate-1")
	rotated := sealedOpen(t, st, loc, "k2", "k1")
	get(t, rotated, "t", "") // as a run reads its head: the next put is a delta
	cps := append(first, secretChain(t, rotated, "t", first[2], 3, "rotate-2")...)
	if rows := st.Rows(t, loc, "t"); rows[3].Full || rows[5].Full {
		t.Fatalf("rows %+v; want the k2 checkpoints stored as deltas", rows)
	}
	wantAll(t, sealedOpen(t, st, loc, "k2", "k1"), "t", cps...)
	for _, c := range []struct{ have, missing string }{{"k2", "k1"}, {"k1", "k2"}} {
		s := sealedOpen(t, st, loc, c.have)
		_, err := s.Get(t.Context(), "t", "")
		if !errors.Is(err, seal.ErrUnknownKey) || !strings.Contains(err.Error(), `"`+c.missing+`"`) {
			t.Errorf("get head with %s alone: %v; want ErrUnknownKey naming %s", c.have, err, c.missing)
		}
		if _, err := s.List(t.Context(), "t", 0); !errors.Is(err, seal.ErrUnknownKey) {
			t.Errorf("list with %s alone: %v; want ErrUnknownKey", c.have, err)
		}
	}
	if got, err := sealedOpen(t, st, loc, "k1").Get(t.Context(), "t", cps[2].ID); err != nil || !bytes.Equal(got.State, cps[2].State) {
		t.Errorf("get a k1 checkpoint with k1 alone: %v", err)
	}
}

// testSealedNoKeys: a saver given no keys reads a sealed full state as
// the sealed value it is, and fails on a sealed delta with ErrCorrupt,
// saying that the state is sealed and naming seal.EnvKeys.
func testSealedNoKeys(t *testing.T, st Storage) {
	loc := st.New(t)
	cps := secretChain(t, sealedOpen(t, st, loc, "k1"), "t", nil, 3, "no-keys")
	s := st.Open(t, loc)
	if got := get(t, s, "t", cps[0].ID); !seal.IsSealed(got.State) {
		t.Errorf("full state read without keys: %.40q, want the sealed value", got.State)
	}
	_, err := s.Get(t.Context(), "t", "")
	if !errors.Is(err, checkpoint.ErrCorrupt) || !strings.Contains(err.Error(), "sealed") || !strings.Contains(err.Error(), seal.EnvKeys) {
		t.Errorf("sealed delta read without keys: %v; want ErrCorrupt saying it is sealed and naming %s", err, seal.EnvKeys)
	}
}

// testSealedTrim: the oldest checkpoint a trim keeps gets its full state,
// sealed, and the history left reads whole.
func testSealedTrim(t *testing.T, st Storage) {
	loc := st.New(t)
	s := sealedOpen(t, st, loc, "k1")
	cps := secretChain(t, s, "t", nil, 8, "trimmed")
	tr, ok := s.(interface {
		TrimHistory(ctx context.Context, thread string, keep int) (int, error)
	})
	if !ok {
		t.Fatalf("%T has no TrimHistory", s)
	}
	if n, err := tr.TrimHistory(t.Context(), "t", 3); err != nil || n != 5 {
		t.Fatalf("trim to 3: %d deleted, %v; want 5", n, err)
	}
	cold := sealedOpen(t, st, loc, "k1")
	wantAll(t, cold, "t", cps[5:]...)
	wantNotFound(t, cold, "t", cps[4].ID)
	noLeak(t, st, loc, "trimmed")
}
