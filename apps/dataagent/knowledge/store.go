package knowledge

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/datasource"
	"github.com/loomkit/loom/store"
)

// Migrations are the store's tables, for SQLite and PostgreSQL alike:
// knowledge_entries (one row an entry, its fields as JSON, unique by
// owner, agent, source, kind and natural key) and knowledge_seeds (which
// owner has had which source's starting knowledge). An agent that keeps
// knowledge lists them among its server.Agent Migrations, and the server
// applies them before Build; elsewhere, db.Migrate(ctx, agent,
// Migrations) before Open. The statements are idempotent, so they adopt
// the tables of a database where an earlier build made them (recorded
// then under the component "dataagent_knowledge").
var Migrations = []store.Migration{{
	Version: 1,
	Name:    "knowledge entries and seeds",
	SQL: `
CREATE TABLE IF NOT EXISTS knowledge_entries (
	owner       TEXT NOT NULL,
	agent       TEXT NOT NULL,
	source      TEXT NOT NULL,
	kind        TEXT NOT NULL,
	id          TEXT NOT NULL,
	natural_key TEXT NOT NULL,
	doc         TEXT NOT NULL,
	created_at  TEXT NOT NULL,
	updated_at  TEXT NOT NULL,
	PRIMARY KEY (owner, id),
	UNIQUE (owner, agent, source, kind, natural_key)
);
CREATE INDEX IF NOT EXISTS knowledge_entries_list ON knowledge_entries (owner, agent, source, kind, created_at);
CREATE TABLE IF NOT EXISTS knowledge_seeds (
	owner     TEXT NOT NULL,
	agent     TEXT NOT NULL,
	source    TEXT NOT NULL,
	seeded_at TEXT NOT NULL,
	PRIMARY KEY (owner, agent, source)
);`,
}}

// Errors that callers branch on; the store's errors wrap them.
var (
	// ErrNotFound: no entry with that id and kind — or one of another
	// API key's, which a caller cannot tell apart.
	ErrNotFound = errors.New("knowledge entry not found")
	// ErrExists: an entry with the same natural key (term, title,
	// question, table and column) is there already.
	ErrExists = errors.New("knowledge entry exists already")
	// ErrQuota: the owner holds as many entries as the store allows (see
	// Store.SetMaxEntries); nothing was written.
	ErrQuota = errors.New("knowledge quota exceeded")
)

// DefaultMaxEntries is how many entries one owner may hold in a store
// unless SetMaxEntries says otherwise.
const DefaultMaxEntries = 10_000

// DefaultAgent is the agent a Store opened with no agent name keeps
// knowledge for.
const DefaultAgent = "dataagent"

// Store keeps knowledge in Loom's database (SQLite or PostgreSQL). Every
// call is scoped by the owner of the API key behind its context
// (server.Caller; "" without keys) and by the store's agent: one key
// never reads or changes another's entries. It is safe for concurrent
// use.
type Store struct {
	db         *store.DB
	agent      string
	maxEntries int

	mu       sync.RWMutex
	seeds    map[string][]Entry            // source → its starting knowledge
	dialects map[string]datasource.Dialect // nil: any source (SetSources)
	seeded   sync.Map                      // owner + "\x00" + source → true
}

// Open returns the store of agent's knowledge ("" is DefaultAgent) on
// db, which holds the Migrations.
func Open(db *store.DB, agent string) *Store {
	if agent == "" {
		agent = DefaultAgent
	}
	return &Store{db: db, agent: agent, maxEntries: DefaultMaxEntries, seeds: map[string][]Entry{}}
}

// SetMaxEntries bounds how many entries one owner may hold (n ≤ 0: no
// bound). A Create or Import that would go over it changes nothing and
// gives an error wrapping ErrQuota; starting knowledge (Seed) is not
// refused. Call it before the store is used.
func (s *Store) SetMaxEntries(n int) { s.maxEntries = n }

