package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/loomkit/loom/store/storetest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/checkpoint/postgres"
	"github.com/loomkit/loom/checkpoint/savertest"
)

// rawConn is a plain connection to the test database, closed when t ends.
func rawConn(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func open(t testing.TB, url string) *postgres.Saver {
	t.Helper()
	s, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSaver(t *testing.T) {
	savertest.Run(t, func(t *testing.T) checkpoint.Saver {
		return open(t, storetest.PostgresURL(t))
	})
}

func TestReopen(t *testing.T) {
	var mu sync.Mutex
	schemas := map[string]string{} // savertest path -> URL
	savertest.RunReopen(t, func(t *testing.T, path string) checkpoint.Saver {
		mu.Lock()
		u, ok := schemas[path]
		if !ok {
			u = storetest.PostgresURL(t)
			schemas[path] = u
		}
		mu.Unlock()
		return open(t, u)
	})
}

// TestMigrate checks that migrations are recorded, run once, and that a
// database from a newer build is refused.
func TestMigrate(t *testing.T) {
	u := storetest.PostgresURL(t)
	ctx := t.Context()
	for range 2 {
		if err := postgres.Migrate(ctx, u); err != nil {
			t.Fatalf("migrate: %v", err)
		}
	}
	conn := rawConn(t, u)
	var n, v int
	err := conn.QueryRow(ctx, `SELECT count(*), max(version) FROM loom_schema_migrations WHERE component = 'checkpoint'`).Scan(&n, &v)
	if err != nil {
		t.Fatal(err)
	}
	if n != postgres.SchemaVersion || v != postgres.SchemaVersion {
		t.Errorf("after migrating twice: %d migration rows up to version %d, want %d up to %d", n, v, postgres.SchemaVersion, postgres.SchemaVersion)
	}
	// Open on a migrated schema works and writes.
	s := open(t, u)
	cp := checkpoint.Next("m", nil, checkpoint.SourceInput)
	cp.State = []byte(`{}`)
	if err := s.Put(ctx, cp); err != nil {
		t.Fatalf("put after migrate: %v", err)
	}

	if _, err := conn.Exec(ctx, `INSERT INTO loom_schema_migrations (component, version, name) VALUES ('checkpoint', $1, 'from the future')`, postgres.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	if err := postgres.Migrate(ctx, u); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("migrate a newer schema: got %v, want an error saying it is newer", err)
	}
	if s, err := postgres.Open(ctx, u); err == nil {
		s.Close()
		t.Error("open a newer schema: no error")
	}
}

// TestConcurrentOpen opens savers on an empty schema at once: the
// migration runs once and every open succeeds.
func TestConcurrentOpen(t *testing.T) {
	u := storetest.PostgresURL(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			s, err := postgres.Open(t.Context(), u)
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("open %d: %v", i, err)
		}
	}
	var n int
	if err := rawConn(t, u).QueryRow(t.Context(), `SELECT count(*) FROM loom_schema_migrations`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != postgres.SchemaVersion {
		t.Errorf("%d migration rows, want %d", n, postgres.SchemaVersion)
	}
}

// TestOpenErrors needs no database: a bad URL or an address where nothing
// listens gives an error, which never shows the password.
func TestOpenErrors(t *testing.T) {
	for _, u := range []string{
		"postgres://loom:s3cretpw@127.0.0.1:1/test?sslmode=disable&connect_timeout=5",
		"postgres://loom:s3cretpw@127.0.0.1:1/test?sslmode=nonsense",
		"host=127.0.0.1 port=1 user=loom password=s3cretpw connect_timeout=5 sslmode=disable",
		"postgres://loom:s3cretpw@[::1/test",
	} {
		s, err := postgres.Open(t.Context(), u)
		if err == nil {
			s.Close()
			t.Errorf("open %s: no error", u)
			continue
		}
		if strings.Contains(err.Error(), "s3cretpw") {
			t.Errorf("open error shows the password: %v", err)
		}
		if err := postgres.Migrate(t.Context(), u); err == nil || strings.Contains(err.Error(), "s3cretpw") {
			t.Errorf("migrate %s: got %v, want an error without the password", u, err)
		}
	}
}

func TestClosed(t *testing.T) {
	s, err := postgres.Open(t.Context(), storetest.PostgresURL(t))
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
func rows(t *testing.T, conn *pgx.Conn, thread string) []storedRow {
	t.Helper()
	rs, err := conn.Query(t.Context(), `SELECT is_full, length(state) FROM loom_checkpoints WHERE thread = $1 ORDER BY seq`, thread)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) (storedRow, error) {
		var s storedRow
		err := r.Scan(&s.full, &s.length)
		return s, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStoresDeltas checks that a chain of appends is stored as one full
// state followed by deltas the size of the appends, and that a long chain
// of small deltas is cut by a full state now and then.
func TestStoresDeltas(t *testing.T) {
	u := storetest.PostgresURL(t)
	s := open(t, u)
	conn := rawConn(t, u)
	cps := chainOf(t, s, "d", 10)
	got := rows(t, conn, "d")
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

	chainOf(t, s, "long", 200)
	run := 0
	fulls := 0
	for i, r := range rows(t, conn, "long") {
		if r.full {
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

// TestCorruptRows breaks stored rows with plain SQL and checks that reads
// fail with ErrCorrupt naming the thread and the broken checkpoint, while
// reads that do not need the row still work.
func TestCorruptRows(t *testing.T) {
	u := storetest.PostgresURL(t)
	s := open(t, u)
	conn := rawConn(t, u)
	for _, tc := range []struct {
		name   string
		sql    string // $1 is the thread
		bad    int    // seq of the row the error must name
		readOK []int  // seqs that must still read
	}{
		{"meta not JSON", `UPDATE loom_checkpoints SET meta = '\x7b226e657874223a'::bytea WHERE thread = $1 AND seq = 4`, 4, []int{0, 3}},
		{"meta wrong type", `UPDATE loom_checkpoints SET meta = convert_to('{"next":"agent"}', 'UTF8') WHERE thread = $1 AND seq = 4`, 4, []int{3}},
		{"meta empty", `UPDATE loom_checkpoints SET meta = ''::bytea WHERE thread = $1 AND seq = 4`, 4, []int{3}},
		{"delta truncated", `UPDATE loom_checkpoints SET state = substr(state, 1, 1) WHERE thread = $1 AND seq = 2`, 2, []int{0, 1}},
		{"delta empty", `UPDATE loom_checkpoints SET state = ''::bytea WHERE thread = $1 AND seq = 2`, 2, []int{1}},
		{"delta past its base", `UPDATE loom_checkpoints SET state = '\xffff0300'::bytea WHERE thread = $1 AND seq = 2`, 2, []int{1}},
		{"full base missing", `DELETE FROM loom_checkpoints WHERE thread = $1 AND seq = 0`, 1, nil},
		{"full flag lost", `UPDATE loom_checkpoints SET is_full = false WHERE thread = $1 AND seq = 0`, 0, nil},
		{"row missing", `DELETE FROM loom_checkpoints WHERE thread = $1 AND seq = 2`, 3, []int{0, 1}},
		{"parent rewritten", `UPDATE loom_checkpoints SET parent_id = 'elsewhere' WHERE thread = $1 AND seq = 3`, 3, []int{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			thread := "broken thread " + tc.name
			cps := chainOf(t, s, thread, 5)
			if r := rows(t, conn, thread); !r[0].full || r[1].full || r[4].full {
				t.Fatalf("want a full row followed by deltas, got %+v", r)
			}
			if _, err := conn.Exec(t.Context(), tc.sql, thread); err != nil {
				t.Fatal(err)
			}

			// A fresh saver, so nothing comes from a cache.
			r := open(t, u)
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
			_, err = r.List(t.Context(), thread, 1)
			check("list 1", err)
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

// TestPutRacesDelete puts a child of the head while the thread is being
// deleted, many times: whichever wins, the thread is left empty or a
// history that reads from seq 0, never rows without their parents.
func TestPutRacesDelete(t *testing.T) {
	u := storetest.PostgresURL(t)
	a, b := open(t, u), open(t, u)
	ctx := t.Context()
	for i := range 30 {
		thread := fmt.Sprintf("race-%d", i)
		cps := chainOf(t, a, thread, 3)
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
		got, err := b.List(ctx, thread, 0)
		if err != nil {
			t.Fatalf("round %d: list after the race: %v", i, err)
		}
		if len(got) != 0 {
			t.Fatalf("round %d: %d checkpoints left after delete (put error %v), want none", i, len(got), putErr)
		}
	}
}

// TestTwoSaversDeltas has two savers on one schema write deltas against
// what each has cached, including a parent the other wrote and a stale
// parent, and checks every state reads back exactly from a third saver.
func TestTwoSaversDeltas(t *testing.T) {
	u := storetest.PostgresURL(t)
	a, b := open(t, u), open(t, u)
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
	stored := rows(t, rawConn(t, u), "t")
	if len(stored) != 5 || stored[3].full || stored[4].full {
		t.Fatalf("want deltas at seq 3 (b on a's write) and 4 (a on b's write), got %+v", stored)
	}
	c := open(t, u)
	all := []*checkpoint.Checkpoint{cps[0], cps[1], cps[2], c3, c4}
	for _, cp := range all {
		got, err := c.Get(ctx, "t", cp.ID)
		if err != nil {
			t.Fatalf("get %s: %v", cp.ID, err)
		}
		if string(got.State) != string(cp.State) {
			t.Errorf("seq %d: state %q, want %q", cp.Seq, got.State, cp.State)
		}
	}
}

// TestSearchPath checks that the tables go to the schema the URL names.
func TestSearchPath(t *testing.T) {
	u := storetest.PostgresURL(t)
	schema := searchPath(t, u)
	open(t, u)
	var n int
	err := rawConn(t, storetest.ServerURL(t)).QueryRow(t.Context(), `SELECT count(*) FROM information_schema.tables
		WHERE table_name IN ('loom_checkpoints', 'loom_schema_migrations') AND table_schema = $1`, schema).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("%d of the 2 tables in schema %s", n, schema)
	}
}

// BenchmarkPut puts checkpoints in sequence on one thread, each with a
// small state that changes a little, as a graph step does.
func BenchmarkPut(b *testing.B) {
	savertest.BenchPut(b, open(b, storetest.PostgresURL(b)))
}

// BenchmarkGetHead reads the head of a thread whose head is a few deltas
// past a full state.
func BenchmarkGetHead(b *testing.B) {
	savertest.BenchGetHead(b, open(b, storetest.PostgresURL(b)))
}

// New works on a pool its caller shares and keeps open: closing the
// saver leaves the pool to its owner.
func TestNewSharesPool(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, storetest.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s, err := postgres.New(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	cp := checkpoint.Next("t", nil, checkpoint.SourceInput)
	cp.State = []byte(`{"a":1}`)
	if err := s.Put(ctx, cp); err != nil {
		t.Fatal(err)
	}
	s.Close()
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM loom_checkpoints").Scan(&n); err != nil || n != 1 {
		t.Fatalf("the pool after the saver closed: %d rows, %v", n, err)
	}
}

// searchPath returns the schema a test URL from storetest names.
func searchPath(t testing.TB, u string) string {
	t.Helper()
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return parsed.Query().Get("search_path")
}
