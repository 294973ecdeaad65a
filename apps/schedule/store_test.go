package schedule

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/loomkit/loom/store"
	"github.com/loomkit/loom/store/storetest"
)

// The store keeps a schedule the same way on SQLite and on Postgres: the
// sample is made once, a commit bumps the revision and records its step,
// a stale commit fails with ErrConflict and writes nothing, and the
// constraints are replaced whole.
func TestStoreOnEachDatabase(t *testing.T) {
	for _, c := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "s.db") }},
		{"postgres", func(t *testing.T) string { return storetest.PostgresURL(t) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			db, err := store.Open(ctx, c.url(t))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := db.Migrate(ctx, "schedule", Migrations); err != nil {
				t.Fatal(err)
			}
			st := NewStore(db)
			for i, want := range []bool{true, false} {
				if made, err := st.EnsureSample(ctx, "u"); err != nil || made != want {
					t.Fatalf("EnsureSample #%d: made %v, %v; want %v", i+1, made, err, want)
				}
			}
			before, err := st.Load(ctx, "u")
			if err != nil {
				t.Fatal(err)
			}
			after := before.Clone()
			after.Events[0].Name += " (moved)"
			if err := st.commit(ctx, before, after, "step-1", "done"); err != nil {
				t.Fatal(err)
			}
			if got, ok, err := st.committed(ctx, "u", "step-1"); err != nil || !ok || got != "done" {
				t.Errorf("Committed: %q %v %v, want done", got, ok, err)
			}
			stale := before.Clone()
			stale.Events[0].Name = "stale"
			if err := st.commit(ctx, before, stale, "step-2", "no"); !errors.Is(err, ErrConflict) {
				t.Errorf("stale commit: %v, want ErrConflict", err)
			}
			if _, ok, _ := st.committed(ctx, "u", "step-2"); ok {
				t.Error("the stale commit recorded its step")
			}
			now, err := st.Load(ctx, "u")
			if err != nil {
				t.Fatal(err)
			}
			if now.Revision != before.Revision+1 || canonical(now) != canonical(after) {
				t.Errorf("stored revision %d (want %d), same as committed: %v", now.Revision, before.Revision+1, canonical(now) == canonical(after))
			}
			for _, avoid := range [][]Avoid{{{Day: 3, From: 2, To: 4}}, nil} {
				if err := st.setConstraints(ctx, "u", avoid); err != nil {
					t.Fatal(err)
				}
				got, err := st.constraints(ctx, "u")
				if err != nil || len(got) != len(avoid) {
					t.Errorf("constraints after setting %v: %v %v", avoid, got, err)
				}
			}
		})
	}
}

// A database whose tables an older build made (without recording a
// migration) is adopted by Migrate, its schedules kept.
func TestMigrateAdoptsOldTables(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "old.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, Migrations[0].SQL)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	st := NewStore(db)
	if _, err := st.EnsureSample(ctx, DefaultOwner); err != nil {
		t.Fatal(err)
	}
	old, err := st.Load(ctx, DefaultOwner)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx, "schedule", Migrations); err != nil {
		t.Fatalf("migrate over the old tables: %v", err)
	}
	if v, err := db.Versions(ctx); err != nil || v["schedule"] != 1 {
		t.Errorf("versions %v %v, want schedule 1", v, err)
	}
	now, err := st.Load(ctx, DefaultOwner)
	if err != nil || canonical(now) != canonical(old) {
		t.Errorf("schedule after the migration: %v, kept: %v", err, err == nil && canonical(now) == canonical(old))
	}
}
