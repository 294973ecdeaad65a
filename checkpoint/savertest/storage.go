package savertest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/loomkit/loom/checkpoint"
)

// Storage describes a backend whose storage outlives a saver (a file, a
// database, a key prefix), for RunStorage.
type Storage struct {
	// New makes empty storage and returns its name: a file path, a
	// database URL, a key prefix. It registers any cleanup with t.
	New func(t *testing.T) string
	// Open returns a saver on the storage named loc. It is called more
	// than once with the same loc; it registers the saver's cleanup with
	// t, so a saver's Close, which the suite may call first, must be safe
	// to call twice.
	Open func(t *testing.T, loc string) checkpoint.Saver
	// Rows reads how each checkpoint of thread is stored at loc, oldest
	// first.
	Rows func(t *testing.T, loc, thread string) []Row
	// Dump returns every byte stored at loc as it would be found there (a
	// file and its logs, every row, every record), for RunSealed.
	Dump func(t *testing.T, loc string) []byte
}

// Row is how a backend stored one checkpoint: its whole state or a delta
// (see stored.Diff), and the stored state's size in bytes.
type Row struct {
	Full bool
	Size int
}

// RunStorage checks what a stored backend adds to Run: the storage
// outlives a saver, two savers on one storage behave as two processes
// would (each caching states for its deltas), a saver fails once closed,
// a put racing a delete leaves nothing, and chains are stored as deltas
// with a full state now and then.
func RunStorage(t *testing.T, st Storage) {
	t.Helper()
	t.Run("Reopen", func(t *testing.T) { testReopen(t, st) })
	t.Run("TwoInstances", func(t *testing.T) { testTwoInstances(t, st) })
	t.Run("TwoInstancesDeltas", func(t *testing.T) { testTwoInstancesDeltas(t, st) })
	t.Run("Closed", func(t *testing.T) { testClosed(t, st) })
	t.Run("PutRacesDelete", func(t *testing.T) { testPutRacesDelete(t, st) })
	t.Run("StoresDeltas", func(t *testing.T) { testStoresDeltas(t, st) })
}

// Appends puts n checkpoints on thread, each appending a message to a list
// of about 2 KB, and returns them oldest first: a chain that a backend
// storing deltas keeps as one full state and small deltas.
func Appends(t *testing.T, s checkpoint.Saver, thread string, n int) []*checkpoint.Checkpoint {
	t.Helper()
	var out []*checkpoint.Checkpoint
	var head *checkpoint.Checkpoint
	msgs := `"` + strings.Repeat("history ", 250) + `"`
	for i := range n {
		msgs += fmt.Sprintf(`,{"i":%d,"text":"message number %d"}`, i, i)
		cp := checkpoint.Next(thread, head, checkpoint.SourceStep)
		cp.State = []byte(`{"messages":[` + msgs + `]}`)
		cp.Next = []string{"agent"}
		put(t, s, cp)
		out = append(out, cp)
		head = cp
	}
	return out
}

// appended is cp's state with add appended to its list.
func appended(cp *checkpoint.Checkpoint, add string) []byte {
	return []byte(strings.TrimSuffix(string(cp.State), "]}") + add + "]}")
}

// wantStates checks that s holds exactly cps on thread, by id and in List,
// state for state.
func wantStates(t *testing.T, s checkpoint.Saver, thread string, cps ...*checkpoint.Checkpoint) {
	t.Helper()
	for _, cp := range cps {
		if got := get(t, s, thread, cp.ID); string(got.State) != string(cp.State) {
			t.Errorf("seq %d: state %q, want %q", cp.Seq, got.State, cp.State)
		}
	}
	got := list(t, s, thread, 0)
	if len(got) != len(cps) {
		t.Fatalf("list: %d checkpoints, want %d", len(got), len(cps))
	}
	for i, cp := range got {
		if want := cps[len(cps)-1-i]; cp.ID != want.ID || string(cp.State) != string(want.State) {
			t.Errorf("list [%d]: %s %q, want %s %q", i, cp.ID, cp.State, want.ID, want.State)
		}
	}
}

