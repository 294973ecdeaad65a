package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/checkpoint/savertest"
	"github.com/loomkit/loom/checkpoint/sqlite"
)

func open(t testing.TB, path string) *sqlite.Saver {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSaver(t *testing.T) {
	savertest.Run(t, func(t *testing.T) checkpoint.Saver {
		return open(t, filepath.Join(t.TempDir(), "cp.db"))
	})
}

func TestReopen(t *testing.T) {
	savertest.RunReopen(t, func(t *testing.T, path string) checkpoint.Saver {
		return open(t, path)
	})
}

func TestOpenBadPath(t *testing.T) {
	for _, path := range []string{"", "a?b", filepath.Join(t.TempDir(), "missing-dir", "cp.db")} {
		if s, err := sqlite.Open(t.Context(), path); err == nil {
			s.Close()
			t.Errorf("open %q: no error", path)
		}
	}
}

func TestClosed(t *testing.T) {
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "cp.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	if err := s.Put(t.Context(), checkpoint.Next("t", nil, checkpoint.SourceInput)); err == nil {
		t.Error("put after close: no error")
	}
	if _, err := s.Get(t.Context(), "t", ""); err == nil || errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("get after close: got %v, want an error other than ErrNotFound", err)
	}
}

// chainOf puts n checkpoints on thread, each appending a message to a list
// of about 2 KB, and returns them oldest first.
func chainOf(t *testing.T, s checkpoint.Saver, thread string, n int) []*checkpoint.Checkpoint {
	t.Helper()
	var out []*checkpoint.Checkpoint
	var head *checkpoint.Checkpoint
	msgs := `"` + strings.Repeat("history ", 250) + `"`
	for i := range n {
		msgs += fmt.Sprintf(`,{"i":%d,"text":"message number %d"}`, i, i)
		cp := checkpoint.Next(thread, head, checkpoint.SourceStep)
		cp.State = []byte(`{"messages":[` + msgs + `]}`)
		cp.Next = []string{"agent"}
		if err := s.Put(t.Context(), cp); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		out = append(out, cp)
		head = cp
	}
	return out
}

type storedRow struct {
	full   bool
	length int
}

