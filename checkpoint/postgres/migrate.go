package postgres

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
)

// component names this package's rows in loom_schema_migrations, which
// other parts of Loom that keep tables in Postgres may share.
const component = "checkpoint"

// migrationLock is the key of the transaction-scoped advisory lock that
// migrations hold, so that savers opening a new database at once apply
// each migration once.
const migrationLock int64 = 0x6c6f6f6d_63700001 // "loom" "cp" 1

const migrationsTable = `
CREATE TABLE IF NOT EXISTS loom_schema_migrations (
	component  text        NOT NULL,
	version    integer     NOT NULL,
	name       text        NOT NULL,
	applied_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (component, version)
)`

// migration is one step of the schema. Versions start at 1 and follow
// each other without gaps; a released migration never changes.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations is the schema's history, oldest first.
//
// Version 1: one row per checkpoint. A row's state is the full state
// (is_full) or a stored.Diff delta against the state of the row with
// seq - 1; meta holds the remaining fields as JSON (see metaDoc), as bytes
// so that it comes back exactly as written.
var migrations = []migration{
	{1, "create loom_checkpoints", `
CREATE TABLE loom_checkpoints (
	thread    text    NOT NULL,
	seq       bigint  NOT NULL,
	id        text    NOT NULL,
	parent_id text    NOT NULL,
	step      bigint  NOT NULL,
	is_full   boolean NOT NULL,
	state     bytea   NOT NULL,
	meta      bytea   NOT NULL,
	CONSTRAINT loom_checkpoints_pkey PRIMARY KEY (thread, seq),
	CONSTRAINT loom_checkpoints_id UNIQUE (thread, id)
);
CREATE INDEX loom_checkpoints_full ON loom_checkpoints (thread, seq) WHERE is_full;
`},
}

// SchemaVersion is the schema version this package reads and writes: the
// version of its last migration.
const SchemaVersion = 1

// Migrate connects to the database at url and applies the migrations it
// lacks, in one transaction, then disconnects. Open does the same; Migrate
// is for running them ahead of time, as a deploy step. A database whose
// schema is newer than SchemaVersion is left alone and gives an error.
func Migrate(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("checkpoint postgres migrate: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := migrate(ctx, conn); err != nil {
		return fmt.Errorf("checkpoint postgres migrate %s:%d/%s: %w", conn.Config().Host, conn.Config().Port, conn.Config().Database, err)
	}
	return nil
}

// migrate brings the schema on conn up to SchemaVersion.
func migrate(ctx context.Context, conn *pgx.Conn) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin migration: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLock); err != nil {
		return fmt.Errorf("lock migrations: %w", err)
	}
	if _, err := tx.Exec(ctx, migrationsTable); err != nil {
		return fmt.Errorf("create loom_schema_migrations: %w", err)
	}
	var have int
	err = tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM loom_schema_migrations WHERE component = $1", component).Scan(&have)
	if err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if have > SchemaVersion {
		return fmt.Errorf("schema version %d is newer than this build's %d: upgrade Loom", have, SchemaVersion)
	}
	if have == SchemaVersion {
		return nil
	}
	for _, m := range migrations[have:] {
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO loom_schema_migrations (component, version, name) VALUES ($1, $2, $3)", component, m.version, m.name); err != nil {
			return fmt.Errorf("record migration %d: %w", m.version, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit migrations: %w", err)
	}
	for _, m := range migrations[have:] {
		slog.DebugContext(ctx, "checkpoint postgres: applied migration", "version", m.version, "name", m.name)
	}
	return nil
}
