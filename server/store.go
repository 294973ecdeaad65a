package server

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Thread is a thread's record in the server's store: who owns it and how
// it stands. Its state and history are in the checkpoint saver.
type Thread struct {
	ID string
	// Owner identifies the API key that created the thread ("" without keys).
	Owner string
	// Agent is the agent whose runs the thread holds ("" before its first run).
	Agent string
	// Status is idle, busy, interrupted or error. Busy is known from the
	// server's run lanes; the stored status is the one after the last run.
	Status   string
	Metadata json.RawMessage
	// Error is the last run's error, when Status is error.
	Error   string
	Created time.Time
	Updated time.Time
}

// Thread statuses.
const (
	StatusIdle        = "idle"
	StatusBusy        = "busy"
	StatusInterrupted = "interrupted"
	StatusError       = "error"
)

// RunRecord is a finished run's record in the store.
type RunRecord struct {
	ID       string
	Thread   string
	Agent    string
	Status   string // pending, running, success, error, interrupted
	Strategy string
	Metadata json.RawMessage
	Error    string
	Created  time.Time
	Updated  time.Time
}

// storeSchema is the server's own tables, beside the saver's in the same
// SQLite file.
const storeSchema = `
CREATE TABLE IF NOT EXISTS loom_threads (
	id       TEXT    NOT NULL PRIMARY KEY,
	owner    TEXT    NOT NULL,
	agent    TEXT    NOT NULL,
	status   TEXT    NOT NULL,
	metadata TEXT    NOT NULL,
	error    TEXT    NOT NULL,
	created  INTEGER NOT NULL,
	updated  INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS loom_threads_owner ON loom_threads (owner, created);
CREATE TABLE IF NOT EXISTS loom_runs (
	id       TEXT    NOT NULL PRIMARY KEY,
	thread   TEXT    NOT NULL,
	agent    TEXT    NOT NULL,
	status   TEXT    NOT NULL,
	strategy TEXT    NOT NULL,
	metadata TEXT    NOT NULL,
	error    TEXT    NOT NULL,
	created  INTEGER NOT NULL,
	updated  INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS loom_runs_thread ON loom_runs (thread, created);
`

const threadCols = `id, owner, agent, status, metadata, error, created, updated`
const runCols = `id, thread, agent, status, strategy, metadata, error, created, updated`

// store keeps thread and run records in the SQLite file of the
// checkpoints. It reads through the saver's database and writes through
// the saver's group commit, so its writes and the checkpoints' never wait
// for each other in SQLite's busy handler.
type store struct {
	db    *sql.DB
	write func(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error
}

// sqlWriter is what the store needs of the SQLite saver.
type sqlWriter interface {
	DB() *sql.DB
	Write(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error
}

func openStore(ctx context.Context, w sqlWriter) (*store, error) {
	s := &store{db: w.DB(), write: w.Write}
	if _, err := s.exec(ctx, storeSchema); err != nil {
		return nil, fmt.Errorf("create thread store tables: %w", err)
	}
	return s, nil
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

func (s *store) exec(ctx context.Context, q string, args ...any) (res sql.Result, err error) {
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err = tx.ExecContext(ctx, q, args...)
		return err
	})
	return res, err
}

func (s *store) createThread(ctx context.Context, t *Thread) error {
	_, err := s.exec(ctx, `INSERT INTO loom_threads (`+threadCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		t.ID, t.Owner, t.Agent, t.Status, string(orEmptyObject(t.Metadata)), t.Error, ms(t.Created), ms(t.Updated))
	var se *msqlite.Error
	if errors.As(err, &se) && (se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE) {
		return fmt.Errorf("create thread %s: %w", t.ID, ErrExists)
	}
	if err != nil {
		return fmt.Errorf("create thread %s: %w", t.ID, err)
	}
	return nil
}

type scanner interface{ Scan(...any) error }

func scanThread(r scanner) (*Thread, error) {
	var t Thread
	var meta string
	var created, updated int64
	if err := r.Scan(&t.ID, &t.Owner, &t.Agent, &t.Status, &meta, &t.Error, &created, &updated); err != nil {
		return nil, err
	}
	t.Metadata, t.Created, t.Updated = json.RawMessage(meta), fromMS(created), fromMS(updated)
	return &t, nil
}

// thread returns the thread id; ErrNotFound when it does not exist.
func (s *store) thread(ctx context.Context, id string) (*Thread, error) {
	t, err := scanThread(s.db.QueryRowContext(ctx, `SELECT `+threadCols+` FROM loom_threads WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("thread %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read thread %s: %w", id, err)
	}
	return t, nil
}

// threadQuery selects threads of one owner.
type threadQuery struct {
	IDs      []string
	Status   string
	Metadata map[string]json.RawMessage
	Limit    int
	Offset   int
	SortBy   string // thread_id, status, created_at, updated_at
	Desc     bool
}

func (q *threadQuery) where(owner string) (string, []any) {
	var b strings.Builder
	args := []any{owner}
	b.WriteString(` WHERE owner = ?`)
	if q.Status != "" {
		b.WriteString(` AND status = ?`)
		args = append(args, q.Status)
	}
	if len(q.IDs) > 0 {
		b.WriteString(` AND id IN (?` + strings.Repeat(`, ?`, len(q.IDs)-1) + `)`)
		for _, id := range q.IDs {
			args = append(args, id)
		}
	}
	for _, k := range sortedKeys(q.Metadata) {
		b.WriteString(` AND json_extract(metadata, ?) IS json_extract(?, '$')`)
		args = append(args, `$."`+strings.ReplaceAll(k, `"`, `""`)+`"`, string(q.Metadata[k]))
	}
	return b.String(), args
}

func (s *store) searchThreads(ctx context.Context, owner string, q threadQuery) ([]*Thread, error) {
	where, args := q.where(owner)
	col := map[string]string{"thread_id": "id", "status": "status", "updated_at": "updated", "state_updated_at": "updated"}[q.SortBy]
	if col == "" {
		col = "created"
	}
	dir := " ASC"
	if q.Desc {
		dir = " DESC"
	}
	if q.Limit <= 0 {
		q.Limit = 10
	}
	args = append(args, q.Limit, q.Offset)
	rows, err := s.db.QueryContext(ctx, `SELECT `+threadCols+` FROM loom_threads`+where+` ORDER BY `+col+dir+`, id`+dir+` LIMIT ? OFFSET ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("search threads: %w", err)
	}
	defer rows.Close()
	var out []*Thread
	for rows.Next() {
		t, err := scanThread(rows)
		if err != nil {
			return nil, fmt.Errorf("search threads: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search threads: %w", err)
	}
	return out, nil
}

func (s *store) countThreads(ctx context.Context, owner string, q threadQuery) (int, error) {
	where, args := q.where(owner)
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM loom_threads`+where, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count threads: %w", err)
	}
	return n, nil
}

func (s *store) setThreadMetadata(ctx context.Context, id string, meta json.RawMessage) error {
	if _, err := s.exec(ctx, `UPDATE loom_threads SET metadata = ?, updated = ? WHERE id = ?`, string(meta), ms(time.Now()), id); err != nil {
		return fmt.Errorf("update thread %s: %w", id, err)
	}
	return nil
}

func (s *store) deleteThread(ctx context.Context, id string) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for _, q := range []string{`DELETE FROM loom_runs WHERE thread = ?`, `DELETE FROM loom_threads WHERE id = ?`} {
			if _, err := tx.ExecContext(ctx, q, id); err != nil {
				return fmt.Errorf("delete thread %s: %w", id, err)
			}
		}
		return nil
	})
}

