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

// storage is a SQLite file for savertest.
var storage = savertest.Storage{
	New:  func(t *testing.T) string { return filepath.Join(t.TempDir(), "cp.db") },
	Open: func(t *testing.T, path string) checkpoint.Saver { return open(t, path) },
	Rows: func(t *testing.T, path, thread string) []savertest.Row { return rows(t, rawDB(t, path), thread) },
}

func TestStorage(t *testing.T) { savertest.RunStorage(t, storage) }

func TestOpenBadPath(t *testing.T) {
	for _, path := range []string{"", "a?b", filepath.Join(t.TempDir(), "missing-dir", "cp.db")} {
		if s, err := sqlite.Open(t.Context(), path); err == nil {
			s.Close()
			t.Errorf("open %q: no error", path)
		}
	}
}

// rows returns how each checkpoint of thread is stored, by seq.
func rows(t *testing.T, db *sql.DB, thread string) []savertest.Row {
	t.Helper()
	rs, err := db.QueryContext(t.Context(), `SELECT full, length(state) FROM checkpoints WHERE thread = ? ORDER BY seq`, thread)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []savertest.Row
	for rs.Next() {
		var r savertest.Row
		if err := rs.Scan(&r.Full, &r.Size); err != nil {
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

// TestCorruptRows breaks stored rows with plain SQL (?1 is the thread).
func TestCorruptRows(t *testing.T) {
	sqlBreak := func(query string) func(t *testing.T, path, thread string) {
		return func(t *testing.T, path, thread string) {
			if _, err := rawDB(t, path).ExecContext(t.Context(), query, thread); err != nil {
				t.Fatal(err)
			}
		}
	}
	savertest.RunCorruptions(t, storage, []savertest.Corruption{
		{Name: "meta not JSON", Break: sqlBreak(`UPDATE checkpoints SET meta = x'7b226e657874223a' WHERE thread = ?1 AND seq = 4`), Bad: 4, ReadOK: []int{0, 3}},
		{Name: "meta wrong type", Break: sqlBreak(`UPDATE checkpoints SET meta = CAST('{"next":"agent"}' AS BLOB) WHERE thread = ?1 AND seq = 4`), Bad: 4, ReadOK: []int{3}},
		{Name: "meta empty", Break: sqlBreak(`UPDATE checkpoints SET meta = x'' WHERE thread = ?1 AND seq = 4`), Bad: 4, ReadOK: []int{3}},
		{Name: "delta truncated", Break: sqlBreak(`UPDATE checkpoints SET state = substr(state, 1, 1) WHERE thread = ?1 AND seq = 2`), Bad: 2, ReadOK: []int{0, 1}},
		{Name: "delta empty", Break: sqlBreak(`UPDATE checkpoints SET state = x'' WHERE thread = ?1 AND seq = 2`), Bad: 2, ReadOK: []int{1}},
		{Name: "delta past its base", Break: sqlBreak(`UPDATE checkpoints SET state = x'ffff0300' WHERE thread = ?1 AND seq = 2`), Bad: 2, ReadOK: []int{1}},
		{Name: "full base missing", Break: sqlBreak(`DELETE FROM checkpoints WHERE thread = ?1 AND seq = 0`), Bad: 1},
		{Name: "full flag lost", Break: sqlBreak(`UPDATE checkpoints SET full = 0 WHERE thread = ?1 AND seq = 0`), Bad: 0},
		{Name: "row missing", Break: sqlBreak(`DELETE FROM checkpoints WHERE thread = ?1 AND seq = 2`), Bad: 3, ReadOK: []int{0, 1}},
		{Name: "parent rewritten", Break: sqlBreak(`UPDATE checkpoints SET parent_id = 'elsewhere' WHERE thread = ?1 AND seq = 3`), Bad: 3, ReadOK: []int{2}},
	})
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
	t.Run("checkpointer", func(t *testing.T) { walBound(t, false) })
	t.Run("stalled", func(t *testing.T) { walBound(t, true) })
}

func walBound(t *testing.T, stalled bool) {
	path := filepath.Join(t.TempDir(), "wal.db")
	s := open(t, path)
	if stalled {
		sqlite.StallCheckpointer(s)
	}
	ctx := context.Background()
	var head *checkpoint.Checkpoint
	var largest int64
	// Without checkpoints these 4,000 back-to-back commits leave a WAL of
	// about 50 MB. The background checkpointer keeps it near its cap of
	// 4,000 pages (16 MB) when it keeps up; when it does not (a busy
	// machine), the writers wait at twice that for a checkpoint: the
	// bound holds after every put, however slow the machine.
	for i := range 4000 {
		cp := checkpoint.Next("t", head, checkpoint.SourceStep)
		cp.State = []byte(fmt.Sprintf(`{"n":%d}`, i))
		if err := s.Put(ctx, cp); err != nil {
			t.Fatal(err)
		}
		head = cp
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		largest = max(largest, fi.Size())
	}
	const bound = 2*4000*4096 + 1<<20
	if largest > bound {
		t.Errorf("WAL reached %d bytes during 4,000 puts, over its bound of %d", largest, bound)
	}
	if seq := sqlite.WALSequence(s); seq == 0 {
		t.Errorf("the WAL never started over (sequence %d)", seq)
	}
}

// TestWALFrames: the writer reads how many frames the WAL holds from the
// WAL index, not from the file's size, which stays at its high-water
// mark after the WAL starts over.
func TestWALFrames(t *testing.T) {
	path := filepath.Join(t.TempDir(), "frames.db")
	s := open(t, path)
	sqlite.StallCheckpointer(s)
	ctx := context.Background()
	var head *checkpoint.Checkpoint
	for i := range 50 {
		cp := checkpoint.Next("t", head, checkpoint.SourceStep)
		cp.State = []byte(fmt.Sprintf(`{"n":%d}`, i))
		if err := s.Put(ctx, cp); err != nil {
			t.Fatal(err)
		}
		head = cp
	}
	// Each commit writes at least one frame.
	if n := sqlite.WALFrames(s); n < 50 {
		t.Fatalf("after 50 commits the WAL index says %d frames, want at least 50", n)
	}
	if _, err := s.DB().ExecContext(ctx, "PRAGMA wal_checkpoint(RESTART)"); err != nil {
		t.Fatal(err)
	}
	cp := checkpoint.Next("t", head, checkpoint.SourceStep)
	if err := s.Put(ctx, cp); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	// The WAL started over: a few frames in use, the file as large as before.
	if n := sqlite.WALFrames(s); n == 0 || int64(n)*4096 >= fi.Size()/2 {
		t.Errorf("after the WAL started over the index says %d frames in a file of %d bytes", n, fi.Size())
	}
}

// TestOldFullIndexDropped opens a file made with the index of full rows
// that files had before it was dropped: the saver drops it, and reads
// the head and older checkpoints across full rows and deltas as before.
func TestOldFullIndexDropped(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "cp.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	var head *checkpoint.Checkpoint
	var ids []string
	for i := range 200 {
		cp := checkpoint.Next("t", head, checkpoint.SourceStep)
		cp.State = fmt.Appendf(nil, `{"messages":["%s"],"step":%d}`, strings.Repeat("x", 300), i)
		if err := s.Put(ctx, cp); err != nil {
			t.Fatal(err)
		}
		head, ids = cp, append(ids, cp.ID)
	}
	s.Close()
	db := rawDB(t, path)
	if _, err := db.ExecContext(ctx, `CREATE INDEX checkpoints_full ON checkpoints (thread, seq) WHERE full = 1`); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = 'checkpoints_full'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("index checkpoints_full still there after open")
	}
	fulls := 0
	for _, r := range rows(t, db, "t") {
		if r.Full {
			fulls++
		}
	}
	if fulls < 2 || fulls > 100 {
		t.Fatalf("%d full rows of 200, want a few, the others deltas", fulls)
	}
	got, err := s.Get(ctx, "t", "")
	if err != nil || got.ID != head.ID || string(got.State) != string(head.State) {
		t.Fatalf("head: %v, %v; want %s", got, err, head.ID)
	}
	for _, i := range []int{0, 1, 63, 64, 65, 150, 199} {
		got, err := s.Get(ctx, "t", ids[i])
		want := fmt.Sprintf(`{"messages":["%s"],"step":%d}`, strings.Repeat("x", 300), i)
		if err != nil || string(got.State) != want {
			t.Errorf("checkpoint %d: %v, %v", i, got, err)
		}
	}
}