// rows returns how each checkpoint of thread is stored, by seq.
func rows(t *testing.T, db *sql.DB, thread string) []storedRow {
	t.Helper()
	rs, err := db.QueryContext(t.Context(), `SELECT full, length(state) FROM checkpoints WHERE thread = ? ORDER BY seq`, thread)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []storedRow
	for rs.Next() {
		var r storedRow
		if err := rs.Scan(&r.full, &r.length); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestStoresDeltas checks that a chain of appends is stored as one full
// state followed by deltas the size of the appends.
func TestStoresDeltas(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp.db")
	s := open(t, path)
	cps := chainOf(t, s, "d", 10)
	got := rows(t, rawDB(t, path), "d")
	if len(got) != 10 {
		t.Fatalf("%d rows, want 10", len(got))
	}
	if !got[0].full || got[0].length != len(cps[0].State) {
		t.Errorf("first row: full %v, %d bytes; want the full %d-byte state", got[0].full, got[0].length, len(cps[0].State))
	}
	for i, r := range got[1:] {
		if r.full || r.length > 60 {
			t.Errorf("row %d: full %v, %d bytes; want a delta of at most 60 bytes", i+1, r.full, r.length)
		}
	}
}

// TestCorruptRows breaks stored rows with plain SQL and checks that reads
// fail with ErrCorrupt naming the thread and the broken checkpoint, while
// reads that do not need the row still work.
func TestCorruptRows(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sql    string // ?1 is the thread
		bad    int    // seq of the row the error must name
		readOK []int  // seqs that must still read
	}{
		{"meta not JSON", `UPDATE checkpoints SET meta = x'7b226e657874223a' WHERE thread = ?1 AND seq = 4`, 4, []int{0, 3}},
		{"meta wrong type", `UPDATE checkpoints SET meta = CAST('{"next":"agent"}' AS BLOB) WHERE thread = ?1 AND seq = 4`, 4, []int{3}},
		{"meta empty", `UPDATE checkpoints SET meta = x'' WHERE thread = ?1 AND seq = 4`, 4, []int{3}},
		{"delta truncated", `UPDATE checkpoints SET state = substr(state, 1, 1) WHERE thread = ?1 AND seq = 2`, 2, []int{0, 1}},
		{"delta empty", `UPDATE checkpoints SET state = x'' WHERE thread = ?1 AND seq = 2`, 2, []int{1}},
		{"delta past its base", `UPDATE checkpoints SET state = x'ffff0300' WHERE thread = ?1 AND seq = 2`, 2, []int{1}},
		{"full base missing", `DELETE FROM checkpoints WHERE thread = ?1 AND seq = 0`, 1, nil},
		{"full flag lost", `UPDATE checkpoints SET full = 0 WHERE thread = ?1 AND seq = 0`, 0, nil},
		{"row missing", `DELETE FROM checkpoints WHERE thread = ?1 AND seq = 2`, 3, []int{0, 1}},
		{"parent rewritten", `UPDATE checkpoints SET parent_id = 'elsewhere' WHERE thread = ?1 AND seq = 3`, 3, []int{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cp.db")
			s := open(t, path)
			const thread = "broken-thread"
			cps := chainOf(t, s, thread, 5)
			db := rawDB(t, path)
			if r := rows(t, db, thread); r[0].full != true || r[1].full || r[4].full {
				t.Fatalf("want a full row followed by deltas, got %+v", r)
			}
			if _, err := db.ExecContext(t.Context(), tc.sql, thread); err != nil {
				t.Fatal(err)
			}

			// A fresh saver, so nothing comes from a cache.
			r := open(t, path)
			badID := cps[tc.bad].ID
			check := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, checkpoint.ErrCorrupt) {
					t.Errorf("%s: got %v, want ErrCorrupt", what, err)
					return
				}
				if msg := err.Error(); !strings.Contains(msg, thread) || !strings.Contains(msg, badID) {
					t.Errorf("%s: error %q does not name %s/%s", what, msg, thread, badID)
				}
			}
			_, err := r.Get(t.Context(), thread, "")
			check("get head", err)
			_, err = r.Get(t.Context(), thread, cps[4].ID)
			check("get by id", err)
			_, err = r.List(t.Context(), thread, 0)
			check("list", err)
			for _, seq := range tc.readOK {
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

// TestTwoSaversDeltas has two savers on one file write deltas against what
// each has cached, including a parent the other wrote and a stale parent,
// and checks every state reads back exactly from a third saver.
func TestTwoSaversDeltas(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp.db")
	a, b := open(t, path), open(t, path)
	ctx := t.Context()
	cps := chainOf(t, a, "t", 3) // a caches cps[2]
	st := func(cp *checkpoint.Checkpoint, add string) []byte {
		return []byte(strings.TrimSuffix(string(cp.State), "]}") + add + "]}")
	}

	headB, err := b.Get(ctx, "t", "") // b caches cps[2] from its read
	if err != nil {
		t.Fatal(err)
	}
	c3 := checkpoint.Next("t", headB, checkpoint.SourceStep)
	c3.State = st(headB, `,"b3"`)
	if err := b.Put(ctx, c3); err != nil {
		t.Fatal(err)
	}

	// a's cache still holds cps[2]; a delta against it is correct for a
	// child of cps[2], which is no longer the head.
	stale := checkpoint.Next("t", cps[2], checkpoint.SourceStep)
	stale.State = st(cps[2], `,"stale"`)
	if err := a.Put(ctx, stale); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("stale put: got %v, want ErrConflict", err)
	}
	headA, err := a.Get(ctx, "t", "")
	if err != nil || headA.ID != c3.ID {
		t.Fatalf("a's head: %v, %v; want %s", headA, err, c3.ID)
	}
	c4 := checkpoint.Next("t", headA, checkpoint.SourceStep)
	c4.State = st(headA, `,"a4"`)
	if err := a.Put(ctx, c4); err != nil {
		t.Fatal(err)
	}
	c4b := checkpoint.Next("t", c3, checkpoint.SourceStep)
	c4b.State = st(c3, `,"b-stale"`)
	if err := b.Put(ctx, c4b); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("stale put from b: got %v, want ErrConflict", err)
	}

	// Both cross-instance writes went in as deltas, and read back exactly.
	all := []*checkpoint.Checkpoint{cps[0], cps[1], cps[2], c3, c4}
	stored := rows(t, rawDB(t, path), "t")
	if len(stored) != 5 || stored[3].full || stored[4].full {
		t.Fatalf("want deltas at seq 3 (b on a's write) and 4 (a on b's write), got %+v", stored)
	}
	checkStates(t, open(t, path), "t", all...)

	// b deletes the thread and starts it again; a's cached head is gone.
	if err := b.DeleteThread(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	n0 := checkpoint.Next("t", nil, checkpoint.SourceInput)
	n0.State = []byte(`{"messages":["new"]}`)
	if err := b.Put(ctx, n0); err != nil {
		t.Fatal(err)
	}
	after := checkpoint.Next("t", c4, checkpoint.SourceStep)
	after.State = st(c4, `,"after-delete"`)
	if err := a.Put(ctx, after); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("put after the other saver deleted the thread: got %v, want ErrConflict", err)
	}
	headA, err = a.Get(ctx, "t", "")
	if err != nil {
		t.Fatal(err)
	}
	n1 := checkpoint.Next("t", headA, checkpoint.SourceStep)
	n1.State = st(headA, `,"n1"`)
	if err := a.Put(ctx, n1); err != nil {
		t.Fatal(err)
	}
	checkStates(t, open(t, path), "t", n0, n1)
}

// checkStates checks that s holds exactly cps on thread, by id and in List.
func checkStates(t *testing.T, s checkpoint.Saver, thread string, cps ...*checkpoint.Checkpoint) {
	t.Helper()
	for _, cp := range cps {
		got, err := s.Get(t.Context(), thread, cp.ID)
		if err != nil {
			t.Fatalf("get %s: %v", cp.ID, err)
		}
		if string(got.State) != string(cp.State) {
			t.Errorf("seq %d: state %q, want %q", cp.Seq, got.State, cp.State)
		}
	}
	got, err := s.List(t.Context(), thread, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(cps) {
		t.Fatalf("list: %d checkpoints, want %d", len(got), len(cps))
	}
	for i, cp := range got {
		if want := cps[len(cps)-1-i]; cp.ID != want.ID || string(cp.State) != string(want.State) {
			t.Errorf("list [%d]: %s %q, want %s %q", i, cp.ID, cp.State, want.ID, want.State)
		}
	}
}

// reportCPU adds the process's CPU time per op (all threads, user and
// system) to a benchmark's results; call it with the value of cpuTime
// taken when the timed loop started.
func reportCPU(b *testing.B, start time.Duration) {
	if start > 0 {
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkPut puts checkpoints in sequence on one thread, each with a
// small state that changes a little, as a graph step does.
func BenchmarkPut(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "cp.db"))
	defer reportCPU(b, cpuTime())
	savertest.BenchPut(b, s)
}

// BenchmarkPutGrowing puts checkpoints whose state is a conversation that
// grows by a message each step, from 0 to about 100 KB.
func BenchmarkPutGrowing(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "cp.db"))
	ctx := context.Background()
	var head *checkpoint.Checkpoint
	var msgs []byte
	b.ReportAllocs()
	defer reportCPU(b, cpuTime())
	i := 0
	for b.Loop() {
		if i%500 == 0 {
			msgs = msgs[:0]
		}
		if len(msgs) > 0 {
			msgs = append(msgs, ',')
		}
		msgs = fmt.Appendf(msgs, `{"role":"assistant","content":"step %d: %s"}`, i, strings.Repeat("lorem ipsum ", 15))
		cp := checkpoint.Next("bench", head, checkpoint.SourceStep)
		cp.State = append(append([]byte(`{"messages":[`), msgs...), "]}"...)
		if err := s.Put(ctx, cp); err != nil {
			b.Fatal(err)
		}
		head = cp
		i++
	}
}

// BenchmarkGetHead reads the head of a thread whose head is a few deltas
// past a full state.
func BenchmarkGetHead(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "cp.db"))
	defer reportCPU(b, cpuTime())
	savertest.BenchGetHead(b, s)
}

