package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/loomkit/loom/memory"
	"github.com/loomkit/loom/store"
)

// A store on a SQLite file: one key's items, found by a query (BM25, as
// no embedder is configured) and by a filter.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "memory")
	defer os.RemoveAll(dir)
	db, err := store.Open(ctx, filepath.Join(dir, "loom.db"))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	if err := memory.Migrate(ctx, db); err != nil {
		panic(err)
	}
	s := memory.New(db, memory.Options{}).For("key:1")
	ns := []string{"cabin", "drivers", "alice"}
	s.Put(ctx, ns, "climate", json.RawMessage(`{"temperature": 22, "note": "likes the cabin warm"}`), memory.PutOptions{})
	s.Put(ctx, ns, "music", json.RawMessage(`{"station": "jazz"}`), memory.PutOptions{})

	found, _ := s.Search(ctx, []string{"cabin"}, memory.SearchOptions{Query: "warm cabin"})
	for _, it := range found {
		fmt.Println(it.Key, string(it.Value))
	}
	found, _ = s.Search(ctx, []string{"cabin"}, memory.SearchOptions{Filter: map[string]json.RawMessage{"station": json.RawMessage(`"jazz"`)}})
	fmt.Println(found[0].Key)
	// Output:
	// climate {"temperature": 22, "note": "likes the cabin warm"}
	// music
}
