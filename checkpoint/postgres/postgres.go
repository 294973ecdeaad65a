// Package postgres provides a checkpoint.Saver that keeps checkpoints in a
// PostgreSQL database, through pgx and its connection pool.
//
// The table loom_checkpoints holds one row per checkpoint, keyed by thread
// and sequence number, as the SQLite saver does. Open creates it, and later
// versions of it, by the migrations recorded in loom_schema_migrations (see
// Migrate). Both tables live in the first schema on the connection's
// search_path; to keep checkpoints in their own schema, name it in the URL:
//
//	postgres://loom@db.internal:5432/app?search_path=loom
//
// A Put is one INSERT that is compare-and-set on the parent: it holds across
// any number of savers and processes on the same database. It commits on
// its own, so with the server's default synchronous_commit=on it waits for
// a WAL flush: a Put costs at least one fsync of the server's disk. Adding
// synchronous_commit=off to the URL lets commits return before the flush,
// several times faster; a crash of the server or its machine may then lose
// the last fraction of a second of checkpoints (a suffix of each thread's
// history, never a broken chain), about what the SQLite saver's
// synchronous=NORMAL risks on a power cut.
//
// A checkpoint's
// state is stored as a delta against its parent's state when the saver has
// the parent's state at hand (see stored.DeltaCache), with a full state
// every so often, so a step that appends a message to a long conversation
// stores about the size of the message. Wrapped in checkpoint.Sealed, the
// saver makes its deltas in the clear and seals each state or delta it
// stores (see SealBlobs).
package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/checkpoint/internal/stored"
	"github.com/loomkit/loom/seal"
)

// insertSQL is the compare-and-set: the row goes in only when it starts a
// thread that has no rows, or when its parent is the row at seq - 1. Since
// (thread, seq) is the primary key and history has no gaps, a parent at
// seq - 1 is the head exactly when no row at seq exists yet, and the primary
// key refuses the insert otherwise (two inserts racing for one seq: the
// second waits for the first and then fails).
//
// The parent row is locked FOR KEY SHARE, so a DeleteThread that is
// removing it either waits for this insert or makes it find no parent.
const insertSQL = `
INSERT INTO loom_checkpoints (thread, seq, id, parent_id, step, is_full, state, meta)
SELECT $1::text, $2::bigint, $3::text, $4::text, $5::bigint, $6::boolean, $7::bytea, $8::bytea
WHERE ($4::text = '' AND $2::bigint = 0
       AND NOT EXISTS (SELECT 1 FROM loom_checkpoints WHERE thread = $1::text))
   OR ($4::text <> ''
       AND EXISTS (SELECT 1 FROM loom_checkpoints
                   WHERE thread = $1::text AND seq = $2::bigint - 1 AND id = $4::text
                   FOR KEY SHARE))`

// The read queries return the rows from the last full state at or before
// the oldest wanted checkpoint up to the newest, oldest first; the last
// column says whether the row is wanted or only needed to rebuild a state.
// Each is one statement, so it reads one snapshot of the thread.
const (
	headSQL = `
SELECT seq, id, parent_id, step, is_full, state, meta,
       seq = (SELECT max(seq) FROM loom_checkpoints WHERE thread = $1)
FROM loom_checkpoints
WHERE thread = $1
  AND seq >= coalesce((SELECT max(seq) FROM loom_checkpoints WHERE thread = $1 AND is_full), 0)
ORDER BY seq`

	byIDSQL = `
SELECT seq, id, parent_id, step, is_full, state, meta, id = $2
FROM loom_checkpoints
WHERE thread = $1
  AND seq <= (SELECT seq FROM loom_checkpoints WHERE thread = $1 AND id = $2)
  AND seq >= coalesce((SELECT max(seq) FROM loom_checkpoints WHERE thread = $1 AND is_full
                       AND seq <= (SELECT seq FROM loom_checkpoints WHERE thread = $1 AND id = $2)), 0)
ORDER BY seq`

	listAllSQL = `
SELECT seq, id, parent_id, step, is_full, state, meta, true
FROM loom_checkpoints
WHERE thread = $1
ORDER BY seq`

	// $2 is the limit, > 0: rows from seq head - limit + 1 on are wanted.
	listLastSQL = `
SELECT seq, id, parent_id, step, is_full, state, meta,
       seq > (SELECT max(seq) FROM loom_checkpoints WHERE thread = $1) - $2::bigint
FROM loom_checkpoints
WHERE thread = $1
  AND seq >= coalesce((SELECT max(seq) FROM loom_checkpoints WHERE thread = $1 AND is_full
                       AND seq <= (SELECT max(seq) FROM loom_checkpoints WHERE thread = $1) - $2::bigint + 1), 0)
ORDER BY seq`

	deleteSQL = `DELETE FROM loom_checkpoints WHERE thread = $1`
)

