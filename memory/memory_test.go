package memory

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loomkit/loom/llm/llmtest"
	"github.com/loomkit/loom/store"
	"github.com/loomkit/loom/store/storetest"
)

// bagEmbedder embeds with llmtest.Embedding: texts that share words get a
// positive cosine. It counts the texts it was asked for.
type bagEmbedder struct {
	mu    sync.Mutex
	texts int
}

func (e *bagEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.mu.Lock()
	e.texts += len(texts)
	e.mu.Unlock()
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = llmtest.Embedding(t, 128)
	}
	return out, nil
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// backend makes a store of every key with opts.
type backend func(t *testing.T, opts Options) func(owner string) Store

func backends() map[string]backend {
	sqlStore := func(url func(t *testing.T) string) backend {
		return func(t *testing.T, opts Options) func(string) Store {
			db, err := store.Open(context.Background(), url(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			if err := Migrate(context.Background(), db); err != nil {
				t.Fatal(err)
			}
			it := New(db, opts)
			lastItems = it
			return it.For
		}
	}
	return withSealed(map[string]backend{
		"sqlite":   sqlStore(func(t *testing.T) string { return filepath.Join(t.TempDir(), "loom.db") }),
		"postgres": sqlStore(func(t *testing.T) string { return storetest.PostgresURL(t) }),
		"redis": func(t *testing.T, opts Options) func(string) Store {
			lastItems = nil
			return NewRedis(redisClient(t), redisPrefix(t), opts).For
		},
	})
}

// lastItems is the SQL store the last backend made (nil for Redis), for
// the tests of Sweep.
var lastItems *Items

func obj(s string) json.RawMessage { return json.RawMessage(s) }

func keys(items []Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, strings.Join(it.Namespace, ".")+"/"+it.Key)
	}
	return out
}

