package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/seal"
	"github.com/loomkit/loom/seal/sealtest"
	"github.com/loomkit/loom/store"
)

// withSealed adds to bs a sealed variant of each backend, so that every
// test of the store also runs on sealed items.
func withSealed(bs map[string]backend) map[string]backend {
	for name, b := range bs {
		bs[name+"-sealed"] = func(t *testing.T, opts Options) func(string) Store {
			opts.Codec = sealtest.Keys(t, "k1")
			return b(t, opts)
		}
	}
	return bs
}

const secret = "my PIN is 8462"

// openSQLite opens a store on a fresh SQLite file, sealed with keys when
// they are not nil, with an embedder so items also keep an embedding.
func openSQLite(t *testing.T, path string, keys seal.Codec) (*store.DB, *Items) {
	t.Helper()
	db, err := store.Open(context.Background(), path, store.WithCodec(keys))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	return db, New(db, Options{Embedder: &bagEmbedder{}})
}

// rawItem is the stored row of an item, as a copy of the database shows it.
func rawItem(t *testing.T, db *store.DB, key string) (value, body string, vec []byte) {
	t.Helper()
	err := db.SQL().QueryRow(`SELECT value, body, vec FROM loom_store_items WHERE key = ?`, key).Scan(&value, &body, &vec)
	if err != nil {
		t.Fatal(err)
	}
	return value, body, vec
}

func TestSealedItemsAtRest(t *testing.T) {
	ctx := context.Background()
	for _, sealed := range []bool{false, true} {
		var keys seal.Codec
		if sealed {
			keys = sealtest.Keys(t, "k1")
		}
		db, it := openSQLite(t, filepath.Join(t.TempDir(), "loom.db"), keys)
		s := it.For("key:a")
		must(t, s.Put(ctx, []string{"notes", "u1"}, "pin", obj(`{"text": "`+secret+`", "kind": "pin"}`), PutOptions{}))
		value, body, vec := rawItem(t, db, "pin")
		clear := map[string]bool{
			"value": strings.Contains(value, "8462"),
			"body":  strings.Contains(body, "8462"),
			// The embedding of the text, which the bag embedder makes
			// from its words, is the same bytes whenever it is in the clear.
			"vec": bytes.Equal(vec, packVec((&bagEmbedder{}).mustEmbed(t, strings.TrimSpace(body)))),
		}
		for field, inClear := range clear {
			if sealed && inClear {
				t.Errorf("sealed: the stored %s is in the clear", field)
			}
			if !sealed && !inClear {
				t.Errorf("clear: the stored %s should hold the item (the test would not see a leak): %q", field, body)
			}
		}
		if sealed && (!seal.IsSealed([]byte(value)) || !seal.IsSealed([]byte(body)) || !seal.IsSealed(vec)) {
			t.Errorf("sealed: value, body and vec should be sealed: %.30q %.30q %.30q", value, body, vec)
		}
		// Get, a filter, a query by words and by embedding all see the value.
		got, err := s.Get(ctx, []string{"notes", "u1"}, "pin", false)
		must(t, err)
		if !strings.Contains(string(got.Value), secret) {
			t.Fatalf("get: %s", got.Value)
		}
		found, err := s.Search(ctx, []string{"notes"}, SearchOptions{Filter: map[string]json.RawMessage{"kind": obj(`"pin"`)}, Query: "PIN"})
		must(t, err)
		if len(found) != 1 || found[0].Score == nil || *found[0].Score <= 0 {
			t.Fatalf("search by filter and query: %+v", found)
		}
	}
}

func (e *bagEmbedder) mustEmbed(t *testing.T, text string) []float32 {
	v, err := e.Embed(context.Background(), []string{text})
	if err != nil {
		t.Fatal(err)
	}
	return v[0]
}

func TestSealedItemsRotationAndClearRows(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "loom.db")
	// An item written in the clear, then one sealed with k1.
	_, clearStore := openSQLite(t, path, nil)
	must(t, clearStore.For("").Put(ctx, []string{"n"}, "old", obj(`{"v": "clear"}`), PutOptions{}))
	_, k1 := openSQLite(t, path, sealtest.Keys(t, "k1"))
	must(t, k1.For("").Put(ctx, []string{"n"}, "k1", obj(`{"v": "k1"}`), PutOptions{}))
	// Keys k2,k1 read both and seal new writes with k2.
	db, rotated := openSQLite(t, path, sealtest.Keys(t, "k2", "k1"))
	s := rotated.For("")
	for key, want := range map[string]string{"old": `{"v": "clear"}`, "k1": `{"v": "k1"}`} {
		got, err := s.Get(ctx, []string{"n"}, key, true)
		if err != nil || string(got.Value) != want {
			t.Fatalf("get %s: %v, %v; want %s", key, got, err, want)
		}
	}
	must(t, s.Put(ctx, []string{"n"}, "k2", obj(`{"v": "k2"}`), PutOptions{}))
	if value, _, _ := rawItem(t, db, "k2"); !strings.HasPrefix(value, `"sealed:aes256gcm:k2:`) {
		t.Fatalf("new write sealed as %.25s…, want k2", value)
	}
	if found, err := s.Search(ctx, []string{"n"}, SearchOptions{Filter: map[string]json.RawMessage{"v": obj(`"k1"`)}}); err != nil || len(found) != 1 || found[0].Key != "k1" {
		t.Fatalf("search over clear, k1 and k2 items: %v, %v", keys(found), err)
	}
	// Without k1 the k1 item is an error that names its key.
	_, k2only := openSQLite(t, path, sealtest.Keys(t, "k2"))
	if _, err := k2only.For("").Get(ctx, []string{"n"}, "k1", true); !errors.Is(err, seal.ErrUnknownKey) || !strings.Contains(err.Error(), `"k1"`) {
		t.Fatalf("get a k1 item with k2 alone: %v, want ErrUnknownKey naming k1", err)
	}
	if _, err := k2only.For("").Search(ctx, []string{"n"}, SearchOptions{}); !errors.Is(err, seal.ErrUnknownKey) {
		t.Fatalf("search over a k1 item with k2 alone: %v, want ErrUnknownKey", err)
	}
}

func TestSealedItemsRedisAtRest(t *testing.T) {
	ctx := context.Background()
	c, prefix := redisClient(t), redisPrefix(t)
	s := NewRedis(c, prefix, Options{Codec: sealtest.Keys(t, "k1"), Embedder: &bagEmbedder{}}).For("key:a")
	must(t, s.Put(ctx, []string{"notes"}, "pin", obj(`{"text": "`+secret+`"}`), PutOptions{}))
	var dump bytes.Buffer
	iter := c.Scan(ctx, 0, prefix+"*", 100).Iterator()
	n := 0
	for iter.Next(ctx) {
		n++
		if typ, _ := c.Type(ctx, iter.Val()).Result(); typ == "hash" {
			for f, v := range c.HGetAll(ctx, iter.Val()).Val() {
				dump.WriteString(f + "=" + v + "\n")
			}
		}
	}
	if n == 0 || !strings.Contains(dump.String(), "sealed:aes256gcm:k1:") {
		t.Fatalf("found no sealed item under %s: %q", prefix, dump.String())
	}
	if strings.Contains(dump.String(), "8462") {
		t.Fatalf("Redis holds the secret: %q", dump.String())
	}
	found, err := s.Search(ctx, []string{"notes"}, SearchOptions{Query: "PIN"})
	must(t, err)
	if len(found) != 1 || !strings.Contains(string(found[0].Value), secret) {
		t.Fatalf("search: %+v", found)
	}
}