// Constraint names from the migrations, which Put tells apart.
const (
	pkeyConstraint = "loom_checkpoints_pkey"
	idConstraint   = "loom_checkpoints_id"
)

// Saver is a checkpoint.Saver over a PostgreSQL database. It is safe for
// concurrent use; statements run on a pool of connections, each prepared
// once per connection.
type Saver struct {
	pool  *pgxpool.Pool
	own   bool // Close closes pool
	cache stored.DeltaCache
	codec seal.Codec // seals the states and deltas stored (see SealBlobs)
}

var _ checkpoint.BlobSealer = (*Saver)(nil)

// SealBlobs makes the saver seal every state and delta it stores with c,
// and open each one it reads (those stored in the clear are read as they
// are); checkpoint.Sealed calls it. Call it once, before the saver is
// used.
func (s *Saver) SealBlobs(c seal.Codec) { s.codec = c }

// Open connects to the database at url (a postgres:// URL or a key=value
// connection string, as pgx takes) and applies any migrations the database
// lacks. Close the Saver when done with it.
func Open(ctx context.Context, url string) (*Saver, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("checkpoint postgres open: parse url: %w", err)
	}
	where := fmt.Sprintf("%s:%d/%s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("checkpoint postgres open %s: %w", where, err)
	}
	s, err := New(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("checkpoint postgres open %s: %w", where, err)
	}
	s.own = true
	return s, nil
}

// New returns a Saver on pool, a pool the caller shares with other users
// of the database (an app's tables, a job queue) and closes itself, after
// applying any migrations the database lacks.
func New(ctx context.Context, pool *pgxpool.Pool) (*Saver, error) {
	err := pool.AcquireFunc(ctx, func(c *pgxpool.Conn) error { return migrate(ctx, c.Conn()) })
	if err != nil {
		return nil, fmt.Errorf("checkpoint postgres: %w", err)
	}
	return &Saver{pool: pool}, nil
}

// Close closes the pool's connections, waiting for those in use to be
// returned; a Saver made by New leaves its pool open. The Saver must not
// be used afterwards; Close may be called again and always returns nil.
func (s *Saver) Close() error {
	if s.own {
		s.pool.Close()
	}
	return nil
}

// Put implements checkpoint.Saver.
func (s *Saver) Put(ctx context.Context, cp *checkpoint.Checkpoint) error {
	if cp.ID == "" {
		return fmt.Errorf("checkpoint postgres put %s: empty checkpoint id", cp.Thread)
	}
	meta, err := stored.EncodeMeta(cp)
	if err != nil {
		return fmt.Errorf("checkpoint postgres put %s/%s: encode meta: %w", cp.Thread, cp.ID, err)
	}
	state := cp.State
	if state == nil {
		state = []byte{} // nil would be SQL NULL
	}
	blob, delta, chain := s.cache.Encode(cp.Thread, cp.ParentID, state)
	if blob, err = stored.SealBlob(s.codec, blob); err != nil {
		return fmt.Errorf("checkpoint postgres put %s/%s: %w", cp.Thread, cp.ID, err)
	}
	args := []any{cp.Thread, cp.Seq, cp.ID, cp.ParentID, int64(cp.Step), !delta, blob, meta}
	var tag pgconn.CommandTag
	if with, ok := ctx.Value(withKey{}).(With); ok {
		b := &pgx.Batch{}
		b.Queue(insertSQL, args...)
		done := with(b, cp)
		tag, err = s.send(ctx, b)
		err = putError(cp, tag, err)
		if done != nil {
			done(err)
		}
	} else {
		tag, err = s.pool.Exec(ctx, insertSQL, args...)
		err = putError(cp, tag, err)
	}
	if err != nil {
		return err
	}
	// A copy: the caller may reuse cp.State, and the cache must keep
	// exactly what the next delta is made against.
	s.cache.Remember(cp.Thread, cp.ID, bytes.Clone(state), chain)
	return nil
}