func TestItems(t *testing.T) {
	ctx := context.Background()
	for name, open := range backends() {
		t.Run(name, func(t *testing.T) {
			c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
			forKey := open(t, Options{now: c.now, MaxItems: 7})
			a, b := forKey("key:a"), forKey("key:b")

			// Put, get, overwrite keeps the creation time.
			must(t, a.Put(ctx, []string{"prefs", "u1"}, "cabin", obj(`{"temperature": 22, "seat": "position 3"}`), PutOptions{}))
			c.add(time.Second)
			must(t, a.Put(ctx, []string{"prefs", "u1"}, "cabin", obj(`{"temperature": 23, "seat": "position 3"}`), PutOptions{}))
			got, err := a.Get(ctx, []string{"prefs", "u1"}, "cabin", false)
			must(t, err)
			if string(got.Value) != `{"temperature": 23, "seat": "position 3"}` || !got.UpdatedAt.After(got.CreatedAt) {
				t.Fatalf("get after overwrite: %s created %v updated %v", got.Value, got.CreatedAt, got.UpdatedAt)
			}
			// Another key sees nothing of it, and has its own.
			if _, err := b.Get(ctx, []string{"prefs", "u1"}, "cabin", false); !errors.Is(err, ErrNotFound) {
				t.Fatalf("other key's get: %v, want ErrNotFound", err)
			}
			must(t, b.Put(ctx, []string{"prefs", "u1"}, "cabin", obj(`{"temperature": 18}`), PutOptions{}))

			c.add(time.Second)
			must(t, a.Put(ctx, []string{"prefs", "u2"}, "cabin", obj(`{"temperature": 19, "seat": "position 1"}`), PutOptions{}))
			must(t, a.Put(ctx, []string{"prefsx"}, "k", obj(`{"temperature": 25}`), PutOptions{}))
			must(t, a.Put(ctx, []string{"sql", "shop"}, "q1", obj(`{"question": "how many orders were refunded last month", "sql": "SELECT count(*) FROM orders WHERE status = 'refunded'"}`), PutOptions{}))
			must(t, a.Put(ctx, []string{"sql", "shop"}, "q2", obj(`{"question": "top customers by revenue", "sql": "SELECT customer FROM orders"}`), PutOptions{Index: []string{"question"}}))
			must(t, a.Put(ctx, []string{"sql", "shop"}, "hidden", obj(`{"question": "refunded orders"}`), PutOptions{Index: []string{}}))

			// Prefix search: "prefs" is not a prefix of "prefsx".
			items, err := a.Search(ctx, []string{"prefs"}, SearchOptions{})
			must(t, err)
			if got := keys(items); !slices.Equal(got, []string{"prefs.u2/cabin", "prefs.u1/cabin"}) {
				t.Fatalf("prefix search: %v", got)
			}
			// Filters: equality and operators.
			items, err = a.Search(ctx, nil, SearchOptions{Filter: map[string]json.RawMessage{"temperature": obj(`{"$gte": 20, "$lt": 25}`)}})
			must(t, err)
			if got := keys(items); !slices.Equal(got, []string{"prefs.u1/cabin"}) {
				t.Fatalf("filter $gte/$lt: %v", got)
			}
			items, err = a.Search(ctx, nil, SearchOptions{Filter: map[string]json.RawMessage{"seat": obj(`"position 1"`)}})
			must(t, err)
			if got := keys(items); !slices.Equal(got, []string{"prefs.u2/cabin"}) {
				t.Fatalf("filter eq: %v", got)
			}
			// BM25 query: the refunded question first; the item put with an
			// empty index is never found by a query.
			items, err = a.Search(ctx, []string{"sql"}, SearchOptions{Query: "refunded orders last month"})
			must(t, err)
			if got := keys(items); len(got) == 0 || got[0] != "sql.shop/q1" || slices.Contains(got, "sql.shop/hidden") || items[0].Score == nil || *items[0].Score <= 0 {
				t.Fatalf("bm25 search: %v", got)
			}
			// q2 indexes its question only: its SQL's words do not find it.
			items, err = a.Search(ctx, []string{"sql"}, SearchOptions{Query: "customer"})
			must(t, err)
			if got := keys(items); slices.Contains(got, "sql.shop/q2") {
				t.Fatalf("search found q2 by a field it does not index: %v", got)
			}
			// Paging.
			items, err = a.Search(ctx, nil, SearchOptions{Limit: 2, Offset: 1})
			must(t, err)
			if len(items) != 2 {
				t.Fatalf("limit 2 offset 1: %v", keys(items))
			}

			// Namespaces: prefix, suffix, wildcard, max depth.
			nss, err := a.ListNamespaces(ctx, NamespaceOptions{})
			must(t, err)
			if want := [][]string{{"prefs", "u1"}, {"prefs", "u2"}, {"prefsx"}, {"sql", "shop"}}; !slices.EqualFunc(nss, want, slices.Equal) {
				t.Fatalf("namespaces: %v", nss)
			}
			nss, err = a.ListNamespaces(ctx, NamespaceOptions{Prefix: []string{"prefs"}, MaxDepth: 1})
			must(t, err)
			if want := [][]string{{"prefs"}}; !slices.EqualFunc(nss, want, slices.Equal) {
				t.Fatalf("namespaces prefix prefs depth 1: %v", nss)
			}
			nss, err = a.ListNamespaces(ctx, NamespaceOptions{Prefix: []string{"*", "u2"}})
			must(t, err)
			if want := [][]string{{"prefs", "u2"}}; !slices.EqualFunc(nss, want, slices.Equal) {
				t.Fatalf("namespaces */u2: %v", nss)
			}
			nss, err = a.ListNamespaces(ctx, NamespaceOptions{Suffix: []string{"shop"}})
			must(t, err)
			if want := [][]string{{"sql", "shop"}}; !slices.EqualFunc(nss, want, slices.Equal) {
				t.Fatalf("namespaces suffix shop: %v", nss)
			}

			// The key holds 7 items: an eighth is refused, an overwrite is not.
			must(t, a.Put(ctx, []string{"x"}, "6", obj(`{}`), PutOptions{}))
			if err := a.Put(ctx, []string{"x"}, "7", obj(`{}`), PutOptions{}); !errors.Is(err, ErrFull) {
				t.Fatalf("eighth item: %v, want ErrFull", err)
			}
			must(t, a.Put(ctx, []string{"x"}, "6", obj(`{"again": true}`), PutOptions{}))

			// Delete.
			must(t, a.Delete(ctx, []string{"x"}, "6"))
			must(t, a.Delete(ctx, []string{"x"}, "6"))
			if _, err := a.Get(ctx, []string{"x"}, "6", false); !errors.Is(err, ErrNotFound) {
				t.Fatalf("get after delete: %v", err)
			}
			if _, err := b.Get(ctx, []string{"prefs", "u1"}, "cabin", false); err != nil {
				t.Fatalf("other key's item after a delete: %v", err)
			}
		})
	}
}

