package memory

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/seal"
	"github.com/loomkit/loom/store"
)

// migrations are the store's table. ns is the namespace's labels, each
// followed by "." (so a prefix is a range of ns, compared byte by byte:
// COLLATE "C" on PostgreSQL); body is the text a query searches and vec
// its embedding (NULL without an embedder); ttl and expires are in
// milliseconds, 0 for none.
var migrations = []store.Migration{{
	Version: 1, Name: "items",
	SQLite: `
CREATE TABLE loom_store_items (
	owner   TEXT    NOT NULL,
	ns      TEXT    NOT NULL,
	key     TEXT    NOT NULL,
	value   TEXT    NOT NULL,
	body    TEXT    NOT NULL,
	vec     BLOB,
	created INTEGER NOT NULL,
	updated INTEGER NOT NULL,
	ttl     INTEGER NOT NULL,
	expires INTEGER NOT NULL,
	PRIMARY KEY (owner, ns, key)
) STRICT;
CREATE INDEX loom_store_items_updated ON loom_store_items (owner, updated);
CREATE INDEX loom_store_items_expires ON loom_store_items (expires) WHERE expires > 0;
`,
	Postgres: `
CREATE TABLE loom_store_items (
	owner   text   NOT NULL,
	ns      text   COLLATE "C" NOT NULL,
	key     text   NOT NULL,
	value   text   NOT NULL,
	body    text   NOT NULL,
	vec     bytea,
	created bigint NOT NULL,
	updated bigint NOT NULL,
	ttl     bigint NOT NULL,
	expires bigint NOT NULL,
	PRIMARY KEY (owner, ns, key)
);
CREATE INDEX loom_store_items_updated ON loom_store_items (owner, updated);
CREATE INDEX loom_store_items_expires ON loom_store_items (expires) WHERE expires > 0;
`,
}}

// Migrate creates or upgrades the store's table in db.
func Migrate(ctx context.Context, db *store.DB) error {
	return db.Migrate(ctx, "store", migrations)
}

// Options configure Items.
type Options struct {
	// Embedder, when set, embeds every item's text and each search query,
	// which then ranks items by cosine; without one a query ranks them by
	// BM25.
	Embedder llm.Embedder
	// MaxItems bounds the items one API key holds (default
	// DefaultMaxItems).
	MaxItems int
	// Codec, when set, seals every item's value, the text a query
	// searches and its embedding; the owner, namespace, key and times
	// stay in the clear. Filters and queries work as on clear items (a
	// search opens each item it reads). New takes the database's codec
	// (see store.WithCodec) when Codec is nil.
	Codec seal.Codec
	now   func() time.Time // for tests
}

// Items is the long-term store of every API key, in one database
// migrated with Migrate. It is safe for concurrent use.
type Items struct {
	db   *store.DB
	d    store.Dialect
	opts Options
}

// New returns the store on db, whose table Migrate has made.
func New(db *store.DB, opts Options) *Items {
	if opts.MaxItems <= 0 {
		opts.MaxItems = DefaultMaxItems
	}
	if opts.now == nil {
		opts.now = time.Now
	}
	if opts.Codec == nil {
		opts.Codec = db.Codec()
	}
	return &Items{db: db, d: db.Dialect(), opts: opts}
}

// For returns the store of owner, the id of an API key ("" without
// keys); nil when it is nil.
func (it *Items) For(owner string) Store {
	if it == nil {
		return nil
	}
	return &keyStore{it: it, owner: owner}
}

// Sweep deletes the items whose time to live has passed, and returns how
// many. Reads never return them; Sweep gives their room back.
func (it *Items) Sweep(ctx context.Context) (int64, error) {
	var n int64
	err := it.db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, it.d.Rebind(`DELETE FROM loom_store_items WHERE expires > 0 AND expires <= ?`), it.opts.now().UnixMilli())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store sweep: %w", err)
	}
	return n, nil
}

type keyStore struct {
	it    *Items
	owner string
}

func (s *keyStore) now() int64 { return s.it.opts.now().UnixMilli() }

