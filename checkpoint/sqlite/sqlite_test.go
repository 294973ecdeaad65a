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

// BenchmarkCommitFloor is what SQLite itself takes to commit one row
// like a Put's, alone in its transaction, into the saver's table: the
// same file, pragmas and indexes, a statement prepared once, and none of
// the saver's own work (no delta, no meta, no compare-and-set). Compare
// it with BenchmarkPut: the difference is what the saver adds to a
// durable step.
func BenchmarkCommitFloor(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "cp.db"))
	ctx := context.Background()
	conn, err := s.DB().Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	ins, err := conn.PrepareContext(ctx, `INSERT INTO checkpoints (thread, seq, id, parent_id, step, full, state, meta) VALUES (?, ?, ?, ?, ?, 0, ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	defer ins.Close()
	state := []byte(`{"messages":[{"role":"user","content":"What is the weather in Paris?"},{"role":"assistant","content":"Let me check."}],"step":0,"done":false}`)
	meta := []byte(`{"next":["agent"],"meta":{"source":"step","node":"agent"}}`)
	parent := ""
	b.ReportAllocs()
	defer reportCPU(b, cpuTime())
	for i := 0; b.Loop(); i++ {
		id := checkpoint.NewID()
		if _, err := ins.ExecContext(ctx, "bench", int64(i), id, parent, int64(i), state, meta); err != nil {
			b.Fatal(err)
		}
		parent = id
	}
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM checkpoints WHERE thread = 'bench'").Scan(&n); err != nil || n < b.N {
		b.Fatalf("rows: %d (%v), want at least %d", n, err, b.N)
	}
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

// v1Schema is the table that files had before schema version 2: kept in
// thread order, with a unique index of thread and id (and, in some, one
// of full rows).
const v1Schema = `
CREATE TABLE checkpoints (
	thread    TEXT    NOT NULL,
	seq       INTEGER NOT NULL,
	id        TEXT    NOT NULL,
	parent_id TEXT    NOT NULL,
	step      INTEGER NOT NULL,
	full      INTEGER NOT NULL,
	state     BLOB    NOT NULL,
	meta      BLOB    NOT NULL,
	PRIMARY KEY (thread, seq)
) STRICT, WITHOUT ROWID;
CREATE UNIQUE INDEX checkpoints_id ON checkpoints (thread, id);
CREATE INDEX checkpoints_full ON checkpoints (thread, seq) WHERE full = 1;
PRAGMA user_version = 1;`

// v2Schema is the table of schema version 2, with its two indexes: a
// unique one of thread and seq, and one of ids.
const v2Schema = `
CREATE TABLE checkpoints (
	n         INTEGER PRIMARY KEY,
	thread    TEXT    NOT NULL,
	seq       INTEGER NOT NULL,
	id        TEXT    NOT NULL,
	parent_id TEXT    NOT NULL,
	step      INTEGER NOT NULL,
	full      INTEGER NOT NULL,
	state     BLOB    NOT NULL,
	meta      BLOB    NOT NULL
) STRICT;
CREATE UNIQUE INDEX checkpoints_seq ON checkpoints (thread, seq);
CREATE INDEX checkpoints_id ON checkpoints (id);
PRAGMA user_version = 2;`

// TestSchemaMigrated opens files made with older schema versions, whose
// rows are full states and deltas of two threads (in version 1 kept in
// thread order): the saver moves them to the current table and indexes,
// reads every checkpoint as before, and the threads go on with the
// compare-and-set intact.
func TestSchemaMigrated(t *testing.T) {
	for _, old := range []struct{ name, ddl, copy string }{
		{"v1", v1Schema, `INSERT INTO checkpoints SELECT thread, seq, id, parent_id, step, full, state, meta FROM src.checkpoints`},
		{"v2", v2Schema, `INSERT INTO checkpoints SELECT * FROM src.checkpoints ORDER BY n`},
	} {
		t.Run(old.name, func(t *testing.T) { testSchemaMigrated(t, old.ddl, old.copy) })
	}
}

func testSchemaMigrated(t *testing.T, ddl, copySQL string) {
	ctx := t.Context()
	dir := t.TempDir()
	src, err := sqlite.Open(ctx, filepath.Join(dir, "src.db"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]*checkpoint.Checkpoint{}
	for _, thread := range []string{"a", "b"} {
		var head *checkpoint.Checkpoint
		for i := range 150 {
			cp := checkpoint.Next(thread, head, checkpoint.SourceStep)
			cp.State = fmt.Appendf(nil, `{"messages":["%s"],"step":%d}`, strings.Repeat(thread, 300), i)
			cp.Next = []string{"n"}
			if err := src.Put(ctx, cp); err != nil {
				t.Fatal(err)
			}
			head, want[thread] = cp, append(want[thread], cp)
		}
	}
	src.Close()
	path := filepath.Join(dir, "old.db")
	db := rawDB(t, path)
	if _, err := db.ExecContext(ctx, ddl); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `ATTACH DATABASE ? AS src`, filepath.Join(dir, "src.db")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, copySQL); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `DETACH DATABASE src`); err != nil {
		t.Fatal(err)
	}
	fulls := 0
	for _, r := range rows(t, db, "a") {
		if r.Full {
			fulls++
		}
	}
	if fulls < 2 || fulls > 75 {
		t.Fatalf("%d full rows of 150, want a few, the others deltas", fulls)
	}

	s := open(t, path)
	var version, n int
	if err := db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	var names string
	if err := db.QueryRowContext(ctx, `SELECT group_concat(name, ' ') FROM (SELECT name FROM sqlite_master WHERE tbl_name LIKE 'checkpoints%' ORDER BY name)`).Scan(&names); err != nil {
		t.Fatal(err)
	}
	if version != 3 || names != "checkpoints checkpoints_thread" {
		t.Errorf("after open: schema version %d, tables and indexes %q; want 3 and checkpoints checkpoints_thread", version, names)
	}
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM checkpoints WHERE n > 0`).Scan(&n); err != nil || n != 300 {
		t.Errorf("rows numbered in the new table: %d, %v; want 300", n, err)
	}
	for thread, cps := range want {
		got, err := s.Get(ctx, thread, "")
		if last := cps[len(cps)-1]; err != nil || got.ID != last.ID || string(got.State) != string(last.State) {
			t.Fatalf("head of %s: %v, %v; want %s", thread, got, err, last.ID)
		}
		for _, i := range []int{0, 1, 63, 64, 65, 120, 149} {
			got, err := s.Get(ctx, thread, cps[i].ID)
			if err != nil || string(got.State) != string(cps[i].State) || got.Seq != int64(i) {
				t.Errorf("checkpoint %d of %s: %v, %v", i, thread, got, err)
			}
		}
		list, err := s.List(ctx, thread, 0)
		if err != nil || len(list) != 150 || list[149].ID != cps[0].ID {
			t.Errorf("list of %s: %d checkpoints, %v", thread, len(list), err)
		}
		// The thread goes on; a put on a parent that is no longer the
		// head is refused as before.
		next := checkpoint.Next(thread, cps[len(cps)-1], checkpoint.SourceStep)
		if err := s.Put(ctx, next); err != nil {
			t.Fatalf("put after the migration on %s: %v", thread, err)
		}
		stale := checkpoint.Next(thread, cps[len(cps)-1], checkpoint.SourceStep)
		if err := s.Put(ctx, stale); !errors.Is(err, checkpoint.ErrConflict) {
			t.Errorf("put on %s on a parent that is no longer the head: %v, want ErrConflict", thread, err)
		}
	}
}

