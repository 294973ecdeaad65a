package store_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/store"
	"github.com/loomkit/loom/store/storetest"
)

func TestResolve(t *testing.T) {
	for _, c := range []struct {
		in      string
		dialect store.Dialect
		path    string
		err     error
	}{
		{"", store.SQLite, "loom.db", nil},
		{"data/loom.db", store.SQLite, "data/loom.db", nil},
		{"sqlite:///var/lib/loom.db", store.SQLite, "/var/lib/loom.db", nil},
		{"file:x.db", store.SQLite, "x.db", nil},
		{`C:\loom.db`, store.SQLite, `C:\loom.db`, nil},
		{"postgres://u@h/db", store.Postgres, "", nil},
		{"postgresql://u@h/db?search_path=loom", store.Postgres, "", nil},
		{"mysql://x", "", "", store.ErrUnsupported},
	} {
		d, p, err := store.Resolve(c.in)
		if d != c.dialect || p != c.path || !errors.Is(err, c.err) {
			t.Errorf("Resolve(%q) = %q, %q, %v; want %q, %q, %v", c.in, d, p, err, c.dialect, c.path, c.err)
		}
	}
	if _, _, err := store.Resolve("sqlite:///a.db?mode=ro"); err == nil {
		t.Error("a SQLite URL with a query: no error")
	}
}

func TestRebind(t *testing.T) {
	for _, c := range []struct{ in, sqlite, postgres string }{
		{"SELECT 1", "SELECT 1", "SELECT 1"},
		{"a = ? AND b IN (?, ?)", "a = ? AND b IN (?, ?)", "a = $1 AND b IN ($2, $3)"},
		{`x = '?' AND "y?" = ?`, `x = '?' AND "y?" = ?`, `x = '?' AND "y?" = $1`},
		{"json_extract(m, '$.a') = ?", "json_extract(m, '$.a') = ?", "json_extract(m, '$.a') = $1"},
	} {
		if got := store.SQLite.Rebind(c.in); got != c.sqlite {
			t.Errorf("SQLite.Rebind(%q) = %q", c.in, got)
		}
		if got := store.Postgres.Rebind(c.in); got != c.postgres {
			t.Errorf("Postgres.Rebind(%q) = %q, want %q", c.in, got, c.postgres)
		}
	}
}

// dbs opens a new database of each dialect.
func dbs(t *testing.T) map[string]*store.DB {
	out := map[string]*store.DB{}
	for name, url := range map[string]string{
		"sqlite":   "sqlite://" + filepath.Join(t.TempDir(), "s.db"),
		"postgres": storetest.PostgresURL(t),
	} {
		db, err := store.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		out[name] = db
	}
	return out
}

var notes = []store.Migration{
	{Version: 1, Name: "notes", SQL: `CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)`},
	{Version: 2, Name: "note owners",
		SQLite:   `ALTER TABLE notes ADD COLUMN owner TEXT NOT NULL DEFAULT ''`,
		Postgres: `ALTER TABLE notes ADD COLUMN owner text NOT NULL DEFAULT ''`},
}

// The same code keeps app data on both dialects: migrations apply once
// and are recorded, writes commit or roll back whole, unique violations
// are told apart, and checkpoints live in the same database.
func TestDB(t *testing.T) {
	for name, db := range dbs(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			if err := db.Migrate(ctx, "notes", notes[:1]); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if err := db.Migrate(ctx, "notes", notes); err != nil {
					t.Fatal(err)
				}
			}
			v, err := db.Versions(ctx)
			if err != nil || v["notes"] != 2 {
				t.Fatalf("versions %v, %v", v, err)
			}
			if err := db.Migrate(ctx, "notes", notes[:1]); !errors.Is(err, store.ErrSchemaNewer) {
				t.Fatalf("migrate an older list: %v, want ErrSchemaNewer", err)
			}
			if err := db.Migrate(ctx, "bad", []store.Migration{{Version: 2, Name: "gap", SQL: "SELECT 1"}}); err == nil {
				t.Fatal("migrations with a gap: no error")
			}

			ins := db.Dialect().Rebind(`INSERT INTO notes (id, body, owner) VALUES (?, ?, ?)`)
			err = db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, ins, 1, "kept", "a")
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			boom := errors.New("boom")
			err = db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
				if _, err := tx.ExecContext(ctx, ins, 2, "undone", "a"); err != nil {
					return err
				}
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatalf("write that fails: %v", err)
			}
			err = db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, ins, 1, "again", "b")
				return err
			})
			if !store.IsUnique(err) {
				t.Fatalf("duplicate key: %v, want IsUnique", err)
			}
			var n int
			if err := db.SQL().QueryRowContext(ctx, db.Dialect().Rebind(`SELECT count(*) FROM notes WHERE owner = ?`), "a").Scan(&n); err != nil || n != 1 {
				t.Fatalf("%d notes, %v; want the one kept", n, err)
			}

			cp := checkpoint.Next("t", nil, checkpoint.SourceInput)
			cp.State = []byte(`{"a":1}`)
			if err := db.Saver().Put(ctx, cp); err != nil {
				t.Fatal(err)
			}
			if got, err := db.Saver().Get(ctx, "t", ""); err != nil || got.ID != cp.ID {
				t.Fatalf("checkpoint beside the app data: %v, %v", got, err)
			}
			if (db.Pool() != nil) != (db.Dialect() == store.Postgres) {
				t.Fatalf("Pool on %s: %v", db.Dialect(), db.Pool())
			}
		})
	}
}

func TestIsUnavailable(t *testing.T) {
	ctx := context.Background()
	_, err := store.Open(ctx, "postgres://nobody@127.0.0.1:1/x?connect_timeout=1")
	if err == nil || !store.IsUnavailable(err) {
		t.Fatalf("open a server that is not there: %v; want IsUnavailable", err)
	}
	for _, err := range []error{nil, context.Canceled, errors.New("syntax error"), store.ErrSchemaNewer} {
		if store.IsUnavailable(err) {
			t.Errorf("IsUnavailable(%v) = true", err)
		}
	}
}

// A database whose tables an earlier build made, change included, before
// the migrations were declared: Migrate records the migration whose
// change is Present instead of running it again, and runs the others.
func TestMigratePresent(t *testing.T) {
	for name, db := range dbs(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			adopt := []store.Migration{notes[0], notes[1], {Version: 3, Name: "note tags",
				SQL: `ALTER TABLE notes ADD COLUMN tags TEXT NOT NULL DEFAULT ''`}}
			adopt[0].SQL = `CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)`
			adopt[1].Present = store.HasColumn("notes", "owner")
			adopt[2].Present = store.HasColumn("notes", "tags")
			// What the earlier build made by hand, with no record.
			if _, err := db.SQL().ExecContext(ctx, `CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL, owner TEXT NOT NULL DEFAULT '')`); err != nil {
				t.Fatal(err)
			}
			if err := db.Migrate(ctx, "notes", adopt); err != nil {
				t.Fatalf("migrate tables an earlier build made: %v", err)
			}
			v, err := db.Versions(ctx)
			if err != nil || v["notes"] != 3 {
				t.Fatalf("versions %v, %v; want notes 3", v, err)
			}
			// Version 3 was not present, so it ran: the column is there now.
			if _, err := db.SQL().ExecContext(ctx, `INSERT INTO notes (id, body, owner, tags) VALUES (1, 'x', 'a', 't')`); err != nil {
				t.Fatalf("version 3's column: %v", err)
			}
		})
	}
}
