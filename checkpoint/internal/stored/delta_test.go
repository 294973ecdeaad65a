package stored_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/checkpoint/internal/stored"
)

func TestDiffPatch(t *testing.T) {
	long := strings.Repeat(`{"role":"user","text":"hello"},`, 40)
	for _, tc := range []struct {
		name     string
		prev     string
		next     string
		maxDelta int // the delta may be at most this long
	}{
		{"append", `[1,2,3]`, `[1,2,3,4]`, 4},
		{"append to long", "[" + long + "1]", "[" + long + "1,2]", 2 + 2 + 2},
		{"prepend", `[1,2,3]`, `[0,1,2,3]`, 4},
		{"middle edit", `{"a":1,"b":2,"c":3}`, `{"a":1,"b":7,"c":3}`, 3},
		{"middle insert", `{"a":1,"c":3}`, `{"a":1,"b":2,"c":3}`, 8},
		{"middle delete", `{"a":1,"b":2,"c":3}`, `{"a":1,"c":3}`, 2},
		{"edit near start of long", `{"n":1,"m":[` + long + `]}`, `{"n":2,"m":[` + long + `]}`, 3 + 1},
		{"identical", `{"a":1}`, `{"a":1}`, 2},
		{"identical long", long, long, 2 + 2},
		{"both empty", ``, ``, 2},
		{"from empty", ``, `{"a":1}`, 2 + 7},
		{"to empty", `{"a":1}`, ``, 2},
		{"replace all", `abc`, `xyz`, 2 + 3},
		{"repeated bytes grow", `aaaa`, `aaaaaa`, 2 + 2},
		{"repeated bytes shrink", `aaaaaa`, `aaaa`, 2},
		{"nil to nil", "", "", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := stored.Diff([]byte(tc.prev), []byte(tc.next))
			if len(d) > tc.maxDelta {
				t.Errorf("delta is %d bytes, want at most %d", len(d), tc.maxDelta)
			}
			got, err := stored.Patch([]byte(tc.prev), d)
			if err != nil {
				t.Fatalf("patch: %v", err)
			}
			if string(got) != tc.next {
				t.Errorf("patch gave %q, want %q", got, tc.next)
			}
		})
	}
}

func TestPatchCorrupt(t *testing.T) {
	uv := func(xs ...uint64) []byte {
		var b []byte
		for _, x := range xs {
			b = binary.AppendUvarint(b, x)
		}
		return b
	}
	for _, tc := range []struct {
		name  string
		prev  string
		delta []byte
	}{
		{"empty delta", "abc", nil},
		{"prefix only", "abc", uv(1)},
		{"truncated varint", "abc", []byte{0x80}},
		{"overlong varint", "abc", bytes.Repeat([]byte{0xff}, 11)},
		{"prefix past base", "abc", uv(4, 0)},
		{"suffix past base", "abc", uv(0, 4)},
		{"prefix and suffix overlap", "abc", uv(2, 2)},
		{"huge prefix", "abc", uv(1<<63, 0)},
		{"huge suffix", "abc", uv(1, 1<<64-1)},
		{"delta for a longer base", "", uv(1, 0, 'x')},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := stored.Patch([]byte(tc.prev), tc.delta)
			if !errors.Is(err, checkpoint.ErrCorrupt) {
				t.Errorf("got %q, %v; want ErrCorrupt", got, err)
			}
		})
	}
}

// TestDiffPatchRandom checks Patch(a, Diff(a, b)) == b over random pairs,
// many of them related the way successive states are.
func TestDiffPatchRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	randBytes := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = "ab{}[],\"x"[r.IntN(9)] // a small alphabet makes long common runs likely
		}
		return b
	}
	for i := range 5000 {
		a := randBytes(r.IntN(300))
		var b []byte
		switch i % 4 {
		case 0: // unrelated
			b = randBytes(r.IntN(300))
		case 1: // splice: replace a random range with random bytes
			lo := r.IntN(len(a) + 1)
			hi := lo + r.IntN(len(a)-lo+1)
			b = append(append(append([]byte{}, a[:lo]...), randBytes(r.IntN(20))...), a[hi:]...)
		case 2: // two edits far apart
			b = bytes.Clone(a)
			for range 2 {
				if len(b) > 0 {
					b[r.IntN(len(b))] = 'Z'
				}
			}
		case 3: // grow at the end or the start
			if r.IntN(2) == 0 {
				b = append(bytes.Clone(a), randBytes(r.IntN(100))...)
			} else {
				b = append(randBytes(r.IntN(100)), a...)
			}
		}
		d := stored.Diff(a, b)
		got, err := stored.Patch(a, d)
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("case %d: Patch(a, Diff(a, b)) = %q, %v; want %q (a = %q)", i, got, err, b, a)
		}
		if i%4 == 1 && len(d) > 2*binary.MaxVarintLen64+20 {
			t.Fatalf("case %d: a splice of at most 20 bytes gave a %d-byte delta", i, len(d))
		}
	}
}