func TestTTL(t *testing.T) {
	ctx := context.Background()
	for name, open := range backends() {
		t.Run(name, func(t *testing.T) {
			c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
			s := open(t, Options{now: c.now})("")
			it := lastItems
			ns := []string{"session"}
			must(t, s.Put(ctx, ns, "short", obj(`{"v": 1}`), PutOptions{TTL: 10 * time.Minute}))
			must(t, s.Put(ctx, ns, "fixed", obj(`{"v": 2}`), PutOptions{TTL: 10 * time.Minute}))
			must(t, s.Put(ctx, ns, "forever", obj(`{"v": 3}`), PutOptions{}))

			// Reads at 8 minutes: "short" refreshed, "fixed" read without.
			c.add(8 * time.Minute)
			if _, err := s.Get(ctx, ns, "short", false); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get(ctx, ns, "fixed", true); err != nil {
				t.Fatal(err)
			}
			// At 12 minutes "fixed" is gone, "short" lives (its ten minutes
			// count from the read at 8).
			c.add(4 * time.Minute)
			if _, err := s.Get(ctx, ns, "fixed", false); !errors.Is(err, ErrNotFound) {
				t.Fatalf("expired item: %v, want ErrNotFound", err)
			}
			items, err := s.Search(ctx, ns, SearchOptions{NoRefresh: true})
			must(t, err)
			if got := keys(items); !slices.Equal(got, []string{"session/short", "session/forever"}) && !slices.Equal(got, []string{"session/forever", "session/short"}) {
				t.Fatalf("search after expiry: %v", got)
			}
			// A search refreshes what it returns.
			c.add(5 * time.Minute) // 17: short expires at 18
			_, err = s.Search(ctx, ns, SearchOptions{})
			must(t, err)
			c.add(5 * time.Minute) // 22: refreshed to 27
			if _, err := s.Get(ctx, ns, "short", true); err != nil {
				t.Fatalf("item refreshed by a search: %v", err)
			}
			c.add(10 * time.Minute)
			if it != nil { // Redis expires items itself
				n, err := it.Sweep(ctx)
				must(t, err)
				if n != 2 { // fixed and short
					t.Fatalf("sweep deleted %d rows, want 2", n)
				}
			}
			nss, err := s.ListNamespaces(ctx, NamespaceOptions{})
			must(t, err)
			if len(nss) != 1 {
				t.Fatalf("namespaces after sweep: %v", nss)
			}
		})
	}
}

func TestSemantic(t *testing.T) {
	ctx := context.Background()
	for name, open := range backends() {
		t.Run(name, func(t *testing.T) {
			e := &bagEmbedder{}
			s := open(t, Options{Embedder: e})("k")
			ns := []string{"memories"}
			must(t, s.Put(ctx, ns, "a", obj(`{"text": "the driver likes the cabin warm at 24 degrees"}`), PutOptions{}))
			must(t, s.Put(ctx, ns, "b", obj(`{"text": "invoices are sent on the first day of the month"}`), PutOptions{}))
			must(t, s.Put(ctx, ns, "c", obj(`{"text": "not searchable"}`), PutOptions{Index: []string{}}))
			if e.texts != 2 {
				t.Fatalf("embedded %d texts at put, want 2 (an item with an empty index is not embedded)", e.texts)
			}
			items, err := s.Search(ctx, ns, SearchOptions{Query: "how warm does the driver like it"})
			must(t, err)
			if got := keys(items); len(got) != 2 || got[0] != "memories/a" || *items[0].Score <= *items[1].Score {
				t.Fatalf("semantic search: %v", got)
			}
		})
	}
}