// checkQuota refuses, within tx, what left owner with more entries than
// the store allows.
func (s *Store) checkQuota(ctx context.Context, tx *sql.Tx, owner string) error {
	if s.maxEntries <= 0 {
		return nil
	}
	var n int
	if err := tx.QueryRowContext(ctx, s.q(`SELECT count(*) FROM knowledge_entries WHERE owner = ? AND agent = ?`), owner, s.agent).Scan(&n); err != nil {
		return fmt.Errorf("count entries: %w", err)
	}
	if n > s.maxEntries {
		return fmt.Errorf("%w: a key may hold %d entries; delete some first", ErrQuota, s.maxEntries)
	}
	return nil
}

// Seed gives every owner f's entries as the starting knowledge of
// f.Source: the first time an owner's call reads that source, they are
// imported, once per owner for the life of the database — entries the
// owner later deletes or changes stay so. A later Seed of the same
// source replaces f for owners who have not had it yet.
func (s *Store) Seed(f *File) error {
	entries, err := f.Entries()
	if err != nil {
		return fmt.Errorf("seed knowledge: %w", err)
	}
	s.mu.Lock()
	s.seeds[strings.TrimSpace(f.Source)] = entries
	s.mu.Unlock()
	return nil
}

// ensureSeeded imports the starting knowledge of source ("" for every
// seeded source) for the caller, unless the caller has had it.
func (s *Store) ensureSeeded(ctx context.Context, source string) error {
	s.mu.RLock()
	seeds := map[string][]Entry{}
	for src, entries := range s.seeds {
		if source == "" || source == src {
			seeds[src] = entries
		}
	}
	s.mu.RUnlock()
	owner := ownerOf(ctx)
	for src, entries := range seeds {
		key := owner + "\x00" + src
		if _, ok := s.seeded.Load(key); ok {
			continue
		}
		err := s.db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
			res, err := tx.ExecContext(ctx, s.q(`INSERT INTO knowledge_seeds (owner, agent, source, seeded_at) VALUES (?, ?, ?, ?)
				ON CONFLICT (owner, agent, source) DO NOTHING`), owner, s.agent, src, stamp(time.Now()))
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n == 0 {
				return err // had it already
			}
			_, err = s.importTx(ctx, tx, owner, src, entries)
			return err
		})
		if err != nil {
			return fmt.Errorf("add the starting knowledge of %s: %w", src, err)
		}
		s.seeded.Store(key, true)
	}
	return nil
}

// q writes query's ? placeholders for the database.
func (s *Store) q(query string) string { return s.db.Dialect().Rebind(query) }

// stamp is t as stored: UTC, fixed width, so that text order is time
// order.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

func parseStamp(v string) time.Time {
	t, _ := time.Parse("2006-01-02T15:04:05.000000Z", v)
	return t
}

// doc is e's fields as stored: without the id, kind, source and times,
// which have columns of their own.
func doc(e Entry) (string, error) {
	e.ID, e.Kind, e.Source, e.CreatedAt, e.UpdatedAt = "", "", "", time.Time{}, time.Time{}
	b, err := json.Marshal(e)
	return string(b), err
}

const entryColumns = `id, kind, source, doc, created_at, updated_at`

type scanner interface{ Scan(dest ...any) error }

func scanEntry(row scanner) (Entry, error) {
	var e Entry
	var kind, d, created, updated string
	if err := row.Scan(&e.ID, &kind, &e.Source, &d, &created, &updated); err != nil {
		return Entry{}, err
	}
	if err := json.Unmarshal([]byte(d), &e); err != nil {
		return Entry{}, fmt.Errorf("entry %s: %w", e.ID, err)
	}
	e.Kind = Kind(kind)
	e.CreatedAt, e.UpdatedAt = parseStamp(created), parseStamp(updated)
	return e, nil
}

