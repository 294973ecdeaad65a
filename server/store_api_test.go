package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/llm/llmtest"
	"github.com/loomkit/loom/llm/openai"
	"github.com/loomkit/loom/memory"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/store/storetest"
)

// TestStoreAPI drives /store over HTTP with two API keys, on SQLite and
// Postgres: put, get, search, namespaces and delete, each key seeing only
// its own items, and malformed requests refused with a 4xx that names
// what was wrong.
func TestStoreAPI(t *testing.T) {
	for name, db := range map[string]func() string{
		"sqlite":   func() string { return "" },
		"postgres": func() string { return storetest.PostgresURL(t) },
	} {
		t.Run(name, func(t *testing.T) {
			const keyA, keyB = "store-a", "store-b"
			ts := startServer(t, server.Options{Keys: []string{keyA, keyB}, Database: db()})
			items := ts.URL + "/store/items"
			put := func(key string, body any) {
				t.Helper()
				if code, b := call(t, "PUT", items, key, body); code != http.StatusNoContent {
					t.Fatalf("put %v: %d %s", body, code, b)
				}
			}
			put(keyA, map[string]any{"namespace": []string{"prefs", "driver-1"}, "key": "climate", "value": map[string]any{"temperature": 22, "note": "likes it warm"}})
			put(keyA, map[string]any{"namespace": []string{"prefs", "driver-2"}, "key": "climate", "value": map[string]any{"temperature": 18}, "ttl": 60})
			put(keyA, map[string]any{"namespace": []string{"sql", "shop"}, "key": "q1", "value": map[string]any{"question": "how many orders were refunded", "sql": "SELECT count(*) FROM orders"}, "index": []string{"question"}})
			put(keyB, map[string]any{"namespace": []string{"prefs", "driver-1"}, "key": "climate", "value": map[string]any{"temperature": 26}})

			get := func(key, ns, k string) map[string]any {
				t.Helper()
				code, b := call(t, "GET", items+"?"+url.Values{"namespace": {ns}, "key": {k}}.Encode(), key, nil)
				if code != http.StatusOK {
					t.Fatalf("get %s %s: %d %s", ns, k, code, b)
				}
				var m map[string]any
				if err := json.Unmarshal(b, &m); err != nil {
					t.Fatal(err)
				}
				return m
			}
			if it := get(keyA, "prefs.driver-1", "climate"); it["value"].(map[string]any)["temperature"] != 22.0 || it["created_at"] == nil || it["key"] != "climate" {
				t.Fatalf("key A's item: %v", it)
			}
			if it := get(keyB, "prefs.driver-1", "climate"); it["value"].(map[string]any)["temperature"] != 26.0 {
				t.Fatalf("key B's item: %v", it)
			}
			if it := get(keyB, "sql.shop", "q1"); it != nil {
				t.Fatalf("key B reads key A's item: %v", it)
			}

			code, b := call(t, "POST", items+"/search", keyA, map[string]any{"namespace_prefix": []string{"prefs"}, "filter": map[string]any{"temperature": map[string]any{"$gt": 20}}})
			if code != http.StatusOK || !strings.Contains(string(b), `"driver-1"`) || strings.Contains(string(b), `"driver-2"`) {
				t.Fatalf("search with a filter: %d %s", code, b)
			}
			code, b = call(t, "POST", items+"/search", keyA, map[string]any{"namespace_prefix": []string{}, "query": "refunded orders", "limit": 5})
			var found struct {
				Items []struct {
					Key   string   `json:"key"`
					Score *float64 `json:"score"`
				} `json:"items"`
			}
			json.Unmarshal(b, &found)
			if code != http.StatusOK || len(found.Items) == 0 || found.Items[0].Key != "q1" || found.Items[0].Score == nil {
				t.Fatalf("search with a query: %d %s", code, b)
			}
			code, b = call(t, "POST", ts.URL+"/store/namespaces", keyA, map[string]any{"prefix": []string{"prefs"}, "max_depth": 2, "limit": 10})
			if code != http.StatusOK || string(b) != `{"namespaces":[["prefs","driver-1"],["prefs","driver-2"]]}`+"\n" {
				t.Fatalf("namespaces: %d %s", code, b)
			}

			if code, b := call(t, "DELETE", items, keyA, map[string]any{"namespace": []string{"prefs", "driver-1"}, "key": "climate"}); code != http.StatusNoContent {
				t.Fatalf("delete: %d %s", code, b)
			}
			if it := get(keyA, "prefs.driver-1", "climate"); it != nil {
				t.Fatalf("item after delete: %v", it)
			}
			if it := get(keyB, "prefs.driver-1", "climate"); it == nil {
				t.Fatal("key A's delete removed key B's item")
			}

			for _, c := range []struct {
				method, path string
				body         any
				code         int
				want         string
			}{
				{"PUT", "/store/items", map[string]any{"namespace": []string{"a.b"}, "key": "k", "value": map[string]any{}}, 422, "contains a period"},
				{"PUT", "/store/items", map[string]any{"namespace": []string{}, "key": "k", "value": map[string]any{}}, 422, "namespace is empty"},
				{"PUT", "/store/items", map[string]any{"namespace": []string{"a"}, "key": strings.Repeat("k", 600), "value": map[string]any{}}, 422, "key is 600 bytes long"},
				{"PUT", "/store/items", map[string]any{"namespace": []string{"a"}, "key": "k", "value": []int{1}}, 422, "value must be a JSON object"},
				{"PUT", "/store/items", map[string]any{"namespace": []string{"a"}, "key": "k", "value": map[string]any{"x": strings.Repeat("y", 300<<10)}}, 422, "bytes of JSON"},
				{"PUT", "/store/items", map[string]any{"namespace": []string{"a"}, "key": "k", "value": map[string]any{}, "ttl": -5}, 422, "ttl is -5 minutes"},
				{"PUT", "/store/items", map[string]any{"namespace": []string{"a"}, "key": "k", "value": map[string]any{}, "index": "title"}, 422, "index must be"},
				{"PUT", "/store/items", map[string]any{"namespace": []string{"a"}, "key": "k", "value": map[string]any{}, "ttl_seconds": 5}, 422, "ttl_seconds"},
				{"PUT", "/store/items", `{"namespace": "a", "key": "k"}`, 400, "namespace"},
				{"GET", "/store/items?namespace=a&key=k&refresh_ttl=maybe", nil, 422, "refresh_ttl"},
				{"GET", "/store/items?namespace=a&key=k&limit=3", nil, 422, "query parameter limit"},
				{"GET", "/store/items?key=k", nil, 422, "namespace is empty"},
				{"GET", "/store/items?namespace=a", nil, 422, "key is empty"},
				{"POST", "/store/items/search", map[string]any{"limit": 5000}, 422, "limit is 5000"},
				{"POST", "/store/items/search", map[string]any{"limit": 0}, 422, "limit is 0"},
				{"POST", "/store/items/search", map[string]any{"query": strings.Repeat("q", 5000)}, 422, "query is 5000 bytes"},
				{"POST", "/store/namespaces", map[string]any{"max_depth": 0}, 422, "max_depth is 0"},
				{"DELETE", "/store/items", map[string]any{"namespace": []string{"a"}}, 422, "key is empty"},
			} {
				code, b := call(t, c.method, ts.URL+c.path, keyA, c.body)
				if code != c.code || !strings.Contains(string(b), c.want) {
					t.Errorf("%s %s %v: %d %s, want %d naming %q", c.method, c.path, c.body, code, b, c.code, c.want)
				}
			}
			if code, _ := call(t, "GET", items+"?namespace=a&key=k", "", nil); code != http.StatusUnauthorized {
				t.Errorf("get without a key: %d, want 401", code)
			}
		})
	}
}

