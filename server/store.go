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

	"github.com/loomkit/loom/memory"
	"github.com/loomkit/loom/seal"
	"github.com/loomkit/loom/store"
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
	ID     string
	Thread string
	Agent  string
	// Assistant is the assistant a key created that the run was started
	// with; "" for the agent's own.
	Assistant string
	Status    string // pending, running, success, error, interrupted
	Strategy  string
	Metadata  json.RawMessage
	Error     string
	Created   time.Time
	Updated   time.Time
}

// migrations are the server's tables, beside the checkpoints. On SQLite
// they are the tables of earlier builds (hence IF NOT EXISTS); on
// Postgres runs also carry what a replica needs to execute them (job:
// input and options as JSON; cancel: why the run was asked to stop), and
// loom_run_events holds each run's events for clients on any replica.
var migrations = []store.Migration{{
	Version: 1, Name: "threads and runs",
	SQLite: `
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
`,
	Postgres: `
CREATE TABLE loom_threads (
	id       text   NOT NULL PRIMARY KEY,
	owner    text   NOT NULL,
	agent    text   NOT NULL,
	status   text   NOT NULL,
	metadata text   NOT NULL,
	error    text   NOT NULL,
	created  bigint NOT NULL,
	updated  bigint NOT NULL
);
CREATE INDEX loom_threads_owner ON loom_threads (owner, created);
CREATE TABLE loom_runs (
	id       text   NOT NULL PRIMARY KEY,
	thread   text   NOT NULL,
	agent    text   NOT NULL,
	status   text   NOT NULL,
	strategy text   NOT NULL,
	metadata text   NOT NULL,
	error    text   NOT NULL,
	created  bigint NOT NULL,
	updated  bigint NOT NULL,
	job      bytea  NOT NULL DEFAULT '',
	cancel   text   NOT NULL DEFAULT ''
);
CREATE INDEX loom_runs_thread ON loom_runs (thread, created);
CREATE INDEX loom_runs_unfinished ON loom_runs (thread, created, id) WHERE status IN ('pending', 'running');
CREATE TABLE loom_run_events (
	run_id   text        NOT NULL,
	seq      integer     NOT NULL,
	terminal boolean     NOT NULL,
	body     bytea       NOT NULL,
	at       timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (run_id, seq)
);
CREATE INDEX loom_run_events_at ON loom_run_events (at);
`,
}, {
	// On SQLite too a run is recorded when it is accepted, with what it
	// takes to execute it, so a server that restarts finds it.
	Version: 2, Name: "runs recorded when accepted",
	SQLite: `
ALTER TABLE loom_runs ADD COLUMN job BLOB NOT NULL DEFAULT x'';
CREATE INDEX loom_runs_unfinished ON loom_runs (status, created, id) WHERE status IN ('pending', 'running');
`,
}, {
	// Each API key has its own thread ids (see threadKey): the threads
	// that keys created before are renamed to their keys, with their runs
	// and checkpoints.
	Version: 3, Name: "thread ids per key",
	SQLite: `
UPDATE checkpoints SET thread = (SELECT t.owner || '/' || t.id FROM loom_threads t WHERE t.id = checkpoints.thread)
WHERE thread IN (SELECT id FROM loom_threads WHERE owner <> '' AND instr(id, '/') = 0);
UPDATE loom_runs SET thread = (SELECT t.owner || '/' || t.id FROM loom_threads t WHERE t.id = loom_runs.thread)
WHERE thread IN (SELECT id FROM loom_threads WHERE owner <> '' AND instr(id, '/') = 0);
UPDATE loom_threads SET id = owner || '/' || id WHERE owner <> '' AND instr(id, '/') = 0;
`,
	Postgres: `
UPDATE loom_checkpoints c SET thread = t.owner || '/' || t.id FROM loom_threads t
WHERE t.id = c.thread AND t.owner <> '' AND strpos(t.id, '/') = 0;
UPDATE loom_runs r SET thread = t.owner || '/' || t.id FROM loom_threads t
WHERE t.id = r.thread AND t.owner <> '' AND strpos(t.id, '/') = 0;
UPDATE loom_threads SET id = owner || '/' || id WHERE owner <> '' AND strpos(id, '/') = 0;
`,
}, {
	// A run taken up again after its process died counts how many times
	// in a row that happened with its thread at the same checkpoint
	// (recoveries, recovered_from), recorded before it goes on, so that
	// one that kills the process each time is failed instead of run for
	// ever (see recoverRuns); loom_probe is the row readiness writes to
	// learn that the database takes writes.
	Version: 4, Name: "recoveries and write probe",
	SQL: `
ALTER TABLE loom_runs ADD COLUMN recoveries integer NOT NULL DEFAULT 0;
ALTER TABLE loom_runs ADD COLUMN recovered_from text NOT NULL DEFAULT '';
CREATE TABLE loom_probe (id integer NOT NULL PRIMARY KEY, at bigint NOT NULL);
`,
}, chatMigration, {
	// On Postgres, the River job that works a thread's runs (see
	// jobs.submit): 0 while none does.
	Version: 6, Name: "the job of a thread",
	SQLite:   `ALTER TABLE loom_threads ADD COLUMN job integer NOT NULL DEFAULT 0;`,
	Postgres: `ALTER TABLE loom_threads ADD COLUMN job bigint NOT NULL DEFAULT 0;`,
}}