// Create stores a new entry of the caller's and returns it with its id.
// An invalid entry gives an error wrapping ErrInvalid, one whose natural
// key is taken an error wrapping ErrExists.
func (s *Store) Create(ctx context.Context, e Entry) (Entry, error) {
	if err := s.ensureSeeded(ctx, e.Source); err != nil {
		return Entry{}, err
	}
	e.ID, e.CreatedAt, e.UpdatedAt = "", time.Time{}, time.Time{}
	if err := e.Validate(); err != nil {
		return Entry{}, err
	}
	if err := s.admit(&e); err != nil {
		return Entry{}, err
	}
	owner := ownerOf(ctx)
	var out Entry
	err := s.db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var created bool
		var err error
		if out, created, err = s.insert(ctx, tx, owner, e); err != nil {
			return err
		}
		if created {
			return s.checkQuota(ctx, tx, owner)
		}
		id, err := s.idByKey(ctx, tx, owner, e)
		if err == nil {
			err = fmt.Errorf("%w: %s in source %s has id %s", ErrExists, e.Label(), e.Source, id)
		}
		return err
	})
	if store.IsUnique(err) {
		err = fmt.Errorf("%w: %s in source %s", ErrExists, e.Label(), e.Source)
	}
	if err != nil {
		return Entry{}, fmt.Errorf("create %s: %w", e.Label(), err)
	}
	return out, nil
}

// insert adds e as a new entry of owner's and returns it, unless owner
// has an entry with its natural key already: then it changes nothing and
// reports created false. Writers that insert the same key at once do not
// fail: one creates it, the others find it.
func (s *Store) insert(ctx context.Context, tx *sql.Tx, owner string, e Entry) (_ Entry, created bool, _ error) {
	d, err := doc(e)
	if err != nil {
		return Entry{}, false, err
	}
	now := time.Now()
	e.ID = checkpoint.NewID()
	e.CreatedAt, e.UpdatedAt = parseStamp(stamp(now)), parseStamp(stamp(now))
	res, err := tx.ExecContext(ctx, s.q(`INSERT INTO knowledge_entries (owner, agent, source, kind, id, natural_key, doc, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (owner, agent, source, kind, natural_key) DO NOTHING`),
		owner, s.agent, e.Source, string(e.Kind), e.ID, e.Key(), d, stamp(now), stamp(now))
	if err != nil {
		return Entry{}, false, err
	}
	n, err := res.RowsAffected()
	return e, n == 1, err
}

// idByKey returns the id of the owner's entry with e's natural key, or "".
func (s *Store) idByKey(ctx context.Context, tx *sql.Tx, owner string, e Entry) (string, error) {
	var id string
	err := tx.QueryRowContext(ctx, s.q(`SELECT id FROM knowledge_entries WHERE owner = ? AND agent = ? AND source = ? AND kind = ? AND natural_key = ?`),
		owner, s.agent, e.Source, string(e.Kind), e.Key()).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return id, err
}

// Get returns the caller's entry id of kind ("" for any kind), or an
// error wrapping ErrNotFound.
func (s *Store) Get(ctx context.Context, kind Kind, id string) (Entry, error) {
	if err := s.ensureSeeded(ctx, ""); err != nil {
		return Entry{}, err
	}
	e, err := s.get(ctx, s.db.SQL(), ownerOf(ctx), kind, id)
	if err != nil {
		return Entry{}, fmt.Errorf("get %s %s: %w", kindName(kind), id, err)
	}
	return e, nil
}