type noteState struct {
	Text string `json:"text"`
	Seen string `json:"seen"`
}

// TestStoreInNodes: a graph's nodes reach the store of the key that runs
// them through memory.From, and what one run keeps the next, on another
// thread, reads; the API shows it under that key only.
func TestStoreInNodes(t *testing.T) {
	g := graph.New[noteState]("note")
	g.Node("note", func(ctx context.Context, s noteState) (noteState, error) {
		st := memory.From(ctx)
		if it, err := st.Get(ctx, []string{"notes"}, "last", false); err == nil {
			var v map[string]string
			json.Unmarshal(it.Value, &v)
			s.Seen = v["text"]
		}
		v, _ := json.Marshal(map[string]string{"text": s.Text})
		return s, st.Put(ctx, []string{"notes"}, "last", v, memory.PutOptions{})
	}).Edge(graph.Start, "note").Edge("note", graph.End)
	var reg server.Registry
	if err := reg.Register(server.Agent{Name: "note", Description: "keeps the last text", Build: server.Compile(g),
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)}); err != nil {
		t.Fatal(err)
	}
	const keyA, keyB = "note-a", "note-b"
	ts := startServer(t, server.Options{Agents: &reg, Keys: []string{keyA, keyB}})
	run := func(key, text string) map[string]any {
		t.Helper()
		code, b := call(t, "POST", ts.URL+"/runs/wait", key, map[string]any{"assistant_id": "note", "input": map[string]string{"text": text}})
		if code != http.StatusOK {
			t.Fatalf("run: %d %s", code, b)
		}
		return mustJSON(t, b)
	}
	run(keyA, "first")
	if out := run(keyA, "second"); out["seen"] != "first" {
		t.Fatalf("the second run saw %v, want what the first kept", out)
	}
	if out := run(keyB, "other"); out["seen"] != "" {
		t.Fatalf("key B's run saw key A's note: %v", out)
	}
	code, b := call(t, "GET", ts.URL+"/store/items?namespace=notes&key=last", keyA, nil)
	if code != http.StatusOK || !strings.Contains(string(b), `"text":"second"`) {
		t.Fatalf("key A's note over the API: %d %s", code, b)
	}
}

// TestStoreSDK runs sdktest/store.test.mjs against a server whose store
// embeds through an OpenAI-compatible endpoint (llmtest's), so that the
// official SDK's searches rank by embeddings.
func TestStoreSDK(t *testing.T) {
	lt := llmtest.New(t)
	emb, err := openai.NewEmbedder(openai.Config{BaseURL: lt.BaseURL(), APIKey: "test", Model: "test-embed"})
	if err != nil {
		t.Fatal(err)
	}
	const keyA, keyB = "store-sdk-a", "store-sdk-b"
	ts := startServer(t, server.Options{Keys: []string{keyA, keyB}, Embedder: emb})
	t.Setenv("LOOM_STORE_SEMANTIC", "1")
	runSDK(t, ts.URL, keyA, keyB, "store.test.mjs")
	embeds := 0
	for _, r := range lt.Requests() {
		if strings.HasSuffix(r.Path, "/embeddings") {
			embeds++
		}
	}
	if embeds == 0 {
		t.Fatal("the store's searches did not reach the embedder")
	}
}
