// Package store gives Loom's parts one SQL database for their data, the
// database that holds the checkpoints: on one machine a SQLite file, past
// one machine PostgreSQL shared by every replica. One URL picks which
// (see Open); sessions, schedules, orders, the server's threads and runs —
// every component keeps its tables there, beside the checkpoints, and
// versions them with Migrate.
//
// A DB gives a *sql.DB for reads (modernc.org/sqlite, or pgx's
// database/sql driver on the shared pgx pool), the Dialect for the few
// places where the SQL differs, and Write for transactions: on SQLite
// they go through the checkpoint saver's group commit, so a process's
// writes never wait for each other in SQLite's busy handler; on Postgres
// they are plain transactions.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/checkpoint/postgres"
	"github.com/loomkit/loom/checkpoint/sqlite"
	"github.com/loomkit/loom/seal"
)

// Sentinel errors that callers branch on.
var (
	// ErrUnsupported: the URL names a database this package cannot open.
	ErrUnsupported = errors.New("unsupported database URL")
	// ErrSchemaNewer: the database holds a newer version of a
	// component's tables than this build knows.
	ErrSchemaNewer = errors.New("database schema is newer than this build")
	// ErrUnavailable marks the errors of Write, and on Postgres of
	// Saver's methods, that say the database could not be reached (see
	// IsUnavailable), so that a caller running user code (a graph's
	// nodes) can tell them from the code's own errors: a step that failed
	// because its checkpoint could not be written may run again; one whose
	// node failed may not.
	ErrUnavailable = errors.New("database unavailable")
)

// DefaultFile is the SQLite file an empty URL names.
const DefaultFile = "loom.db"

// defaultPoolConns is the size of the Postgres connection pool when the
// URL does not set pool_max_conns (pgx's default, four on a small
// machine, is too few for a server running many runs at once).
const defaultPoolConns = 20

// DB is a database for checkpoints and app data. It is safe for
// concurrent use. Close it when done.
type DB struct {
	dialect Dialect
	where   string // for messages: the file, or host:port/database
	sql     *sql.DB
	saver   checkpoint.Saver
	write   func(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error
	pool    *pgxpool.Pool // Postgres only
	close   func() error
	codec   seal.Codec // nil: data stored in the clear
}

// Option configures Open.
type Option func(*DB)

// WithCodec seals what is stored at rest with c: the checkpoints (see
// checkpoint.Sealed) and the long-term store's items, which take it from
// Codec. A nil c stores them in the clear.
func WithCodec(c seal.Codec) Option {
	return func(db *DB) { db.codec = c }
}

// Resolve says which database url names: a SQLite file (a plain path,
// "sqlite:///abs/path.db", "sqlite://rel/path.db" or "file:path.db"; ""
// is DefaultFile), with its path, or PostgreSQL ("postgres://…",
// "postgresql://…"), with path "". Other schemes give an error wrapping
// ErrUnsupported.
func Resolve(dbURL string) (Dialect, string, error) {
	if dbURL == "" {
		return SQLite, DefaultFile, nil
	}
	scheme, rest, ok := strings.Cut(dbURL, ":")
	if !ok || strings.ContainsAny(scheme, `/\.`) || len(scheme) < 2 {
		return SQLite, dbURL, nil // a plain path (a one-letter "scheme" is a Windows drive)
	}
	switch strings.ToLower(scheme) {
	case "sqlite", "sqlite3", "file":
		path := strings.TrimPrefix(rest, "//")
		if u, err := url.PathUnescape(path); err == nil {
			path = u
		}
		if path == "" || strings.Contains(path, "?") {
			return SQLite, "", fmt.Errorf("database URL %q: want sqlite:///path/to/file.db with no query", dbURL)
		}
		return SQLite, path, nil
	case "postgres", "postgresql":
		return Postgres, "", nil
	}
	return "", "", fmt.Errorf("database URL scheme %q: %w (want sqlite:///path, a plain path, or postgres://…)", scheme, ErrUnsupported)
}

// Open opens the database url names (see Resolve) with its checkpoint
// saver, creating the file or the saver's tables when they are missing.
// A Postgres URL is a pgx connection string; its search_path picks the
// schema for every table, and pool_max_conns the pool size (default 20):
//
//	postgres://loom@db.internal:5432/app?sslmode=disable&search_path=loom
//
// WithCodec seals the checkpoints and store items at rest.
func Open(ctx context.Context, dbURL string, opts ...Option) (*DB, error) {
	db, err := open(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	for _, o := range opts {
		o(db)
	}
	if db.codec != nil {
		db.saver = checkpoint.Sealed(db.saver, db.codec)
	}
	return db, nil
}

func open(ctx context.Context, dbURL string) (*DB, error) {
	d, path, err := Resolve(dbURL)
	if err != nil {
		return nil, fmt.Errorf("store open: %w", err)
	}
	if d == SQLite {
		s, err := sqlite.Open(ctx, path)
		if err != nil && IsUnavailable(err) && !isBusy(err) {
			return nil, fmt.Errorf("store open: the database %s cannot be written (check the permissions of the file and of its folder, and the free disk space): %w", path, mark(err))
		}
		if err != nil {
			return nil, fmt.Errorf("store open: %w", err)
		}
		return &DB{dialect: SQLite, where: path, sql: s.DB(), saver: s, write: s.Write, close: s.Close}, nil
	}
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, fmt.Errorf("store open: parse Postgres URL: %w", err)
	}
	if !strings.Contains(dbURL, "pool_max_conns") {
		cfg.MaxConns = max(cfg.MaxConns, defaultPoolConns)
	}
	where := fmt.Sprintf("%s:%d/%s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store open %s: %w", where, err)
	}
	s, err := postgres.New(ctx, pool)
	if err != nil && IsReadOnly(err) {
		pool.Close()
		return nil, fmt.Errorf("store open: the database %s cannot be written (it is read-only: a standby, or default_transaction_read_only is on): %w", where, mark(err))
	}
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("store open %s: %w", where, err)
	}
	db := &DB{dialect: Postgres, where: where, sql: stdlib.OpenDBFromPool(pool), saver: marked{s}, pool: pool}
	db.write = db.pgWrite
	db.close = func() error {
		err := db.sql.Close()
		pool.Close()
		return err
	}
	return db, nil
}