func (s *keyStore) Put(ctx context.Context, namespace []string, key string, value json.RawMessage, opts PutOptions) error {
	ns, err := checkLabels("namespace", namespace, false, false)
	if err == nil {
		err = checkKey(key)
	}
	if err == nil {
		err = checkValue(value)
	}
	if err == nil {
		err = checkPut(opts)
	}
	if err != nil {
		return err
	}
	stored, body, vec, err := s.it.opts.stored(ctx, value, opts)
	if err != nil {
		return fmt.Errorf("store put %s: %w", key, err)
	}
	now := s.now()
	ttl, expires := opts.TTL.Milliseconds(), int64(0)
	if opts.TTL > 0 {
		ttl = max(ttl, 1)
		expires = now + ttl
	}
	q := s.it.d.Rebind
	err = s.it.db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		// An item that expired is written anew, with a new creation time.
		res, err := tx.ExecContext(ctx, q(`UPDATE loom_store_items SET value = ?, body = ?, vec = ?, updated = ?, ttl = ?, expires = ?
WHERE owner = ? AND ns = ? AND key = ? AND (expires = 0 OR expires > ?)`),
			stored, body, vec, now, ttl, expires, s.owner, ns, key, now)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n > 0 {
			return err
		}
		// Expired items not yet swept count too (for a minute at most):
		// the count then reads the (owner, updated) index alone.
		var have int
		if err := tx.QueryRowContext(ctx, q(`SELECT count(*) FROM loom_store_items WHERE owner = ?`), s.owner).Scan(&have); err != nil {
			return err
		}
		if have >= s.it.opts.MaxItems {
			return fmt.Errorf("%w: it holds %d items, the most one API key may; delete some first", ErrFull, have)
		}
		_, err = tx.ExecContext(ctx, q(`INSERT INTO loom_store_items (owner, ns, key, value, body, vec, created, updated, ttl, expires)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (owner, ns, key) DO UPDATE SET value = excluded.value, body = excluded.body, vec = excluded.vec,
	created = excluded.created, updated = excluded.updated, ttl = excluded.ttl, expires = excluded.expires`),
			s.owner, ns, key, stored, body, vec, now, now, ttl, expires)
		return err
	})
	if err != nil {
		return fmt.Errorf("store put %s: %w", key, err)
	}
	return nil
}

func (s *keyStore) Get(ctx context.Context, namespace []string, key string, noRefresh bool) (*Item, error) {
	ns, err := checkLabels("namespace", namespace, false, false)
	if err == nil {
		err = checkKey(key)
	}
	if err != nil {
		return nil, err
	}
	now := s.now()
	var value string
	var created, updated, ttl int64
	err = s.it.db.SQL().QueryRowContext(ctx, s.it.d.Rebind(`SELECT value, created, updated, ttl FROM loom_store_items
WHERE owner = ? AND ns = ? AND key = ? AND (expires = 0 OR expires > ?)`), s.owner, ns, key, now).Scan(&value, &created, &updated, &ttl)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store get %s in %s: %w", key, strings.Join(namespace, "."), ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store get %s: %w", key, err)
	}
	r := row{ns: ns, key: key, value: value}
	if err := r.open(s.it.opts.Codec); err != nil {
		return nil, fmt.Errorf("store get: %w", err)
	}
	value = r.value
	if ttl > 0 && !noRefresh {
		if err := s.refresh(ctx, ns, []string{key}, now); err != nil {
			return nil, err
		}
	}
	return &Item{Namespace: slices.Clone(namespace), Key: key, Value: json.RawMessage(value), CreatedAt: fromMS(created), UpdatedAt: fromMS(updated)}, nil
}

// refresh moves the expiry of the items keys in ns, those that have a
// time to live, to now plus that time.
func (s *keyStore) refresh(ctx context.Context, ns string, keys []string, now int64) error {
	err := s.it.db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for _, k := range keys {
			if _, err := tx.ExecContext(ctx, s.it.d.Rebind(`UPDATE loom_store_items SET expires = ? + ttl
WHERE owner = ? AND ns = ? AND key = ? AND ttl > 0 AND expires > ?`), now, s.owner, ns, k, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store refresh ttl: %w", err)
	}
	return nil
}

func (s *keyStore) Delete(ctx context.Context, namespace []string, key string) error {
	ns, err := checkLabels("namespace", namespace, false, false)
	if err == nil {
		err = checkKey(key)
	}
	if err != nil {
		return err
	}
	err = s.it.db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.it.d.Rebind(`DELETE FROM loom_store_items WHERE owner = ? AND ns = ? AND key = ?`), s.owner, ns, key)
		return err
	})
	if err != nil {
		return fmt.Errorf("store delete %s: %w", key, err)
	}
	return nil
}

// prefixRange is the condition on ns for the namespaces under prefix
// (stored form): ns from prefix up to, not including, prefix with its
// last "." replaced by "/", the next byte.
func prefixRange(prefix string) (string, []any) {
	if prefix == "" {
		return "", nil
	}
	return ` AND ns >= ? AND ns < ?`, []any{prefix, prefix[:len(prefix)-1] + "/"}
}

type row struct {
	ns, key, value, body string
	vec                  []byte
	created, updated     int64
	ttl                  int64
}