// testTwoInstancesDeltas has two savers on one storage write deltas
// against what each has cached, including a parent the other wrote, a
// stale parent and a thread the other deleted, and checks every state
// reads back exactly from a third saver.
func testTwoInstancesDeltas(t *testing.T, st Storage) {
	loc := st.New(t)
	a, b := st.Open(t, loc), st.Open(t, loc)
	ctx := t.Context()
	cps := Appends(t, a, "t", 3) // a caches cps[2]

	headB := get(t, b, "t", "") // b caches cps[2] from its read
	c3 := checkpoint.Next("t", headB, checkpoint.SourceStep)
	c3.State = appended(headB, `,"b3"`)
	put(t, b, c3)

	// a's cache still holds cps[2]; a delta against it is correct for a
	// child of cps[2], which is no longer the head.
	stale := checkpoint.Next("t", cps[2], checkpoint.SourceStep)
	stale.State = appended(cps[2], `,"stale"`)
	if err := a.Put(ctx, stale); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("stale put: got %v, want ErrConflict", err)
	}
	headA := get(t, a, "t", "")
	if headA.ID != c3.ID {
		t.Fatalf("a's head %s, want %s", headA.ID, c3.ID)
	}
	c4 := checkpoint.Next("t", headA, checkpoint.SourceStep)
	c4.State = appended(headA, `,"a4"`)
	put(t, a, c4)
	c4b := checkpoint.Next("t", c3, checkpoint.SourceStep)
	c4b.State = appended(c3, `,"b-stale"`)
	if err := b.Put(ctx, c4b); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("stale put from b: got %v, want ErrConflict", err)
	}

	// Both cross-instance writes went in as deltas, and read back exactly.
	stored := st.Rows(t, loc, "t")
	if len(stored) != 5 || stored[3].Full || stored[4].Full {
		t.Fatalf("want deltas at seq 3 (b on a's write) and 4 (a on b's write), got %+v", stored)
	}
	wantStates(t, st.Open(t, loc), "t", cps[0], cps[1], cps[2], c3, c4)

	// b deletes the thread and starts it again; a's cached head is gone.
	if err := b.DeleteThread(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	n0 := checkpoint.Next("t", nil, checkpoint.SourceInput)
	n0.State = []byte(`{"messages":["new"]}`)
	put(t, b, n0)
	after := checkpoint.Next("t", c4, checkpoint.SourceStep)
	after.State = appended(c4, `,"after-delete"`)
	if err := a.Put(ctx, after); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("put after the other saver deleted the thread: got %v, want ErrConflict", err)
	}
	headA = get(t, a, "t", "")
	n1 := checkpoint.Next("t", headA, checkpoint.SourceStep)
	n1.State = appended(headA, `,"n1"`)
	put(t, a, n1)
	wantStates(t, st.Open(t, loc), "t", n0, n1)
}

// testClosed: a closed saver closes again without error and fails every
// call, never with ErrNotFound.
func testClosed(t *testing.T, st Storage) {
	s := st.Open(t, st.New(t))
	c, ok := s.(closer)
	if !ok {
		t.Skip("the saver has no Close method")
	}
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	if err := s.Put(t.Context(), checkpoint.Next("t", nil, checkpoint.SourceInput)); err == nil {
		t.Error("put after close: no error")
	}
	if _, err := s.Get(t.Context(), "t", ""); err == nil || errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("get after close: got %v, want an error other than ErrNotFound", err)
	}
}

// testPutRacesDelete puts a child of the head while another saver deletes
// the thread: whichever wins, the thread is left empty.
func testPutRacesDelete(t *testing.T, st Storage) {
	loc := st.New(t)
	a, b := st.Open(t, loc), st.Open(t, loc)
	ctx := t.Context()
	for i := range 30 {
		thread := fmt.Sprintf("race-%d", i)
		cps := Appends(t, a, thread, 3)
		child := checkpoint.Next(thread, cps[2], checkpoint.SourceStep)
		child.State = []byte(`{"child":true}`)
		var putErr, delErr error
		var wg sync.WaitGroup
		wg.Go(func() { putErr = a.Put(ctx, child) })
		wg.Go(func() { delErr = b.DeleteThread(ctx, thread) })
		wg.Wait()
		if delErr != nil {
			t.Fatalf("round %d: delete: %v", i, delErr)
		}
		if putErr != nil && !errors.Is(putErr, checkpoint.ErrConflict) {
			t.Fatalf("round %d: put: %v", i, putErr)
		}
		if got := list(t, b, thread, 0); len(got) != 0 {
			t.Fatalf("round %d: %d checkpoints left after delete (put error %v), want none", i, len(got), putErr)
		}
	}
}

