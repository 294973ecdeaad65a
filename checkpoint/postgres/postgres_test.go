package postgres_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/loomkit/loom/store/storetest"

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

// storage is a fresh schema for savertest, named by its URL.
var storage = savertest.Storage{
	New:  func(t *testing.T) string { return storetest.PostgresURL(t) },
	Open: func(t *testing.T, u string) checkpoint.Saver { return open(t, u) },
	Rows: func(t *testing.T, u, thread string) []savertest.Row { return rows(t, rawConn(t, u), thread) },
}

func TestStorage(t *testing.T) { savertest.RunStorage(t, storage) }

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

// rows returns how each checkpoint of thread is stored, by seq.
func rows(t *testing.T, conn *pgx.Conn, thread string) []savertest.Row {
	t.Helper()
	rs, err := conn.Query(t.Context(), `SELECT is_full, length(state) FROM loom_checkpoints WHERE thread = $1 ORDER BY seq`, thread)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) (savertest.Row, error) {
		var s savertest.Row
		err := r.Scan(&s.Full, &s.Size)
		return s, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCorruptRows breaks stored rows with plain SQL ($1 is the thread).
func TestCorruptRows(t *testing.T) {
	sqlBreak := func(query string) func(t *testing.T, u, thread string) {
		return func(t *testing.T, u, thread string) {
			if _, err := rawConn(t, u).Exec(t.Context(), query, thread); err != nil {
				t.Fatal(err)
			}
		}
	}
	savertest.RunCorruptions(t, storage, []savertest.Corruption{
		{Name: "meta not JSON", Break: sqlBreak(`UPDATE loom_checkpoints SET meta = '\x7b226e657874223a'::bytea WHERE thread = $1 AND seq = 4`), Bad: 4, ReadOK: []int{0, 3}},
		{Name: "meta wrong type", Break: sqlBreak(`UPDATE loom_checkpoints SET meta = convert_to('{"next":"agent"}', 'UTF8') WHERE thread = $1 AND seq = 4`), Bad: 4, ReadOK: []int{3}},
		{Name: "meta empty", Break: sqlBreak(`UPDATE loom_checkpoints SET meta = ''::bytea WHERE thread = $1 AND seq = 4`), Bad: 4, ReadOK: []int{3}},
		{Name: "delta truncated", Break: sqlBreak(`UPDATE loom_checkpoints SET state = substr(state, 1, 1) WHERE thread = $1 AND seq = 2`), Bad: 2, ReadOK: []int{0, 1}},
		{Name: "delta empty", Break: sqlBreak(`UPDATE loom_checkpoints SET state = ''::bytea WHERE thread = $1 AND seq = 2`), Bad: 2, ReadOK: []int{1}},
		{Name: "delta past its base", Break: sqlBreak(`UPDATE loom_checkpoints SET state = '\xffff0300'::bytea WHERE thread = $1 AND seq = 2`), Bad: 2, ReadOK: []int{1}},
		{Name: "full base missing", Break: sqlBreak(`DELETE FROM loom_checkpoints WHERE thread = $1 AND seq = 0`), Bad: 1},
		{Name: "full flag lost", Break: sqlBreak(`UPDATE loom_checkpoints SET is_full = false WHERE thread = $1 AND seq = 0`), Bad: 0},
		{Name: "row missing", Break: sqlBreak(`DELETE FROM loom_checkpoints WHERE thread = $1 AND seq = 2`), Bad: 3, ReadOK: []int{0, 1}},
		{Name: "parent rewritten", Break: sqlBreak(`UPDATE loom_checkpoints SET parent_id = 'elsewhere' WHERE thread = $1 AND seq = 3`), Bad: 3, ReadOK: []int{2}},
	})
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

// Statements given with WithWrites commit with the checkpoint, in its
// transaction: a checkpoint refused as a conflict writes nothing of
// theirs (they are conditional on its row), and a statement that fails
// takes the checkpoint with it, and Put says so.
func TestWithWrites(t *testing.T) {
	u := storetest.PostgresURL(t)
	s := open(t, u)
	conn := rawConn(t, u)
	ctx := t.Context()
	if _, err := conn.Exec(ctx, `CREATE TABLE companion (cp text PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	var outcomes []error
	with := func(fail bool) postgres.With {
		return func(b *pgx.Batch, cp *checkpoint.Checkpoint) func(error) {
			if fail {
				b.Queue(`INSERT INTO companion (cp) VALUES ('first')`) // already there
			} else {
				b.Queue(`INSERT INTO companion (cp) SELECT $2 WHERE EXISTS (SELECT 1 FROM loom_checkpoints WHERE thread = $1 AND id = $2)`, cp.Thread, cp.ID)
			}
			return func(err error) { outcomes = append(outcomes, err) }
		}
	}
	put := func(fail bool, cp *checkpoint.Checkpoint) error {
		return s.Put(postgres.WithWrites(ctx, with(fail)), cp)
	}
	companions := func() []string {
		rows, err := conn.Query(ctx, `SELECT cp FROM companion ORDER BY cp`)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	first := &checkpoint.Checkpoint{Thread: "t", ID: "first", State: []byte(`{}`)}
	if err := put(false, first); err != nil {
		t.Fatalf("put first: %v", err)
	}
	second := &checkpoint.Checkpoint{Thread: "t", ID: "second", ParentID: "first", Seq: 1, State: []byte(`{}`)}
	if err := put(false, second); err != nil {
		t.Fatalf("put second: %v", err)
	}
	stale := &checkpoint.Checkpoint{Thread: "t", ID: "stale", ParentID: "first", Seq: 1, State: []byte(`{}`)}
	if err := put(false, stale); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("put on a parent that is no longer the head: %v, want ErrConflict", err)
	}
	third := &checkpoint.Checkpoint{Thread: "t", ID: "third", ParentID: "second", Seq: 2, State: []byte(`{}`)}
	if err := put(true, third); err == nil {
		t.Fatal("put whose companion statement fails: no error")
	}
	if got := strings.Join(companions(), ","); got != "first,second" {
		t.Errorf("companion rows %q, want first,second", got)
	}
	if head, err := s.Get(ctx, "t", ""); err != nil || head.ID != "second" {
		t.Errorf("head after the failed put: %v %v, want second", head, err)
	}
	if len(outcomes) != 4 || outcomes[0] != nil || outcomes[1] != nil || !errors.Is(outcomes[2], checkpoint.ErrConflict) || outcomes[3] == nil {
		t.Errorf("outcomes told to the companions: %v, want nil, nil, a conflict, an error", outcomes)
	}
	// The thread goes on from its head.
	if err := put(false, third); err != nil {
		t.Fatalf("put third again: %v", err)
	}
	if got := strings.Join(companions(), ","); got != "first,second,third" {
		t.Errorf("companion rows %q, want first,second,third", got)
	}
}
