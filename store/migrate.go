package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Migration is one version of a component's tables. A component's
// migrations are numbered from 1 without gaps, and a released one never
// changes; the database records which it has applied (in
// loom_schema_migrations, beside the checkpoint saver's own rows).
type Migration struct {
	Version int
	Name    string
	// SQL is the statements for both dialects; SQLite or Postgres, when
	// set, replace it for that dialect.
	SQL, SQLite, Postgres string
	// Present, when set, says whether the database already has what this
	// migration makes although no migration was recorded: tables an
	// earlier build made before it declared its migrations. Migrate then
	// records the migration without running it. HasColumn makes the
	// usual one.
	Present func(ctx context.Context, tx *sql.Tx, d Dialect) (bool, error)
}

// HasColumn is a Migration.Present that holds when table has column.
func HasColumn(table, column string) func(context.Context, *sql.Tx, Dialect) (bool, error) {
	return func(ctx context.Context, tx *sql.Tx, d Dialect) (bool, error) {
		q := "SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 AND column_name = $2"
		if d == SQLite {
			q = "SELECT count(*) FROM pragma_table_info(?1) WHERE name = ?2"
		}
		var n int
		if err := tx.QueryRowContext(ctx, q, table, column).Scan(&n); err != nil {
			return false, fmt.Errorf("look for column %s.%s: %w", table, column, err)
		}
		return n > 0, nil
	}
}

func (m *Migration) sqlFor(d Dialect) string {
	switch {
	case d == SQLite && m.SQLite != "":
		return m.SQLite
	case d == Postgres && m.Postgres != "":
		return m.Postgres
	}
	return m.SQL
}

const migrationsTable = `
CREATE TABLE IF NOT EXISTS loom_schema_migrations (
	component  text    NOT NULL,
	version    integer NOT NULL,
	name       text    NOT NULL,
	applied_at %s,
	PRIMARY KEY (component, version)
)`

// Migrate applies the migrations of component that the database lacks,
// in one transaction, and records them. Replicas that start at once
// apply each migration once. A database that holds a newer version than
// the last of ms gives an error wrapping ErrSchemaNewer, and is left
// alone.
func (db *DB) Migrate(ctx context.Context, component string, ms []Migration) error {
	if len(ms) == 0 {
		return nil
	}
	for i, m := range ms {
		if m.Version != i+1 {
			return fmt.Errorf("store migrate %s: migration %d has version %d; versions go 1, 2, 3 … without gaps", component, i+1, m.Version)
		}
	}
	var applied []Migration
	err := db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		applied = nil
		if db.dialect == Postgres {
			// Held to the end of the transaction: one replica migrates, the
			// others wait and then find nothing to do.
			h := fnv.New64a()
			h.Write([]byte("loom migrate " + component))
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", int64(h.Sum64())); err != nil {
				return fmt.Errorf("lock: %w", err)
			}
		}
		col := "timestamptz NOT NULL DEFAULT now()"
		if db.dialect == SQLite {
			col = "text NOT NULL DEFAULT CURRENT_TIMESTAMP"
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(migrationsTable, col)); err != nil {
			return fmt.Errorf("create loom_schema_migrations: %w", err)
		}
		var have int
		q := db.dialect.Rebind("SELECT coalesce(max(version), 0) FROM loom_schema_migrations WHERE component = ?")
		if err := tx.QueryRowContext(ctx, q, component).Scan(&have); err != nil {
			return fmt.Errorf("read version: %w", err)
		}
		if have > len(ms) {
			return fmt.Errorf("version %d, this build knows %d: %w; upgrade Loom", have, len(ms), ErrSchemaNewer)
		}
		ins := db.dialect.Rebind("INSERT INTO loom_schema_migrations (component, version, name) VALUES (?, ?, ?)")
		for _, m := range ms[have:] {
			present := false
			if m.Present != nil {
				var err error
				if present, err = m.Present(ctx, tx, db.dialect); err != nil {
					return fmt.Errorf("migration %d (%s): %w", m.Version, m.Name, err)
				}
			}
			if s := m.sqlFor(db.dialect); s != "" && !present {
				if _, err := tx.ExecContext(ctx, s); err != nil {
					return fmt.Errorf("migration %d (%s): %w", m.Version, m.Name, err)
				}
			}
			if _, err := tx.ExecContext(ctx, ins, component, m.Version, m.Name); err != nil {
				return fmt.Errorf("record migration %d: %w", m.Version, err)
			}
			applied = append(applied, m)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store migrate %s on %s: %w", component, db, err)
	}
	for _, m := range applied {
		slog.DebugContext(ctx, "store: applied migration", "component", component, "version", m.Version, "name", m.Name, "database", db.String())
	}
	return nil
}

// Versions returns the version of each component's tables that the
// database holds (the checkpoint saver's too on Postgres, as
// "checkpoint").
func (db *DB) Versions(ctx context.Context) (map[string]int, error) {
	out := map[string]int{}
	rows, err := db.sql.QueryContext(ctx, "SELECT component, max(version) FROM loom_schema_migrations GROUP BY component")
	if err != nil {
		if isNoTable(err) {
			return out, nil // nothing migrated through Migrate yet
		}
		return nil, fmt.Errorf("store versions: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var c string
		var v int
		if err := rows.Scan(&c, &v); err != nil {
			return nil, fmt.Errorf("store versions: %w", err)
		}
		out[c] = v
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store versions: %w", err)
	}
	return out, nil
}

// isNoTable reports whether err says a table does not exist.
func isNoTable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "42P01" // undefined_table
	}
	return strings.Contains(err.Error(), "no such table")
}