// Dialect returns the database's SQL dialect.
func (db *DB) Dialect() Dialect { return db.dialect }

// String names the database for messages: "sqlite loom.db",
// "postgres 127.0.0.1:5432/app".
func (db *DB) String() string { return string(db.dialect) + " " + db.where }

// Path returns the file a SQLite database is kept in, or "" for
// PostgreSQL.
func (db *DB) Path() string {
	if db == nil || db.dialect != SQLite {
		return ""
	}
	return db.where
}

// SQL returns the database for reads. Write with Write.
func (db *DB) SQL() *sql.DB { return db.sql }

// Codec returns the codec that seals data at rest (see WithCodec), or
// nil when data is stored in the clear.
func (db *DB) Codec() seal.Codec { return db.codec }

// Saver returns the checkpoint saver on the database: on SQLite the
// *sqlite.Saver itself (whose DB and Write are this DB's), on Postgres
// one whose errors wrap ErrUnavailable when the database is unreachable;
// either wrapped by checkpoint.Sealed when Open was given WithCodec.
func (db *DB) Saver() checkpoint.Saver { return db.saver }

// Pool returns the pgx pool the DB runs on, for code that needs pgx
// itself (a job queue, LISTEN); nil on SQLite.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Write runs fn in a transaction and commits it, or undoes fn's changes
// when fn returns an error, which Write returns. fn must not commit or
// roll back tx. On SQLite the transaction is shared with other writes of
// the process (a group commit, fn's part in a savepoint); on Postgres it
// is fn's own, and it may run fn again when the first try failed before
// anything reached the database or on a serialization failure.
func (db *DB) Write(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	return mark(db.write(ctx, fn))
}

func (db *DB) pgWrite(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	for try := 1; ; try++ {
		err := db.pgTx(ctx, fn)
		if err == nil || try == 3 || !retryable(err) {
			return err
		}
	}
}

func (db *DB) pgTx(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store begin: %w", err)
	}
	if err := fn(ctx, tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store commit: %w", err)
	}
	return nil
}

// retryable reports whether a transaction that failed with err may run
// again: nothing reached the server, or Postgres asks for a retry.
func retryable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "40001" || pe.Code == "40P01" // serialization_failure, deadlock_detected
	}
	return pgconn.SafeToRetry(err)
}

// Close closes the database and its saver.
func (db *DB) Close() error {
	if err := db.close(); err != nil {
		return fmt.Errorf("store close %s: %w", db, err)
	}
	return nil
}

// marked is a checkpoint saver whose errors that say the database could
// not be reached wrap ErrUnavailable.
type marked struct{ s checkpoint.BlobSealer }

// SealBlobs makes the saver underneath seal what it stores, so that a
// sealed thread keeps its deltas (see checkpoint.BlobSealer).
func (m marked) SealBlobs(c seal.Codec) { m.s.SealBlobs(c) }

func (m marked) Put(ctx context.Context, cp *checkpoint.Checkpoint) error {
	return mark(m.s.Put(ctx, cp))
}

func (m marked) Get(ctx context.Context, thread, id string) (*checkpoint.Checkpoint, error) {
	cp, err := m.s.Get(ctx, thread, id)
	return cp, mark(err)
}

func (m marked) List(ctx context.Context, thread string, limit int) ([]*checkpoint.Checkpoint, error) {
	cps, err := m.s.List(ctx, thread, limit)
	return cps, mark(err)
}

func (m marked) DeleteThread(ctx context.Context, thread string) error {
	return mark(m.s.DeleteThread(ctx, thread))
}

// TrimHistory deletes the checkpoints of thread older than its newest
// keep through the saver underneath (the server's history policy calls
// it); an error when that saver has no TrimHistory.
func (m marked) TrimHistory(ctx context.Context, thread string, keep int) (int, error) {
	t, ok := m.s.(interface {
		TrimHistory(ctx context.Context, thread string, keep int) (int, error)
	})
	if !ok {
		return 0, fmt.Errorf("trim %s: %T cannot delete checkpoints", thread, m.s)
	}
	n, err := t.TrimHistory(ctx, thread, keep)
	return n, mark(err)
}

// unavailable is an error that IsUnavailable holds for, marked.
type unavailable struct{ err error }

func (u *unavailable) Error() string   { return u.err.Error() }
func (u *unavailable) Unwrap() []error { return []error{ErrUnavailable, u.err} }

func mark(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) || !IsUnavailable(err) {
		return err
	}
	return &unavailable{err}
}
