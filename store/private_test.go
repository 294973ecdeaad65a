package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/loomkit/loom/store"
)

// The SQLite file that Open creates, and the WAL and shared-memory files
// SQLite makes beside it, are readable by their owner only: they hold
// every user's threads.
func TestSQLiteFilesArePrivate(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "loom.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE t (x integer)`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
		if m := fi.Mode().Perm(); m != 0o600 {
			t.Errorf("%s has mode %#o, want 0600", filepath.Base(f), m)
		}
	}
}

// A SQLite database that refuses writes is unavailable (a 503 for the
// server), and said to be read-only. PRAGMA query_only makes SQLite
// refuse writes with the code a read-only file gets (SQLITE_READONLY),
// whoever runs the test: as root, a file's permissions would not.
func TestReadOnlySQLiteIsUnavailable(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "loom.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	write := func(q string) error {
		return db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, q)
			return err
		})
	}
	if err := write(`CREATE TABLE t (x integer)`); err != nil {
		t.Fatal(err)
	}
	if err := write(`PRAGMA query_only = 1`); err != nil {
		t.Fatal(err)
	}
	err = write(`INSERT INTO t VALUES (1)`)
	if err == nil {
		t.Fatal("insert into a read-only database: no error")
	}
	if !store.IsUnavailable(err) || !store.IsReadOnly(err) {
		t.Errorf("IsUnavailable %v, IsReadOnly %v, want both: %v", store.IsUnavailable(err), store.IsReadOnly(err), err)
	}
	// Reads go on.
	var n int
	if err := db.SQL().QueryRowContext(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil || n != 0 {
		t.Errorf("read a read-only database: %d rows, %v", n, err)
	}
}

// PostgreSQL's refusals of a write that a retry may see pass (a
// read-only standby, a full disk) are unavailable; errors in what was
// asked are not.
func TestPostgresRefusalsAreUnavailable(t *testing.T) {
	for _, c := range []struct {
		code            string
		unavailable, ro bool
	}{
		{"25006", true, true},  // read_only_sql_transaction
		{"53100", true, false}, // disk_full
		{"57P01", true, false}, // admin_shutdown
		{"23505", false, false},
		{"42P01", false, false},
	} {
		err := fmt.Errorf("write: %w", &pgconn.PgError{Code: c.code})
		if store.IsUnavailable(err) != c.unavailable || store.IsReadOnly(err) != c.ro {
			t.Errorf("SQLSTATE %s: IsUnavailable %v, IsReadOnly %v; want %v, %v", c.code, store.IsUnavailable(err), store.IsReadOnly(err), c.unavailable, c.ro)
		}
	}
}
