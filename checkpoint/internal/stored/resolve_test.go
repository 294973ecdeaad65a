package stored

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/loomkit/loom/checkpoint"
)

func TestMetaRoundTrip(t *testing.T) {
	cp := &checkpoint.Checkpoint{
		Next:      []string{"a", "b"},
		Interrupt: &checkpoint.Interrupt{ID: "i", Node: "n", Payload: json.RawMessage(`{"q":"ok?"}`)},
		Resumes:   []json.RawMessage{json.RawMessage(`1`), json.RawMessage(`"two"`)},
		Counters:  map[string]int{"loop": 3},
		Meta: checkpoint.Meta{Source: checkpoint.SourceResume, Node: "n", Run: "r", Duration: 1500 * time.Microsecond,
			From: "f", Created: time.Date(2025, 1, 2, 3, 4, 5, 6, time.FixedZone("Y", -3600))},
	}
	meta, err := EncodeMeta(cp)
	if err != nil {
		t.Fatal(err)
	}
	r := &Resolver{Thread: "t"}
	if err := r.Add(&Row{ID: "x", Full: true, State: []byte(`{}`), Meta: meta, Keep: true}); err != nil {
		t.Fatal(err)
	}
	got := r.Out[0]
	if !slicesEqual(got.Next, cp.Next) || got.Interrupt == nil ||
		string(got.Interrupt.Payload) != `{"q":"ok?"}` || len(got.Resumes) != 2 || string(got.Resumes[1]) != `"two"` ||
		got.Counters["loop"] != 3 || got.Meta.Source != cp.Meta.Source || got.Meta.Duration != cp.Meta.Duration ||
		!got.Meta.Created.Equal(cp.Meta.Created) || got.Meta.From != "f" || got.Meta.Run != "r" {
		t.Errorf("meta round trip: got %+v, want %+v", got, cp)
	}
}

func slicesEqual(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

// TestPatchInPlace checks patchInPlace against Patch over random
// chains, with and without spare capacity.
func TestPatchInPlace(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	randBytes := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + r.IntN(4))
		}
		return b
	}
	for range 300 {
		cur := randBytes(r.IntN(200))
		buf := append(make([]byte, 0, len(cur)+r.IntN(100)), cur...)
		for range 20 {
			lo := r.IntN(len(cur) + 1)
			hi := lo + r.IntN(len(cur)-lo+1)
			next := append(append(append([]byte{}, cur[:lo]...), randBytes(r.IntN(30))...), cur[hi:]...)
			d := Diff(cur, next)
			var err error
			if buf, err = patchInPlace(buf, d); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf, next) {
				t.Fatalf("patchInPlace gave %q, want %q", buf, next)
			}
			cur = next
		}
	}
	for _, d := range [][]byte{nil, {0x80}, {5, 0}, {0, 5}, {2, 2}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0}} {
		if _, err := patchInPlace([]byte("abc"), d); !errors.Is(err, checkpoint.ErrCorrupt) {
			t.Errorf("delta %x: got %v, want checkpoint.ErrCorrupt", d, err)
		}
	}
}

// FuzzDecode feeds a row with arbitrary state and meta, full or a delta,
// after a good full row: decoding never panics, an error wraps checkpoint.ErrCorrupt
// and names the thread and the row, and a success gives the state the row
// describes.
func FuzzDecode(f *testing.F) {
	good, err := EncodeMeta(&checkpoint.Checkpoint{Next: []string{"n"}, Meta: checkpoint.Meta{Source: checkpoint.SourceStep}})
	if err != nil {
		f.Fatal(err)
	}
	base := []byte(`{"messages":["hello","world"]}`)
	f.Add(false, false, Diff(base, []byte(`{"messages":["hello","world","!"]}`)), good)
	f.Add(true, true, []byte(`{"x":1}`), []byte(`{"next":["a"],"interrupt":{"id":"i","payload":{"a":[1]}},"meta":{"created":"2025-01-01T00:00:00Z"}}`))
	f.Add(false, true, []byte{0xff, 0x01}, []byte(`{"meta":{"created":"yesterday"}}`))
	f.Add(false, false, []byte{}, []byte(`{"counters":{"a":"b"}}`))
	f.Add(true, false, []byte(nil), []byte(`null`))
	f.Fuzz(func(t *testing.T, full, keepBase bool, state, meta []byte) {
		const thread, id = "fuzz-thread", "fuzz-row-id"
		r := &Resolver{Thread: thread}
		if err := r.Add(&Row{Seq: 0, ID: "base", Full: true, State: bytes.Clone(base), Meta: good, Keep: keepBase}); err != nil {
			t.Fatalf("good row: %v", err)
		}
		err := r.Add(&Row{Seq: 1, ID: id, Parent: "base", Step: 1, Full: full, State: state, Meta: meta, Keep: true})
		if err != nil {
			if !errors.Is(err, checkpoint.ErrCorrupt) {
				t.Fatalf("error %v does not wrap checkpoint.ErrCorrupt", err)
			}
			if msg := err.Error(); !strings.Contains(msg, thread) || !strings.Contains(msg, id) {
				t.Fatalf("error %q does not name %s/%s", msg, thread, id)
			}
			return
		}
		cp := r.Out[len(r.Out)-1]
		want := state
		if !full {
			want, err = Patch(base, state)
			if err != nil {
				t.Fatalf("decoded a delta that Patch refuses: %v", err)
			}
		}
		if !bytes.Equal(cp.State, want) {
			t.Fatalf("state %q, want %q", cp.State, want)
		}
		if keepBase && !bytes.Equal(r.Out[0].State, base) {
			t.Fatalf("the earlier checkpoint's state changed to %q", r.Out[0].State)
		}
		if cp.Thread != thread || cp.ID != id || cp.ParentID != "base" || cp.Seq != 1 || cp.Step != 1 {
			t.Fatalf("row fields lost: %+v", cp)
		}
	})
}