// finishRun records a finished run and its thread's new status in one
// transaction.
func (s *store) finishRun(ctx context.Context, r *RunRecord, threadStatus string) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return recordRun(ctx, tx, r, threadStatus)
	})
}

func recordRun(ctx context.Context, tx *sql.Tx, r *RunRecord, threadStatus string) error {
	threadErr := ""
	if threadStatus == StatusError {
		threadErr = r.Error
	}
	if _, err := tx.ExecContext(ctx, `UPDATE loom_threads SET status = ?, agent = ?, error = ?, updated = ? WHERE id = ?`,
		threadStatus, r.Agent, threadErr, ms(r.Updated), r.Thread); err != nil {
		return fmt.Errorf("record run %s: update thread: %w", r.ID, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO loom_runs (`+runCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Thread, r.Agent, r.Status, r.Strategy, string(orEmptyObject(r.Metadata)), r.Error, ms(r.Created), ms(r.Updated)); err != nil {
		return fmt.Errorf("record run %s: %w", r.ID, err)
	}
	return nil
}

func scanRun(r scanner) (*RunRecord, error) {
	var rr RunRecord
	var meta string
	var created, updated int64
	if err := r.Scan(&rr.ID, &rr.Thread, &rr.Agent, &rr.Status, &rr.Strategy, &meta, &rr.Error, &created, &updated); err != nil {
		return nil, err
	}
	rr.Metadata, rr.Created, rr.Updated = json.RawMessage(meta), fromMS(created), fromMS(updated)
	return &rr, nil
}

func (s *store) run(ctx context.Context, thread, id string) (*RunRecord, error) {
	r, err := scanRun(s.db.QueryRowContext(ctx, `SELECT `+runCols+` FROM loom_runs WHERE id = ? AND thread = ?`, id, thread))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", id, err)
	}
	return r, nil
}

func (s *store) listRuns(ctx context.Context, thread string, limit, offset int) ([]*RunRecord, error) {
	if limit <= 0 {
		limit = 10
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+runCols+` FROM loom_runs WHERE thread = ? ORDER BY created DESC, id DESC LIMIT ? OFFSET ?`, thread, limit, offset)
	if err != nil {
		return nil, fmt.Errorf("list runs of %s: %w", thread, err)
	}
	defer rows.Close()
	var out []*RunRecord
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("list runs of %s: %w", thread, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func (s *store) deleteRun(ctx context.Context, thread, id string) error {
	res, err := s.exec(ctx, `DELETE FROM loom_runs WHERE id = ? AND thread = ?`, id, thread)
	if err != nil {
		return fmt.Errorf("delete run %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	return nil
}

func orEmptyObject(b json.RawMessage) json.RawMessage {
	if len(b) == 0 || string(b) == "null" {
		return json.RawMessage(`{}`)
	}
	return b
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