// threadKey is the id under which the server keeps owner's thread id: its
// record, runs and checkpoints. Each API key has its own thread ids, so
// two keys may both have a thread "alice" and neither learns of the
// other's: a key's ids are prefixed with its owner id and "/", which no
// thread id contains. Without keys (owner "") an id is its own key.
func threadKey(owner, id string) string {
	if owner == "" {
		return id
	}
	return owner + "/" + id
}

// publicID is the thread id its owner knows for key (see threadKey).
func publicID(key string) string {
	return key[strings.LastIndexByte(key, '/')+1:]
}

const threadCols = `id, owner, agent, status, metadata, error, created, updated`
const runCols = `id, thread, agent, status, strategy, metadata, error, created, updated`

// records keeps thread and run records in the database of the
// checkpoints (see store.DB): on SQLite its writes go through the saver's
// group commit, so they and the checkpoints' never wait for each other.
type records struct {
	db *store.DB
	d  store.Dialect
	// codec, when set, seals what a run's record keeps of its input and
	// options (see encodeSpec).
	codec seal.Codec
	// ready is the last readiness check (see ready.go).
	ready readiness
	// threadStmt, on SQLite, is the read of a thread's record kept
	// prepared: every run reads its thread's, and parsing the query each
	// time cost as much as running it. nil: the query is parsed each time.
	threadStmt *sql.Stmt
}

// openRecords applies the server's migrations and checks that the
// database takes writes: a server that could only read would accept
// nothing, so it is refused at start with an error that says so.
func openRecords(ctx context.Context, db *store.DB) (*records, error) {
	if err := db.Migrate(ctx, "server", migrations); err != nil {
		if store.IsUnavailable(err) {
			return nil, cannotWrite(db, err)
		}
		return nil, fmt.Errorf("thread store tables: %w", err)
	}
	if err := migrateAssistants(ctx, db); err != nil {
		return nil, err
	}
	if err := migrateBackground(ctx, db); err != nil {
		return nil, err
	}
	if err := memory.Migrate(ctx, db); err != nil {
		return nil, fmt.Errorf("long-term store tables: %w", err)
	}
	s := &records{db: db, d: db.Dialect()}
	if err := s.probe(ctx); err != nil {
		return nil, cannotWrite(db, err)
	}
	if s.d == store.SQLite {
		// Unprepared, the read still works: the statement is an
		// optimisation only.
		s.threadStmt, _ = db.SQL().PrepareContext(ctx, selectThread)
	}
	return s, nil
}

// cannotWrite is the error of a server whose database refused a write
// at start.
func cannotWrite(db *store.DB, err error) error {
	hint := "check that the database is reachable and is not a read-only replica"
	if db.Dialect() == store.SQLite {
		hint = "check the permissions of the file and of its folder, and the free disk space"
	}
	return fmt.Errorf("the database %s cannot be written (%s): %w", db, hint, err)
}

// probe writes the database's probe row: nil when the database takes
// writes now.
func (s *records) probe(ctx context.Context) error {
	_, err := s.exec(ctx, `INSERT INTO loom_probe (id, at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET at = excluded.at`, ms(time.Now()))
	if err != nil {
		return fmt.Errorf("write probe: %w", err)
	}
	return nil
}

// q rewrites a query's ? placeholders for the dialect.
func (s *records) q(query string) string { return s.d.Rebind(query) }

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

func (s *records) exec(ctx context.Context, q string, args ...any) (res sql.Result, err error) {
	err = s.db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err = tx.ExecContext(ctx, s.q(q), args...)
		return err
	})
	return res, err
}

