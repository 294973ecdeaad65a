package report

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/loomkit/loom/store"
)

// errNotFound is a missing upload or version.
var errNotFound = errors.New("report: not found")

// Upload is a file uploaded to a thread.
type Upload struct {
	ID      string    `json:"id"`
	Thread  string    `json:"thread_id"`
	Name    string    `json:"name"`
	Kind    string    `json:"kind"`
	Size    int       `json:"size"`
	Created time.Time `json:"created_at"`
	Data    []byte    `json:"-"`
}

// Version is a template a turn finished with.
type Version struct {
	Thread  string    `json:"thread_id"`
	Number  int       `json:"version"`
	Created time.Time `json:"created_at"`
	Intent  string    `json:"intent"`
	Status  string    `json:"status"`
	SSIM    float64   `json:"ssim,omitempty"`
	JRXML   string    `json:"-"`
}

// Store keeps the agent's uploads, versions and past corrections.
type Store interface {
	PutUpload(ctx context.Context, u Upload) error
	// Upload returns upload id of thread.
	Upload(ctx context.Context, thread, id string) (Upload, error)
	// AddVersion records v as the thread's next version and returns its
	// number; key makes it idempotent (a step that runs again records
	// nothing new and gets the number it had).
	AddVersion(ctx context.Context, key string, v Version) (int, error)
	// Versions lists a thread's versions, oldest first, without their
	// templates.
	Versions(ctx context.Context, thread string) ([]Version, error)
	// Version returns version n of thread, with its template.
	Version(ctx context.Context, thread string, n int) (Version, error)
	// AddErrorCase records a correction that worked; ErrorCases lists them.
	AddErrorCase(ctx context.Context, c errorCase) error
	ErrorCases(ctx context.Context) ([]errorCase, error)
}

// migrations are the agent's tables on Loom's database.
var migrations = []store.Migration{{
	Version: 1,
	Name:    "uploads, versions and past corrections",
	SQLite: `CREATE TABLE report_uploads (
	id TEXT NOT NULL PRIMARY KEY, thread TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL,
	size INTEGER NOT NULL, created TEXT NOT NULL, data BLOB NOT NULL);
CREATE INDEX report_uploads_thread ON report_uploads (thread);
CREATE TABLE report_versions (
	thread TEXT NOT NULL, version INTEGER NOT NULL, step_key TEXT NOT NULL, created TEXT NOT NULL,
	intent TEXT NOT NULL, status TEXT NOT NULL, ssim REAL NOT NULL, jrxml TEXT NOT NULL,
	PRIMARY KEY (thread, version), UNIQUE (step_key));
CREATE TABLE report_error_cases (id INTEGER PRIMARY KEY AUTOINCREMENT, error TEXT NOT NULL, fix TEXT NOT NULL, created TEXT NOT NULL);`,
	Postgres: `CREATE TABLE report_uploads (
	id TEXT NOT NULL PRIMARY KEY, thread TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL,
	size INTEGER NOT NULL, created TEXT NOT NULL, data BYTEA NOT NULL);
CREATE INDEX report_uploads_thread ON report_uploads (thread);
CREATE TABLE report_versions (
	thread TEXT NOT NULL, version INTEGER NOT NULL, step_key TEXT NOT NULL, created TEXT NOT NULL,
	intent TEXT NOT NULL, status TEXT NOT NULL, ssim DOUBLE PRECISION NOT NULL, jrxml TEXT NOT NULL,
	PRIMARY KEY (thread, version), UNIQUE (step_key));
CREATE TABLE report_error_cases (id BIGSERIAL PRIMARY KEY, error TEXT NOT NULL, fix TEXT NOT NULL, created TEXT NOT NULL);`,
}}

// sqlStore keeps the agent's data on Loom's database, beside the
// checkpoints (the tables of Migrations).
type sqlStore struct{ db *store.DB }

// newSQLStore uses db; the server applies Migrations before.
func newSQLStore(db *store.DB) *sqlStore { return &sqlStore{db: db} }

func (s *sqlStore) q(query string) string { return s.db.Dialect().Rebind(query) }

// PutUpload implements Store.
func (s *sqlStore) PutUpload(ctx context.Context, u Upload) error {
	err := s.db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO report_uploads (id, thread, name, kind, size, created, data) VALUES (?, ?, ?, ?, ?, ?, ?)`),
			u.ID, u.Thread, u.Name, u.Kind, u.Size, u.Created.UTC().Format(time.RFC3339Nano), u.Data)
		return err
	})
	if err != nil {
		return fmt.Errorf("storing upload %s: %w", u.ID, err)
	}
	return nil
}

// Upload implements Store.
func (s *sqlStore) Upload(ctx context.Context, thread, id string) (Upload, error) {
	u := Upload{ID: id, Thread: thread}
	var created string
	err := s.db.SQL().QueryRowContext(ctx, s.q(`SELECT name, kind, size, created, data FROM report_uploads WHERE id = ? AND thread = ?`), id, thread).
		Scan(&u.Name, &u.Kind, &u.Size, &created, &u.Data)
	if errors.Is(err, sql.ErrNoRows) {
		return u, fmt.Errorf("upload %s: %w", id, errNotFound)
	}
	if err != nil {
		return u, fmt.Errorf("reading upload %s: %w", id, err)
	}
	u.Created, _ = time.Parse(time.RFC3339Nano, created)
	return u, nil
}

// AddVersion implements Store.
func (s *sqlStore) AddVersion(ctx context.Context, key string, v Version) (int, error) {
	n := 0
	err := s.db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, s.q(`SELECT version FROM report_versions WHERE step_key = ?`), key).Scan(&n)
		if err == nil {
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err := tx.QueryRowContext(ctx, s.q(`SELECT COALESCE(MAX(version), 0) + 1 FROM report_versions WHERE thread = ?`), v.Thread).Scan(&n); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, s.q(`INSERT INTO report_versions (thread, version, step_key, created, intent, status, ssim, jrxml) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
			v.Thread, n, key, v.Created.UTC().Format(time.RFC3339Nano), v.Intent, v.Status, v.SSIM, v.JRXML)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("recording a version of %s: %w", v.Thread, err)
	}
	return n, nil
}