// With adds to b, after the INSERT of checkpoint cp, statements that
// are to commit with it (see WithWrites). done, when not nil, is called
// with the outcome of Put once the batch has run: nil when the
// checkpoint and the statements committed.
type With func(b *pgx.Batch, cp *checkpoint.Checkpoint) (done func(error))

type withKey struct{}

// WithWrites returns a copy of ctx in which Put sends, with each
// checkpoint, the statements that with adds: in one batch, which
// Postgres runs as one implicit transaction, so the checkpoint and what
// belongs to it take one round trip and one commit (one WAL flush). An
// error in any statement rolls back the checkpoint too, and Put returns
// it. A checkpoint refused because its parent is no longer the thread's
// head (checkpoint.ErrConflict) inserts no row without an error, so the
// statements must write nothing then: make them conditional on the
// checkpoint's row (EXISTS … loom_checkpoints WHERE thread = … AND id =
// …), which the statements after the INSERT see.
func WithWrites(ctx context.Context, with With) context.Context {
	return context.WithValue(ctx, withKey{}, with)
}

// send runs b and returns the result of its first statement, the
// checkpoint's INSERT, or the first error.
func (s *Saver) send(ctx context.Context, b *pgx.Batch) (pgconn.CommandTag, error) {
	br := s.pool.SendBatch(ctx, b)
	tag, err := br.Exec()
	for i := 1; i < b.Len() && err == nil; i++ {
		if _, err = br.Exec(); err != nil {
			err = fmt.Errorf("with the checkpoint: %w", err)
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

// putError is the error of Put for the INSERT's outcome.
func putError(cp *checkpoint.Checkpoint, tag pgconn.CommandTag, err error) error {
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23505" { // unique_violation
			switch pe.ConstraintName {
			case pkeyConstraint:
				return fmt.Errorf("checkpoint postgres put %s/%s (parent %q, seq %d): %w", cp.Thread, cp.ID, cp.ParentID, cp.Seq, checkpoint.ErrConflict)
			case idConstraint:
				return fmt.Errorf("checkpoint postgres put %s/%s: id already used in the thread", cp.Thread, cp.ID)
			}
		}
		return fmt.Errorf("checkpoint postgres put %s/%s: %w", cp.Thread, cp.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("checkpoint postgres put %s/%s (parent %q, seq %d): %w", cp.Thread, cp.ID, cp.ParentID, cp.Seq, checkpoint.ErrConflict)
	}
	return nil
}

// Get implements checkpoint.Saver.
func (s *Saver) Get(ctx context.Context, thread, id string) (*checkpoint.Checkpoint, error) {
	var rows pgx.Rows
	var err error
	if id == "" {
		rows, err = s.pool.Query(ctx, headSQL, thread)
	} else {
		rows, err = s.pool.Query(ctx, byIDSQL, thread, id)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint postgres get %s/%s: %w", thread, id, err)
	}
	r, err := s.resolveRows(thread, rows)
	if err != nil {
		return nil, fmt.Errorf("checkpoint postgres get %s/%s: %w", thread, id, err)
	}
	cp := r.Last(&s.cache, id == "")
	if cp == nil {
		return nil, fmt.Errorf("checkpoint postgres get %s/%s: %w", thread, id, checkpoint.ErrNotFound)
	}
	return cp, nil
}

// List implements checkpoint.Saver.
func (s *Saver) List(ctx context.Context, thread string, limit int) ([]*checkpoint.Checkpoint, error) {
	var rows pgx.Rows
	var err error
	if limit > 0 {
		rows, err = s.pool.Query(ctx, listLastSQL, thread, int64(limit))
	} else {
		rows, err = s.pool.Query(ctx, listAllSQL, thread)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint postgres list %s: %w", thread, err)
	}
	r, err := s.resolveRows(thread, rows)
	if err != nil {
		return nil, fmt.Errorf("checkpoint postgres list %s: %w", thread, err)
	}
	return r.NewestFirst(&s.cache), nil
}

// DeleteThread implements checkpoint.Saver.
//
// A Put racing with the delete may add its row after the DELETE took its
// snapshot (Put locks the parent row, so the DELETE waits for it); the
// DELETE is repeated until it finds nothing, so no such row outlives it.
func (s *Saver) DeleteThread(ctx context.Context, thread string) error {
	defer s.cache.Forget(thread)
	for {
		tag, err := s.pool.Exec(ctx, deleteSQL, thread)
		if err != nil {
			return fmt.Errorf("checkpoint postgres delete %s: %w", thread, err)
		}
		if tag.RowsAffected() == 0 {
			return nil
		}
	}
}

// TrimHistory deletes the checkpoints of thread older than its newest
// keep (at least 1) and returns how many it deleted. The oldest kept gets
// its full state, so that reading it needs no row before it. Puts only
// append (and lock the head, which is kept), so it is safe beside a run
// that goes on on the thread.
func (s *Saver) TrimHistory(ctx context.Context, thread string, keep int) (int, error) {
	if keep < 1 {
		return 0, fmt.Errorf("checkpoint postgres trim %s: keep %d checkpoints, want at least 1", thread, keep)
	}
	kept, err := s.List(ctx, thread, keep)
	if err != nil || len(kept) < keep {
		return 0, err
	}
	oldest := kept[len(kept)-1]
	full, err := stored.SealBlob(s.codec, oldest.State)
	if err != nil {
		return 0, fmt.Errorf("checkpoint postgres trim %s: %w", thread, err)
	}
	var n int64
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var lo pgtype.Int8
		if err := tx.QueryRow(ctx, `SELECT min(seq) FROM loom_checkpoints WHERE thread = $1`, thread).Scan(&lo); err != nil {
			return err
		}
		if !lo.Valid || lo.Int64 >= oldest.Seq {
			return nil // nothing older, or the thread is gone
		}
		if _, err := tx.Exec(ctx, `UPDATE loom_checkpoints SET is_full = true, state = $4 WHERE thread = $1 AND seq = $2 AND id = $3`,
			thread, oldest.Seq, oldest.ID, full); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM loom_checkpoints WHERE thread = $1 AND seq < $2`, thread, oldest.Seq)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("checkpoint postgres trim %s: %w", thread, err)
	}
	return int(n), nil
}

// resolveRows feeds the rows of a read query to a resolver.
func (s *Saver) resolveRows(thread string, rows pgx.Rows) (*stored.Resolver, error) {
	defer rows.Close()
	r := &stored.Resolver{Thread: thread, Codec: s.codec}
	var rw stored.Row
	var state, meta pgtype.DriverBytes
	for rows.Next() {
		if err := rows.Scan(&rw.Seq, &rw.ID, &rw.Parent, &rw.Step, &rw.Full, &state, &meta, &rw.Keep); err != nil {
			return nil, fmt.Errorf("read row after seq %d: %w: %w", r.LastSeq(), checkpoint.ErrCorrupt, err)
		}
		rw.State, rw.Meta = state, meta
		if err := r.Add(&rw); err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return r, nil
}