// TestGroupCommit races many puts at once, so they share transactions: on
// each of 100 threads two writers start the thread; exactly one wins per
// thread, and every winner's checkpoint is stored.
func TestGroupCommit(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "group.db"))
	ctx := context.Background()
	var wg sync.WaitGroup
	var wins, conflicts atomic.Int32
	for i := range 100 {
		for w := range 2 {
			wg.Go(func() {
				cp := checkpoint.Next(fmt.Sprint("g", i), nil, checkpoint.SourceInput)
				cp.State = []byte(fmt.Sprintf(`{"writer":%d}`, w))
				switch err := s.Put(ctx, cp); {
				case err == nil:
					wins.Add(1)
				case errors.Is(err, checkpoint.ErrConflict):
					conflicts.Add(1)
				default:
					t.Errorf("put: %v", err)
				}
			})
		}
	}
	wg.Wait()
	if wins.Load() != 100 || conflicts.Load() != 100 {
		t.Fatalf("wins %d, conflicts %d; want 100 and 100", wins.Load(), conflicts.Load())
	}
	for i := range 100 {
		cp, err := s.Get(ctx, fmt.Sprint("g", i), "")
		if err != nil || !strings.HasPrefix(string(cp.State), `{"writer":`) {
			t.Fatalf("thread g%d: %v, %+v", i, err, cp)
		}
	}
}

