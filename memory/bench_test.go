package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/loomkit/loom/store"
)

// BenchmarkSearch measures a search over 10,000 items on SQLite (the most
// a search scans): with a query ranked by BM25, with a filter, and the
// newest ten with neither.
func BenchmarkSearch(b *testing.B) {
	ctx := context.Background()
	db := openBench(b)
	s := New(db, Options{}).For("k")
	words := []string{"warm", "cool", "seat", "music", "route", "airport", "refund", "order", "invoice", "window"}
	for i := range maxScan {
		v := fmt.Sprintf(`{"text": "note %d about the %s and the %s", "n": %d}`, i, words[i%10], words[(i/10)%10], i)
		if err := s.Put(ctx, []string{"notes", words[i%10]}, fmt.Sprint(i), obj(v), PutOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		opts SearchOptions
	}{
		{"query", SearchOptions{Query: "warm seat airport"}},
		{"filter", SearchOptions{Filter: map[string]json.RawMessage{"n": obj(`{"$lt": 100}`)}}},
		{"newest", SearchOptions{}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.Search(ctx, []string{"notes"}, c.opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func openBench(b *testing.B) *store.DB {
	db, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "loom.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if err := Migrate(context.Background(), db); err != nil {
		b.Fatal(err)
	}
	return db
}