func kindName(k Kind) string {
	if k == "" {
		return "entry"
	}
	return string(k)
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (s *Store) get(ctx context.Context, db querier, owner string, kind Kind, id string) (Entry, error) {
	q := `SELECT ` + entryColumns + ` FROM knowledge_entries WHERE owner = ? AND agent = ? AND id = ?`
	args := []any{owner, s.agent, id}
	if kind != "" {
		q += ` AND kind = ?`
		args = append(args, string(kind))
	}
	e, err := scanEntry(db.QueryRowContext(ctx, s.q(q), args...))
	if errors.Is(err, sql.ErrNoRows) {
		return Entry{}, ErrNotFound
	}
	return e, err
}

// Update replaces the fields of the caller's entry id with e's (its kind
// is the entry's; an empty Source keeps the entry's source) and returns
// it. Errors wrap ErrNotFound, ErrInvalid or ErrExists (e's natural key
// is another entry's).
func (s *Store) Update(ctx context.Context, id string, e Entry) (Entry, error) {
	owner := ownerOf(ctx)
	var out Entry
	err := s.db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		old, err := s.get(ctx, tx, owner, e.Kind, id)
		if err != nil {
			return err
		}
		out = e
		out.ID, out.Kind, out.CreatedAt = old.ID, old.Kind, old.CreatedAt
		if out.Source == "" {
			out.Source = old.Source
		}
		if err := out.Validate(); err != nil {
			return err
		}
		if err := s.admit(&out); err != nil {
			return err
		}
		if other, err := s.idByKey(ctx, tx, owner, out); err != nil || (other != "" && other != id) {
			if err == nil {
				err = fmt.Errorf("%w: %s in source %s has id %s", ErrExists, out.Label(), out.Source, other)
			}
			return err
		}
		d, err := doc(out)
		if err != nil {
			return err
		}
		now := time.Now()
		out.UpdatedAt = parseStamp(stamp(now))
		_, err = tx.ExecContext(ctx, s.q(`UPDATE knowledge_entries SET source = ?, natural_key = ?, doc = ?, updated_at = ? WHERE owner = ? AND id = ?`),
			out.Source, out.Key(), d, stamp(now), owner, id)
		return err
	})
	if store.IsUnique(err) {
		err = fmt.Errorf("%w: %s in source %s", ErrExists, out.Label(), out.Source)
	}
	if err != nil {
		return Entry{}, fmt.Errorf("update %s %s: %w", kindName(e.Kind), id, err)
	}
	return out, nil
}

// Delete removes the caller's entry id of kind ("" for any kind), or
// gives an error wrapping ErrNotFound.
func (s *Store) Delete(ctx context.Context, kind Kind, id string) error {
	owner := ownerOf(ctx)
	err := s.db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		q := `DELETE FROM knowledge_entries WHERE owner = ? AND agent = ? AND id = ?`
		args := []any{owner, s.agent, id}
		if kind != "" {
			q += ` AND kind = ?`
			args = append(args, string(kind))
		}
		res, err := tx.ExecContext(ctx, s.q(q), args...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return cmpErr(err, ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete %s %s: %w", kindName(kind), id, err)
	}
	return nil
}

// cmpErr is err, or else fallback.
func cmpErr(err, fallback error) error {
	if err != nil {
		return err
	}
	return fallback
}

// Filter selects entries to list; an empty field selects all.
type Filter struct {
	Source string
	Kind   Kind
}

// List returns the caller's entries that f selects, by source, kind
// (terms, documents, examples, semantic) and age.
func (s *Store) List(ctx context.Context, f Filter) ([]Entry, error) {
	if err := s.ensureSeeded(ctx, f.Source); err != nil {
		return nil, err
	}
	q := `SELECT ` + entryColumns + ` FROM knowledge_entries WHERE owner = ? AND agent = ?`
	args := []any{ownerOf(ctx), s.agent}
	if f.Source != "" {
		q += ` AND source = ?`
		args = append(args, f.Source)
	}
	if f.Kind != "" {
		q += ` AND kind = ?`
		args = append(args, string(f.Kind))
	}
	q += ` ORDER BY source, CASE kind WHEN 'term' THEN 1 WHEN 'document' THEN 2 WHEN 'example' THEN 3 ELSE 4 END, created_at, id`
	rows, err := s.db.SQL().QueryContext(ctx, s.q(q), args...)
	if err != nil {
		return nil, fmt.Errorf("list knowledge: %w", err)
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return nil, fmt.Errorf("list knowledge: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list knowledge: %w", err)
	}
	return out, nil
}

// ImportResult says what an import did.
type ImportResult struct {
	Source string `json:"source"`
	// Created, Updated and Unchanged count the file's entries.
	Created   int `json:"created"`
	Updated   int `json:"updated"`
	Unchanged int `json:"unchanged"`
}

// Import stores f's entries for the caller, all or none: an entry whose
// natural key (term, title, question, table and column) the caller has
// already is updated, others are created. Importing the same file again
// changes nothing. An invalid file gives an error wrapping ErrInvalid
// that names the entry.
func (s *Store) Import(ctx context.Context, f *File) (ImportResult, error) {
	entries, err := f.Entries()
	if err != nil {
		return ImportResult{}, fmt.Errorf("import knowledge: %w", err)
	}
	source := strings.TrimSpace(f.Source) // valid: Entries checked it
	for i := range entries {
		if err := s.admit(&entries[i]); err != nil {
			return ImportResult{}, fmt.Errorf("import knowledge: %w", err)
		}
	}
	if err := s.ensureSeeded(ctx, source); err != nil {
		return ImportResult{}, err
	}
	owner := ownerOf(ctx)
	var res ImportResult
	err = s.db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		if res, err = s.importTx(ctx, tx, owner, source, entries); err != nil || res.Created == 0 {
			return err
		}
		return s.checkQuota(ctx, tx, owner)
	})
	if err != nil {
		return ImportResult{}, fmt.Errorf("import knowledge of %s: %w", source, err)
	}
	return res, nil
}