// TestWrite runs app writes through the saver's group commit: a failing
// function's changes are undone, the others' and the checkpoints' kept.
func TestWrite(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "write.db"))
	ctx := context.Background()
	exec := func(q string) func(context.Context, *sql.Tx) error {
		return func(ctx context.Context, tx *sql.Tx) error { _, err := tx.ExecContext(ctx, q); return err }
	}
	if err := s.Write(ctx, exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)`)); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	var wg sync.WaitGroup
	errs := make([]error, 40)
	for i := range 40 {
		wg.Go(func() {
			switch i % 4 {
			case 0: // a write that fails half-way
				errs[i] = s.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
					if _, err := tx.ExecContext(ctx, `INSERT INTO notes (id, body) VALUES (?, 'lost')`, 1000+i); err != nil {
						return err
					}
					return boom
				})
			case 1:
				cp := checkpoint.Next(fmt.Sprint("w", i), nil, checkpoint.SourceInput)
				cp.State = []byte(`{}`)
				errs[i] = s.Put(ctx, cp)
			default:
				errs[i] = s.Write(ctx, exec(fmt.Sprintf(`INSERT INTO notes (id, body) VALUES (%d, 'kept')`, i)))
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if want := i%4 == 0; (err != nil) != want || (want && !errors.Is(err, boom)) {
			t.Errorf("op %d: err %v", i, err)
		}
	}
	var kept, lost int
	if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE body = 'kept'), count(*) FILTER (WHERE body = 'lost') FROM notes`).Scan(&kept, &lost); err != nil {
		t.Fatal(err)
	}
	if kept != 20 || lost != 0 {
		t.Errorf("kept %d, lost %d rows; want 20 and 0", kept, lost)
	}
	for i := 1; i < 40; i += 4 {
		if _, err := s.Get(ctx, fmt.Sprint("w", i), ""); err != nil {
			t.Errorf("checkpoint of w%d: %v", i, err)
		}
	}
}

// TestWALIsCheckpointed: commits do not checkpoint the WAL themselves; the
// saver's background checkpointer does, so the WAL stops growing.
func TestWALIsCheckpointed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wal.db")
	s := open(t, path)
	ctx := context.Background()
	var head *checkpoint.Checkpoint
	for i := range 4000 {
		cp := checkpoint.Next("t", head, checkpoint.SourceStep)
		cp.State = []byte(fmt.Sprintf(`{"n":%d}`, i))
		if err := s.Put(ctx, cp); err != nil {
			t.Fatal(err)
		}
		head = cp
	}
	// Without checkpoints these 4,000 back-to-back commits leave a WAL of
	// about 50 MB; the checkpointer keeps it near its cap of 4,000 pages
	// (16 MB) by making it start over from its beginning.
	var size int64
	for range 100 { // the last checkpoint may still be running
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		if size = fi.Size(); size < 24<<20 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if size >= 24<<20 {
		t.Errorf("WAL is %d bytes after 4,000 puts; the checkpointer is not keeping up", size)
	}
	if seq := sqlite.WALSequence(s); seq == 0 {
		t.Errorf("the WAL never started over (sequence %d)", seq)
	}
}