// testStoresDeltas: a chain of appends is stored as one full state and
// deltas the size of the appends, and a long chain gets a full state at
// least every 64 rows.
func testStoresDeltas(t *testing.T, st Storage) {
	loc := st.New(t)
	s := st.Open(t, loc)
	cps := Appends(t, s, "d", 10)
	got := st.Rows(t, loc, "d")
	if len(got) != 10 {
		t.Fatalf("%d rows, want 10", len(got))
	}
	if !got[0].Full || got[0].Size != len(cps[0].State) {
		t.Errorf("first row: %+v; want the full %d-byte state", got[0], len(cps[0].State))
	}
	for i, r := range got[1:] {
		if r.Full || r.Size > 60 {
			t.Errorf("row %d: %+v; want a delta of at most 60 bytes", i+1, r)
		}
	}

	Appends(t, s, "long", 200)
	run, fulls := 0, 0
	for i, r := range st.Rows(t, loc, "long") {
		if r.Full {
			fulls++
			run = 0
			continue
		}
		if run++; run > 64 {
			t.Fatalf("row %d: %d deltas in a row, want a full state at least every 64", i, run)
		}
	}
	if fulls < 3 {
		t.Errorf("%d full rows in 200, want at least 3", fulls)
	}
}

// Corruption breaks a stored chain of five checkpoints (made by Appends)
// and says what reads must report afterwards.
type Corruption struct {
	Name string
	// Break damages what is stored at loc for thread.
	Break func(t *testing.T, loc, thread string)
	// Bad is the seq of the checkpoint every error must name. When the
	// damage leaves no id to name, Bad is -1 and Names is what the errors
	// say instead (such as "seq 2").
	Bad   int
	Names string
	// ReadOK are the seqs that must still read, state intact.
	ReadOK []int
}

// RunCorruptions breaks stored chains as cs say and checks, from a fresh
// saver so that nothing comes from a cache, that every read needing a
// broken row fails with checkpoint.ErrCorrupt naming the thread and the
// checkpoint, while reads that do not need it still work.
func RunCorruptions(t *testing.T, st Storage, cs []Corruption) {
	t.Helper()
	loc := st.New(t)
	s := st.Open(t, loc)
	for _, c := range cs {
		t.Run(c.Name, func(t *testing.T) {
			thread := "broken thread " + c.Name
			cps := Appends(t, s, thread, 5)
			if r := st.Rows(t, loc, thread); !r[0].Full || r[1].Full || r[4].Full {
				t.Fatalf("want a full row followed by deltas, got %+v", r)
			}
			c.Break(t, loc, thread)

			r := st.Open(t, loc)
			want := c.Names
			if c.Bad >= 0 {
				want = cps[c.Bad].ID
			}
			check := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, checkpoint.ErrCorrupt) {
					t.Errorf("%s: got %v, want ErrCorrupt", what, err)
					return
				}
				if msg := err.Error(); !strings.Contains(msg, thread) || !strings.Contains(msg, want) {
					t.Errorf("%s: error %q does not name %s and %s", what, msg, thread, want)
				}
			}
			_, err := r.Get(t.Context(), thread, "")
			check("get head", err)
			_, err = r.Get(t.Context(), thread, cps[4].ID)
			check("get by id", err)
			_, err = r.List(t.Context(), thread, 0)
			check("list", err)
			_, err = r.List(t.Context(), thread, 1)
			check("list 1", err)
			for _, seq := range c.ReadOK {
				got, err := r.Get(t.Context(), thread, cps[seq].ID)
				if err != nil {
					t.Errorf("get seq %d: %v", seq, err)
				} else if string(got.State) != string(cps[seq].State) {
					t.Errorf("get seq %d: wrong state", seq)
				}
			}
		})
	}
}