// importTx stores entries, all of source, for owner within tx.
func (s *Store) importTx(ctx context.Context, tx *sql.Tx, owner, source string, entries []Entry) (ImportResult, error) {
	res := ImportResult{Source: source}
	for _, e := range entries {
		_, created, err := s.insert(ctx, tx, owner, e)
		if err != nil {
			return res, fmt.Errorf("%s: %w", e.Label(), err)
		}
		if created {
			res.Created++
			continue
		}
		d, err := doc(e)
		if err != nil {
			return res, err
		}
		var id, old string
		err = tx.QueryRowContext(ctx, s.q(`SELECT id, doc FROM knowledge_entries WHERE owner = ? AND agent = ? AND source = ? AND kind = ? AND natural_key = ?`),
			owner, s.agent, e.Source, string(e.Kind), e.Key()).Scan(&id, &old)
		switch {
		case err != nil:
			return res, fmt.Errorf("%s: %w", e.Label(), err)
		case old == d:
			res.Unchanged++
		default:
			if _, err := tx.ExecContext(ctx, s.q(`UPDATE knowledge_entries SET doc = ?, updated_at = ? WHERE owner = ? AND id = ?`),
				d, stamp(time.Now()), owner, id); err != nil {
				return res, fmt.Errorf("%s: %w", e.Label(), err)
			}
			res.Updated++
		}
	}
	return res, nil
}

// Export returns the caller's knowledge of source as a File, which
// Import takes back.
func (s *Store) Export(ctx context.Context, source string) (*File, error) {
	if err := checkSource(source); err != nil {
		return nil, fmt.Errorf("export knowledge: %w", err)
	}
	entries, err := s.List(ctx, Filter{Source: source})
	if err != nil {
		return nil, err
	}
	f := &File{Source: source}
	for _, e := range entries {
		e.ID, e.Source, e.CreatedAt, e.UpdatedAt = "", "", time.Time{}, time.Time{}
		switch e.Kind {
		case KindTerm:
			f.Terms = append(f.Terms, e)
		case KindDocument:
			f.Documents = append(f.Documents, e)
		case KindExample:
			f.Examples = append(f.Examples, e)
		case KindSemantic:
			f.Semantic = append(f.Semantic, e)
		}
	}
	return f, nil
}

// Sources returns the sources the caller has knowledge of and those
// SetSources named (which a caller may add knowledge for), sorted.
func (s *Store) Sources(ctx context.Context) ([]string, error) {
	if err := s.ensureSeeded(ctx, ""); err != nil {
		return nil, err
	}
	rows, err := s.db.SQL().QueryContext(ctx, s.q(`SELECT DISTINCT source FROM knowledge_entries WHERE owner = ? AND agent = ? ORDER BY source`),
		ownerOf(ctx), s.agent)
	if err != nil {
		return nil, fmt.Errorf("list knowledge sources: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var src string
		if err := rows.Scan(&src); err != nil {
			return nil, fmt.Errorf("list knowledge sources: %w", err)
		}
		out = append(out, src)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list knowledge sources: %w", err)
	}
	return s.knownSources(out), nil
}