// Versions implements Store.
func (s *sqlStore) Versions(ctx context.Context, thread string) ([]Version, error) {
	rows, err := s.db.SQL().QueryContext(ctx, s.q(`SELECT version, created, intent, status, ssim FROM report_versions WHERE thread = ? ORDER BY version`), thread)
	if err != nil {
		return nil, fmt.Errorf("listing the versions of %s: %w", thread, err)
	}
	defer rows.Close()
	out := []Version{}
	for rows.Next() {
		v := Version{Thread: thread}
		var created string
		if err := rows.Scan(&v.Number, &created, &v.Intent, &v.Status, &v.SSIM); err != nil {
			return nil, fmt.Errorf("listing the versions of %s: %w", thread, err)
		}
		v.Created, _ = time.Parse(time.RFC3339Nano, created)
		out = append(out, v)
	}
	return out, rows.Err()
}

// Version implements Store.
func (s *sqlStore) Version(ctx context.Context, thread string, n int) (Version, error) {
	v := Version{Thread: thread, Number: n}
	var created string
	err := s.db.SQL().QueryRowContext(ctx, s.q(`SELECT created, intent, status, ssim, jrxml FROM report_versions WHERE thread = ? AND version = ?`), thread, n).
		Scan(&created, &v.Intent, &v.Status, &v.SSIM, &v.JRXML)
	if errors.Is(err, sql.ErrNoRows) {
		return v, fmt.Errorf("version %d: %w", n, errNotFound)
	}
	if err != nil {
		return v, fmt.Errorf("reading version %d of %s: %w", n, thread, err)
	}
	v.Created, _ = time.Parse(time.RFC3339Nano, created)
	return v, nil
}

// AddErrorCase implements Store.
func (s *sqlStore) AddErrorCase(ctx context.Context, c errorCase) error {
	err := s.db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO report_error_cases (error, fix, created) VALUES (?, ?, ?)`), c.Error, c.Fix, time.Now().UTC().Format(time.RFC3339Nano))
		return err
	})
	if err != nil {
		return fmt.Errorf("recording a correction: %w", err)
	}
	return nil
}

// ErrorCases implements Store.
func (s *sqlStore) ErrorCases(ctx context.Context) ([]errorCase, error) {
	rows, err := s.db.SQL().QueryContext(ctx, `SELECT error, fix FROM report_error_cases ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("reading past corrections: %w", err)
	}
	defer rows.Close()
	var out []errorCase
	for rows.Next() {
		var c errorCase
		if err := rows.Scan(&c.Error, &c.Fix); err != nil {
			return nil, fmt.Errorf("reading past corrections: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// memoryStore keeps the agent's data in memory, for a graph run without
// Loom's database.
type memoryStore struct {
	mu       sync.Mutex
	uploads  map[string]Upload
	versions map[string][]Version
	keys     map[string]int
	errors   []errorCase
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *memoryStore {
	return &memoryStore{uploads: map[string]Upload{}, versions: map[string][]Version{}, keys: map[string]int{}}
}

// PutUpload implements Store.
func (m *memoryStore) PutUpload(_ context.Context, u Upload) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.uploads[u.ID] = u
	return nil
}

// Upload implements Store.
func (m *memoryStore) Upload(_ context.Context, thread, id string) (Upload, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.uploads[id]
	if !ok || u.Thread != thread {
		return Upload{}, fmt.Errorf("upload %s: %w", id, errNotFound)
	}
	return u, nil
}

// AddVersion implements Store.
func (m *memoryStore) AddVersion(_ context.Context, key string, v Version) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n, ok := m.keys[key]; ok {
		return n, nil
	}
	v.Number = len(m.versions[v.Thread]) + 1
	m.versions[v.Thread] = append(m.versions[v.Thread], v)
	m.keys[key] = v.Number
	return v.Number, nil
}

// Versions implements Store.
func (m *memoryStore) Versions(_ context.Context, thread string) ([]Version, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := slices.Clone(m.versions[thread])
	for i := range out {
		out[i].JRXML = ""
	}
	if out == nil {
		out = []Version{}
	}
	return out, nil
}

// Version implements Store.
func (m *memoryStore) Version(_ context.Context, thread string, n int) (Version, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	vs := m.versions[thread]
	if n < 1 || n > len(vs) {
		return Version{}, fmt.Errorf("version %d: %w", n, errNotFound)
	}
	return vs[n-1], nil
}

// AddErrorCase implements Store.
func (m *memoryStore) AddErrorCase(_ context.Context, c errorCase) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.errors = append(m.errors, c)
	return nil
}

// ErrorCases implements Store.
func (m *memoryStore) ErrorCases(context.Context) ([]errorCase, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.errors), nil
}