func (s *records) createThread(ctx context.Context, t *Thread) error {
	_, err := s.exec(ctx, `INSERT INTO loom_threads (`+threadCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		t.ID, t.Owner, t.Agent, t.Status, string(orEmptyObject(t.Metadata)), t.Error, ms(t.Created), ms(t.Updated))
	if store.IsUnique(err) {
		return fmt.Errorf("create thread %s: %w", publicID(t.ID), ErrExists)
	}
	if err != nil {
		return fmt.Errorf("create thread %s: %w", publicID(t.ID), err)
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

// selectThread reads one thread's record.
const selectThread = `SELECT ` + threadCols + ` FROM loom_threads WHERE id = ?`

// thread returns the thread id; ErrNotFound when it does not exist.
func (s *records) thread(ctx context.Context, id string) (*Thread, error) {
	var row *sql.Row
	if s.threadStmt != nil {
		row = s.threadStmt.QueryRowContext(ctx, id)
	} else {
		row = s.db.SQL().QueryRowContext(ctx, s.q(selectThread), id)
	}
	t, err := scanThread(row)
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

func (q *threadQuery) where(d store.Dialect, owner string) (string, []any) {
	var b strings.Builder
	args := []any{owner}
	b.WriteString(` WHERE owner = ?`)
	if q.Status != "" {
		b.WriteString(` AND status = ?`)
		args = append(args, q.Status)
	}
	if len(q.IDs) > 0 {
		// One parameter, a JSON array, however many ids there are: a
		// parameter per id runs into the database's limit on them.
		ids, _ := json.Marshal(q.IDs)
		if d == store.Postgres {
			b.WriteString(` AND id IN (SELECT jsonb_array_elements_text(?::jsonb))`)
		} else {
			b.WriteString(` AND id IN (SELECT value FROM json_each(?))`)
		}
		args = append(args, string(ids))
	}
	for _, k := range sortedKeys(q.Metadata) {
		if d == store.Postgres {
			b.WriteString(` AND (metadata::jsonb -> ?::text) IS NOT DISTINCT FROM ?::jsonb`)
		} else {
			// json_each compares the key itself, whatever it holds (a JSON
			// path would need it quoted).
			b.WriteString(` AND EXISTS (SELECT 1 FROM json_each(metadata) WHERE key = ? AND value IS json_extract(?, '$'))`)
		}
		args = append(args, k, string(q.Metadata[k]))
	}
	return b.String(), args
}

func (s *records) searchThreads(ctx context.Context, owner string, q threadQuery) ([]*Thread, error) {
	where, args := q.where(s.d, owner)
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
	rows, err := s.db.SQL().QueryContext(ctx, s.q(`SELECT `+threadCols+` FROM loom_threads`+where+` ORDER BY `+col+dir+`, id`+dir+` LIMIT ? OFFSET ?`), args...)
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

func (s *records) countThreads(ctx context.Context, owner string, q threadQuery) (int, error) {
	where, args := q.where(s.d, owner)
	var n int
	if err := s.db.SQL().QueryRowContext(ctx, s.q(`SELECT count(*) FROM loom_threads`+where), args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count threads: %w", err)
	}
	return n, nil
}

func (s *records) setThreadMetadata(ctx context.Context, id string, meta json.RawMessage) error {
	if _, err := s.exec(ctx, `UPDATE loom_threads SET metadata = ?, updated = ? WHERE id = ?`, string(meta), ms(time.Now()), id); err != nil {
		return fmt.Errorf("update thread %s: %w", id, err)
	}
	return nil
}

func (s *records) setThreadStatus(ctx context.Context, id, agent, status string) error {
	_, err := s.exec(ctx, `UPDATE loom_threads SET status = ?, agent = ?, updated = ? WHERE id = ?`, status, agent, ms(time.Now()), id)
	if err != nil {
		return fmt.Errorf("set thread %s status: %w", id, err)
	}
	return nil
}

func (s *records) deleteThread(ctx context.Context, id string) error {
	return s.db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for _, q := range []string{`DELETE FROM loom_runs WHERE thread = ?`, `DELETE FROM loom_chat_messages WHERE thread = ?`, `DELETE FROM loom_threads WHERE id = ?`} {
			if _, err := tx.ExecContext(ctx, s.q(q), id); err != nil {
				return fmt.Errorf("delete thread %s: %w", id, err)
			}
		}
		return nil
	})
}

// finishRun records a run that ended in this process (SQLite mode) and
// its thread's new status ("" leaves the status as it is) in one
// transaction.
func (s *records) finishRun(ctx context.Context, r *RunRecord, threadStatus string) error {
	return s.db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return recordRun(ctx, tx, r, threadStatus)
	})
}

func recordRun(ctx context.Context, tx *sql.Tx, r *RunRecord, threadStatus string) error {
	if threadStatus != "" {
		threadErr := ""
		if threadStatus == StatusError {
			threadErr = r.Error
		}
		if _, err := tx.ExecContext(ctx, `UPDATE loom_threads SET status = ?, agent = ?, error = ?, updated = ? WHERE id = ?`,
			threadStatus, r.Agent, threadErr, ms(r.Updated), r.Thread); err != nil {
			return fmt.Errorf("record run %s: update thread: %w", r.ID, err)
		}
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

func (s *records) run(ctx context.Context, thread, id string) (*RunRecord, error) {
	r, err := scanRun(s.db.SQL().QueryRowContext(ctx, s.q(`SELECT `+runCols+` FROM loom_runs WHERE id = ? AND thread = ?`), id, thread))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", id, err)
	}
	return r, nil
}

func (s *records) listRuns(ctx context.Context, thread string, limit, offset int) ([]*RunRecord, error) {
	if limit <= 0 {
		limit = 10
	}
	rows, err := s.db.SQL().QueryContext(ctx, s.q(`SELECT `+runCols+` FROM loom_runs WHERE thread = ? ORDER BY created DESC, id DESC LIMIT ? OFFSET ?`), thread, limit, offset)
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

func (s *records) deleteRun(ctx context.Context, thread, id string) error {
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