// BenchmarkPutConcurrent puts checkpoints from 200 writers at once, each
// on a thread of its own that already holds 50 checkpoints, as a server's
// conversations do: the puts share group commits, and their rows land
// all over the table. ns/op is the wall time per put across all writers.
func BenchmarkPutConcurrent(b *testing.B) {
	const writers, history = 200, 50
	s := open(b, filepath.Join(b.TempDir(), "cp.db"))
	ctx := context.Background()
	heads := make([]*checkpoint.Checkpoint, writers)
	put := func(w int) error {
		cp := checkpoint.Next(fmt.Sprintf("thread-%03d", w), heads[w], checkpoint.SourceStep)
		cp.State = fmt.Appendf(nil, `{"messages":[{"role":"user","content":"What is the weather in Paris?"}],"step":%d}`, cp.Seq)
		cp.Next = []string{"agent"}
		if err := s.Put(ctx, cp); err != nil {
			return err
		}
		heads[w] = cp
		return nil
	}
	for range history {
		for w := range writers {
			if err := put(w); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b, cpuTime())
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := put(w); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// TestQueriesSearchTheIndex checks that none of the saver's statements
// reads the whole table or the whole index: each searches
// checkpoints_thread by thread, and finds a row's id in the index alone.
func TestQueriesSearchTheIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plan.db")
	open(t, path)
	db := rawDB(t, path)
	for name, q := range sqlite.Queries {
		rs, err := db.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+q, "t", 1, "id", "parent", 1, 0, []byte("{}"), []byte("{}"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var steps []string
		for rs.Next() {
			var id, parent, unused int
			var detail string
			if err := rs.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			steps = append(steps, detail)
		}
		rs.Close()
		plan := strings.Join(steps, "; ")
		if !strings.Contains(plan, "INDEX checkpoints_thread (thread=?") || strings.Contains(plan, "SCAN checkpoints") {
			t.Errorf("%s: plan %q, want searches of checkpoints_thread by thread and no scan", name, plan)
		}
		// A row's id is read from the index, not from the table.
		if strings.Contains(q, "AND id = ") && !strings.Contains(plan, "COVERING INDEX checkpoints_thread") {
			t.Errorf("%s: plan %q, want the id looked up in checkpoints_thread alone", name, plan)
		}
	}
}