func (s *keyStore) Search(ctx context.Context, prefix []string, opts SearchOptions) ([]Item, error) {
	req, err := checkSearch(ctx, s.it.opts.Embedder, prefix, opts)
	if err != nil {
		return nil, err
	}
	p, limit, offset, filter, query, qvec := req.prefix, req.limit, req.offset, req.filter, req.query, req.qvec
	now := s.now()
	cond, args := prefixRange(p)
	args = append([]any{s.owner, now}, args...)
	// Without a query or a filter the database pages; else the newest
	// maxScan items are ranked and filtered here.
	page := query == "" && len(filter) == 0
	n, skip := maxScan, 0
	if page {
		n, skip = limit, offset
	}
	rows, err := s.it.db.SQL().QueryContext(ctx, s.it.d.Rebind(`SELECT ns, key, value, body, vec, created, updated, ttl FROM loom_store_items
WHERE owner = ? AND (expires = 0 OR expires > ?)`+cond+` ORDER BY updated DESC, ns, key LIMIT ? OFFSET ?`), append(args, n, skip)...)
	if err != nil {
		return nil, fmt.Errorf("store search: %w", err)
	}
	var found []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.ns, &r.key, &r.value, &r.body, &r.vec, &r.created, &r.updated, &r.ttl); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store search: %w", err)
		}
		if err := r.open(s.it.opts.Codec); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store search: %w", err)
		}
		if len(filter) > 0 && !filter.match(r.value) {
			continue
		}
		found = append(found, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store search: %w", err)
	}
	var scores []float64
	if query != "" {
		found, scores = rank(found, query, qvec)
	}
	if !page {
		lo, hi := min(offset, len(found)), min(offset+limit, len(found))
		found = found[lo:hi]
		if scores != nil {
			scores = scores[lo:hi]
		}
	}
	out := make([]Item, len(found))
	byNS := map[string][]string{}
	for i, r := range found {
		out[i] = Item{Namespace: split(r.ns), Key: r.key, Value: json.RawMessage(r.value), CreatedAt: fromMS(r.created), UpdatedAt: fromMS(r.updated)}
		if scores != nil {
			out[i].Score = &scores[i]
		}
		if r.ttl > 0 {
			byNS[r.ns] = append(byNS[r.ns], r.key)
		}
	}
	if !opts.NoRefresh {
		for ns, keys := range byNS {
			if err := s.refresh(ctx, ns, keys, now); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func (s *keyStore) ListNamespaces(ctx context.Context, opts NamespaceOptions) ([][]string, error) {
	limit, offset, err := checkNamespaces(opts)
	if err != nil {
		return nil, err
	}
	// The labels before the first wildcard narrow what is read.
	fixed := opts.Prefix
	if i := slices.Index(fixed, "*"); i >= 0 {
		fixed = fixed[:i]
	}
	p, _ := checkLabels("prefix", fixed, true, false)
	cond, args := prefixRange(p)
	rows, err := s.it.db.SQL().QueryContext(ctx, s.it.d.Rebind(`SELECT DISTINCT ns FROM loom_store_items
WHERE owner = ? AND (expires = 0 OR expires > ?)`+cond+` ORDER BY ns`), append([]any{s.owner, s.now()}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("store list namespaces: %w", err)
	}
	defer rows.Close()
	var out [][]string
	seen := map[string]bool{}
	for rows.Next() {
		var ns string
		if err := rows.Scan(&ns); err != nil {
			return nil, fmt.Errorf("store list namespaces: %w", err)
		}
		labels := split(ns)
		if !matches(labels, opts.Prefix) || !matches(reversed(labels), reversed(opts.Suffix)) {
			continue
		}
		if opts.MaxDepth > 0 && len(labels) > opts.MaxDepth {
			labels = labels[:opts.MaxDepth]
		}
		if j := strings.Join(labels, "."); !seen[j] {
			seen[j] = true
			out = append(out, labels)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store list namespaces: %w", err)
	}
	slices.SortFunc(out, func(a, b []string) int { return slices.Compare(a, b) })
	lo, hi := min(offset, len(out)), min(offset+limit, len(out))
	return out[lo:hi], nil
}

// matches reports whether labels start with pattern, whose "*" matches
// any label.
func matches(labels, pattern []string) bool {
	if len(pattern) > len(labels) {
		return false
	}
	for i, p := range pattern {
		if p != "*" && p != labels[i] {
			return false
		}
	}
	return true
}

func reversed(s []string) []string {
	r := slices.Clone(s)
	slices.Reverse(r)
	return r
}

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// packVec is v as little-endian float32s.
func packVec(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func unpackVec(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}