func FuzzPatch(f *testing.F) {
	f.Add([]byte(`[1,2,3]`), []byte(`[1,2,3,4]`), []byte{7, 0, ',', '4', ']'})
	f.Add([]byte(``), []byte(`x`), []byte{0x80})
	f.Add([]byte(`{"a":1}`), []byte(`{"a":2}`), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0})
	f.Fuzz(func(t *testing.T, a, b, delta []byte) {
		// Any delta: no panic, and an error is ErrCorrupt.
		if got, err := stored.Patch(a, delta); err != nil {
			if !errors.Is(err, checkpoint.ErrCorrupt) {
				t.Fatalf("Patch error %v does not wrap ErrCorrupt", err)
			}
		} else if len(got) > len(a)+len(delta) {
			t.Fatalf("Patch made %d bytes from a %d-byte base and a %d-byte delta", len(got), len(a), len(delta))
		}
		// A real delta: exact round trip.
		got, err := stored.Patch(a, stored.Diff(a, b))
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("Patch(a, Diff(a, b)) = %q, %v; want %q", got, err, b)
		}
	})
}

func TestDeltaCache(t *testing.T) {
	var c stored.DeltaCache
	s0 := []byte(`{"msgs":[` + strings.Repeat(`"hello",`, 100) + `"x"]}`)

	// Nothing cached: full state.
	blob, delta, chain := c.Encode("t", "p0", s0)
	if delta || !bytes.Equal(blob, s0) || chain != 0 {
		t.Fatalf("empty cache: got delta=%v chain=%d, want full state", delta, chain)
	}
	c.Remember("t", "id0", s0, 0)

	s1 := append(bytes.Clone(s0[:len(s0)-2]), `,"y"]}`...)
	if _, delta, _ := c.Encode("t", "other", s1); delta {
		t.Error("parent not cached: got a delta")
	}
	if _, delta, _ := c.Encode("u", "id0", s1); delta {
		t.Error("other thread: got a delta")
	}
	if _, delta, _ := c.Encode("t", "", s1); delta {
		t.Error("no parent: got a delta")
	}
	blob, delta, chain = c.Encode("t", "id0", s1)
	if !delta {
		t.Fatal("cached parent: got the full state")
	}
	if got, err := stored.Patch(s0, blob); err != nil || !bytes.Equal(got, s1) {
		t.Fatalf("delta does not give the state: %q, %v", got, err)
	}
	if want := stored.ChainCost(blob, len(s1)); chain != want {
		t.Errorf("chain %d, want %d", chain, want)
	}

	// Deltas stop after about 64 in a row however small they are, and a
	// full state restarts the chain.
	prev, id, n, fulls := s0, "id0", 0, 0
	for i := range 200 {
		next := bytes.Clone(prev)
		next[len(next)/2] = byte('a' + i%26)
		blob, delta, chain := c.Encode("t", id, next)
		if delta {
			n++
			if n > 64 {
				t.Fatalf("%d deltas in a row", n)
			}
		} else {
			n, fulls = 0, fulls+1
		}
		id = string(rune('A' + i))
		c.Remember("t", id, next, chain)
		_ = blob
		prev = next
	}
	if fulls < 2 || fulls > 5 {
		t.Errorf("%d full states in 200 one-byte edits, want about 200/64", fulls)
	}

	c.Forget("t")
	if _, delta, _ := c.Encode("t", id, prev); delta {
		t.Error("after Forget: got a delta")
	}
}

// TestDeltaCacheBounded checks the cache drops other threads' states past
// its size limit but keeps the one just remembered.
func TestDeltaCacheBounded(t *testing.T) {
	var c stored.DeltaCache
	big := make([]byte, 8<<20)
	big[0] = '"'
	for i := range 20 {
		c.Remember(string(rune('a'+i)), "id", big, 0)
	}
	kept := 0
	for i := range 20 {
		if _, delta, _ := c.Encode(string(rune('a'+i)), "id", big); delta {
			kept++
		}
	}
	if kept == 0 || kept > 8 {
		t.Errorf("%d of 20 8-MiB states cached, want between 1 and 8", kept)
	}
	if _, delta, _ := c.Encode("never", "id", big); delta {
		t.Error("thread never remembered: got a delta")
	}
	if _, delta, _ := c.Encode(string(rune('a'+19)), "id", big); !delta {
		t.Error("last remembered thread was dropped")
	}
}