func TestRefused(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "loom.db"))
	must(t, err)
	defer db.Close()
	must(t, Migrate(ctx, db))
	s := New(db, Options{}).For("")
	long := strings.Repeat("x", maxKey+1)
	ttl := -1.0
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"empty namespace", s.Put(ctx, nil, "k", obj(`{}`), PutOptions{}), "namespace is empty"},
		{"period", s.Put(ctx, []string{"a.b"}, "k", obj(`{}`), PutOptions{}), "contains a period"},
		{"empty label", s.Put(ctx, []string{"a", ""}, "k", obj(`{}`), PutOptions{}), "label 2 is empty"},
		{"deep", s.Put(ctx, make([]string, maxDepth+1), "k", obj(`{}`), PutOptions{}), "labels; at most"},
		{"key too long", s.Put(ctx, []string{"a"}, long, obj(`{}`), PutOptions{}), "key is 513 bytes"},
		{"NUL in key", s.Put(ctx, []string{"a"}, "k\x00", obj(`{}`), PutOptions{}), "key is not printable"},
		{"array value", s.Put(ctx, []string{"a"}, "k", obj(`[1]`), PutOptions{}), "value must be a JSON object"},
		{"big value", s.Put(ctx, []string{"a"}, "k", obj(`{"x":"`+strings.Repeat("y", maxValue)+`"}`), PutOptions{}), "bytes of JSON; at most"},
		{"NUL in value", s.Put(ctx, []string{"a"}, "k", obj(`{"x":"\u0000"}`), PutOptions{}), "NUL"},
		{"index path", s.Put(ctx, []string{"a"}, "k", obj(`{}`), PutOptions{Index: []string{"items[*].x"}}), "index field"},
		{"limit", second(s.Search(ctx, nil, SearchOptions{Limit: maxLimit + 1})), "limit is 1001"},
		{"filter", second(s.Search(ctx, nil, SearchOptions{Filter: map[string]json.RawMessage{"a": obj(`{bad`)}})), `filter field "a"`},
		{"depth", second(s.ListNamespaces(ctx, NamespaceOptions{MaxDepth: -1})), "max_depth is -1"},
		{"ttl", second(TTLMinutes(&ttl)), "ttl is -1 minutes"},
	} {
		if !errors.Is(c.err, ErrInvalid) || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrInvalid saying %q", c.name, c.err, c.want)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

type downEmbedder struct{}

func (downEmbedder) Embed(context.Context, []string) ([][]float32, error) {
	return nil, errors.New("connection refused")
}

// An embedder that fails makes a put or a query fail with ErrEmbed, and
// writes nothing.
func TestEmbedderDown(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "loom.db"))
	must(t, err)
	defer db.Close()
	must(t, Migrate(ctx, db))
	s := New(db, Options{Embedder: downEmbedder{}}).For("")
	if err := s.Put(ctx, []string{"a"}, "k", obj(`{"text": "hello"}`), PutOptions{}); !errors.Is(err, ErrEmbed) {
		t.Fatalf("put: %v, want ErrEmbed", err)
	}
	if _, err := s.Get(ctx, []string{"a"}, "k", false); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get after a failed put: %v, want ErrNotFound", err)
	}
	must(t, s.Put(ctx, []string{"a"}, "quiet", obj(`{"text": "hello"}`), PutOptions{Index: []string{}}))
	if _, err := s.Search(ctx, nil, SearchOptions{Query: "hello"}); !errors.Is(err, ErrEmbed) {
		t.Fatalf("search: %v, want ErrEmbed", err)
	}
	if items, err := s.Search(ctx, nil, SearchOptions{}); err != nil || len(items) != 1 {
		t.Fatalf("search without a query needs no embedder: %v %v", items, err)
	}
}
