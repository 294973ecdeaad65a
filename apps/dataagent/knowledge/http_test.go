package knowledge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/dataagent/knowledge"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/server/servertest"
	"github.com/loomkit/loom/store"
	"github.com/loomkit/loom/store/storetest"
)

const prefix = "/api/v1/kb/knowledge/"

// maxEntries is how many entries a key may hold on the test server.
const maxEntries = 20

// serve runs Loom's server on database dbURL with keys key-a and key-b
// and an agent that mounts the knowledge API at prefix, as the data
// agent does (YAML files taken up to MaxImport), its store set up by
// configure; it returns the server's URL.
func serve(t *testing.T, dbURL string, configure func(*knowledge.Store)) string {
	t.Helper()
	var st *knowledge.Store
	var reg server.Registry
	err := reg.Register(server.Agent{
		Name:        "kb",
		Description: "a one-step graph, with the knowledge API",
		Migrations:  knowledge.Migrations,
		Build: func(ctx context.Context, db *store.DB) (graph.Runner, error) {
			st = knowledge.Open(db, "kb")
			configure(st)
			// The routes are what is tested; the graph only echoes.
			g := graph.New[struct{}]("kb").Node("echo", func(_ context.Context, s struct{}) (struct{}, error) { return s, nil })
			g.Edge(graph.Start, "echo").Edge("echo", graph.End)
			return g.Compile(graph.WithSaver(db.Saver()))
		},
		Routes:       func(*server.Server, graph.Runner) http.Handler { return knowledge.Handler(st, prefix) },
		RoutesPrefix: prefix,
		UploadLimit:  knowledge.MaxImport,
		UploadTypes:  knowledge.ImportTypes,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(context.Background(), server.Options{Agents: &reg, Database: dbURL,
		Keys: []string{"key-a", "key-b"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return servertest.Serve(t, srv)
}

// withMaxEntries bounds the store at maxEntries entries.
func withMaxEntries(st *knowledge.Store) { st.SetMaxEntries(maxEntries) }

// eachServer runs fn on a server over a SQLite file and one over
// PostgreSQL (skipped, naming the variable, when it cannot be reached).
func eachServer(t *testing.T, fn func(t *testing.T, c *client)) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			url := filepath.Join(t.TempDir(), "loom.db")
			if dialect == "postgres" {
				url = storetest.PostgresURL(t)
			}
			fn(t, &client{t: t, base: serve(t, url, withMaxEntries) + prefix})
		})
	}
}

type client struct {
	t    *testing.T
	base string
}

// reply is an answer: its status, and its body decoded.
type reply struct {
	status int
	body   map[string]any
	raw    string
}

// errorCode is the error's code, "" when the body is not Loom's error
// JSON.
func (r reply) errorCode() string {
	e, _ := r.body["error"].(map[string]any)
	code, _ := e["code"].(string)
	if msg, _ := e["message"].(string); msg == "" {
		return ""
	}
	return code
}

func (r reply) message() string {
	e, _ := r.body["error"].(map[string]any)
	msg, _ := e["message"].(string)
	return msg
}

func (c *client) do(key, method, path, contentType, body string) reply {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	r := reply{status: resp.StatusCode, raw: string(b)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(b, &r.body); err != nil {
			c.t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
	return r
}

func (c *client) json(key, method, path string, v any) reply {
	c.t.Helper()
	body := ""
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			c.t.Fatal(err)
		}
		body = string(b)
	}
	return c.do(key, method, path, "application/json", body)
}

func (c *client) entries(key, path string) []map[string]any {
	c.t.Helper()
	r := c.do(key, "GET", path, "", "")
	list, ok := r.body["entries"].([]any)
	if r.status != http.StatusOK || !ok {
		c.t.Fatalf("GET %s: HTTP %d %s", path, r.status, r.raw)
	}
	out := make([]map[string]any, len(list))
	for i, e := range list {
		out[i] = e.(map[string]any)
	}
	return out
}

func TestHTTP(t *testing.T) {
	eachServer(t, func(t *testing.T, c *client) {
		// Create one of each kind.
		created := map[string]string{} // kind → id
		for path, body := range map[string]string{
			"terms":     `{"source": "shop", "term": "客单价", "formula": "sum(amount) / count(DISTINCT order_id)", "synonyms": ["AOV"]}`,
			"documents": `{"source": "shop", "title": "Statuses", "text": "Pending orders have no payment."}`,
			"examples":  `{"source": "shop", "question": "How many orders?", "sql": "SELECT count(*) FROM orders"}`,
			"semantic":  `{"source": "shop", "table": "orders", "column": "status", "name": "订单状态", "values": {"paid": "已支付"}}`,
		} {
			r := c.do("key-a", "POST", path, "application/json", body)
			id, _ := r.body["id"].(string)
			if r.status != http.StatusCreated || id == "" {
				t.Fatalf("POST %s: HTTP %d %s", path, r.status, r.raw)
			}
			created[path] = id
		}
		if got := c.entries("key-a", "entries?source=shop"); len(got) != 4 || got[0]["kind"] != "term" || got[3]["kind"] != "semantic" {
			t.Errorf("key a's entries: %v", got)
		}
		if got := c.entries("key-a", "examples"); len(got) != 1 || got[0]["sql"] != "SELECT count(*) FROM orders" {
			t.Errorf("key a's examples: %v", got)
		}
		if got := c.entries("key-a", "entries?kind=semantic"); len(got) != 1 || got[0]["values"].(map[string]any)["paid"] != "已支付" {
			t.Errorf("key a's semantic entries: %v", got)
		}
		if r := c.do("key-a", "GET", "sources", "", ""); r.status != http.StatusOK || !strings.Contains(r.raw, `"sources":["shop"]`) {
			t.Errorf("sources: HTTP %d %s", r.status, r.raw)
		}

		// Read, update, delete.
		term := "terms/" + created["terms"]
		if r := c.do("key-a", "GET", term, "", ""); r.status != http.StatusOK || r.body["term"] != "客单价" || r.body["source"] != "shop" {
			t.Errorf("GET %s: HTTP %d %s", term, r.status, r.raw)
		}
		r := c.json("key-a", "PUT", term, map[string]any{"term": "客单价", "description": "average paid order"})
		if r.status != http.StatusOK || r.body["description"] != "average paid order" || r.body["formula"] != nil || r.body["id"] != created["terms"] {
			t.Errorf("PUT %s: HTTP %d %s", term, r.status, r.raw)
		}
		if r := c.do("key-a", "GET", term, "", ""); r.body["description"] != "average paid order" {
			t.Errorf("GET after PUT: %s", r.raw)
		}
		if r := c.do("key-a", "DELETE", "documents/"+created["documents"], "", ""); r.status != http.StatusOK || r.body["deleted"] != true {
			t.Errorf("DELETE: HTTP %d %s", r.status, r.raw)
		}
		if r := c.do("key-a", "GET", "documents/"+created["documents"], "", ""); r.status != http.StatusNotFound || r.errorCode() != "not_found" {
			t.Errorf("GET after DELETE: HTTP %d %s", r.status, r.raw)
		}

		// Key b sees none of key a's, and cannot change them: 404 as for
		// an entry that does not exist.
		if got := c.entries("key-b", "entries"); len(got) != 0 {
			t.Errorf("key b lists %v", got)
		}
		for _, req := range []struct{ method, body string }{{"GET", ""}, {"PUT", `{"term": "x", "description": "y"}`}, {"DELETE", ""}} {
			r := c.do("key-b", req.method, term, "application/json", req.body)
			if r.status != http.StatusNotFound || r.errorCode() != "not_found" {
				t.Errorf("key b %s %s: HTTP %d %s, want 404 not_found", req.method, term, r.status, r.raw)
			}
		}
		if r := c.do("key-a", "GET", term, "", ""); r.status != http.StatusOK || r.body["description"] != "average paid order" {
			t.Errorf("key a's term after key b's tries: HTTP %d %s", r.status, r.raw)
		}
		// Key b may have its own entry with the same term.
		if r := c.json("key-b", "POST", "terms", map[string]any{"source": "shop", "term": "客单价", "description": "b's"}); r.status != http.StatusCreated {
			t.Errorf("key b's own term: HTTP %d %s", r.status, r.raw)
		}

		// Import: YAML through the JSON API as {"yaml": …}, and a JSON file.
		yaml := "terms:\n  - term: 复购率\n    formula: repeat buyers / buyers\n  - term: 客单价\n    description: average paid order\nexamples:\n  - question: How many orders?\n    sql: SELECT count(*) AS n FROM orders\n"
		body, _ := json.Marshal(map[string]string{"yaml": yaml})
		r = c.do("key-a", "POST", "import?source=shop", "application/json", string(body))
		if r.status != http.StatusOK || r.body["created"] != 1.0 || r.body["updated"] != 1.0 || r.body["unchanged"] != 1.0 {
			t.Errorf("import: HTTP %d %s, want 1 created, 1 updated, 1 unchanged", r.status, r.raw)
		}
		r = c.do("key-a", "POST", "import?source=shop", "application/json", string(body))
		if r.status != http.StatusOK || r.body["unchanged"] != 3.0 {
			t.Errorf("the same import again: HTTP %d %s, want 3 unchanged", r.status, r.raw)
		}
		r = c.do("key-b", "POST", "import", "application/json", `{"source": "crm", "documents": [{"title": "Leads", "text": "A lead is not yet a customer."}]}`)
		if r.status != http.StatusOK || r.body["created"] != 1.0 || r.body["source"] != "crm" {
			t.Errorf("a JSON file: HTTP %d %s", r.status, r.raw)
		}
		if got := c.entries("key-a", "terms?source=shop"); len(got) != 2 {
			t.Errorf("key a's terms after the import: %v", got)
		}
		if got := c.entries("key-a", "entries?source=crm"); len(got) != 0 {
			t.Errorf("key a sees key b's import: %v", got)
		}

		// Export: the YAML file of a source.
		r = c.do("key-a", "GET", "export?source=shop", "", "")
		if r.status != http.StatusOK || !strings.Contains(r.raw, "term: 复购率") || !strings.Contains(r.raw, "sql: SELECT count(*) AS n FROM orders") {
			t.Errorf("export: HTTP %d %s", r.status, r.raw)
		}
		f, err := knowledge.Parse([]byte(r.raw))
		if err != nil || f.Source != "shop" || len(f.Terms) != 2 || len(f.Examples) != 1 || len(f.Semantic) != 1 {
			t.Errorf("the export read back: %+v, %v", f, err)
		}
	})
}

// Bad input is a 4xx JSON error that says what is wrong, never a 5xx.
func TestHTTPBadInput(t *testing.T) {
	c := &client{t: t, base: serve(t, filepath.Join(t.TempDir(), "loom.db"), withMaxEntries) + prefix}
	r := c.json("key-a", "POST", "terms", map[string]any{"source": "shop", "term": "GMV", "formula": "x"})
	if r.status != http.StatusCreated {
		t.Fatalf("POST: HTTP %d %s", r.status, r.raw)
	}
	term := "terms/" + r.body["id"].(string)
	big := `{"source": "shop", "title": "big", "text": "` + strings.Repeat("x", 300<<10) + `"}`
	for _, c2 := range []struct {
		method, path, ctype, body string
		status                    int
		code, says                string
	}{
		{"POST", "terms", "application/json", `{"source": "shop", "term": "AOV", "formular": "x"}`, 400, "invalid", `unknown field "formular"`},
		{"POST", "terms", "application/json", `{"source": "shop", "term": "AOV", "formula": "x", "sql": "SELECT 1"}`, 400, "invalid", `a term has no field "sql"`},
		{"POST", "terms", "application/json", `{"source": "shop", "term": "AOV"}`, 400, "invalid", "description or formula is required"},
		{"POST", "terms", "application/json", `{"term": "AOV", "formula": "x"}`, 400, "invalid", "source is required"},
		{"POST", "terms", "application/json", `{"source": "../etc", "term": "AOV", "formula": "x"}`, 400, "invalid", `source "../etc" must be`},
		{"POST", "terms", "application/json", `{"source": "shop", "term": "GMV", "formula": "y"}`, 409, "exists", `term "GMV"`},
		{"POST", "terms", "application/json", `{"id": "mine", "source": "shop", "term": "AOV", "formula": "x"}`, 400, "invalid", "id is given by the server"},
		{"POST", "terms", "application/json", `{"kind": "example", "source": "shop", "term": "AOV", "formula": "x"}`, 400, "invalid", `kind "example" does not match`},
		{"POST", "terms", "application/json", `{"source": "shop", "term": "AOV", "formula": "x"} {}`, 400, "invalid", "data after the JSON object"},
		{"POST", "terms", "application/json", `{"source": "shop", "term": 5}`, 400, "invalid", "term"},
		{"POST", "terms", "application/json", `{"source": "shop", "term": "a\u0000b", "formula": "x"}`, 400, "invalid", "NUL"},
		{"POST", "terms", "application/json", ``, 400, "invalid", "body is empty"},
		{"POST", "terms", "text/plain", `{"source": "shop", "term": "AOV", "formula": "x"}`, 415, "unsupported_media_type", "application/json"},
		{"POST", "examples", "application/json", `{"source": "shop", "question": "q"}`, 400, "invalid", "sql is required"},
		{"POST", "semantic", "application/json", `{"source": "shop", "table": "orders", "values": {"paid": ""}}`, 400, "invalid", `value "paid" has no meaning`},
		{"POST", "documents", "application/json", big, 413, "too_large", "larger than"},
		{"PUT", term, "application/json", `{"term": "GMV", "text": "x"}`, 400, "invalid", `a term has no field "text"`},
		{"PUT", "terms/nosuch", "application/json", `{"term": "GMV", "formula": "x"}`, 404, "not_found", `no term "nosuch"`},
		{"GET", "examples/" + strings.TrimPrefix(term, "terms/"), "", "", 404, "not_found", "no example"},
		{"DELETE", "semantic/nosuch", "", "", 404, "not_found", `no semantic "nosuch"`},
		{"GET", "entries?kind=rule", "", "", 400, "invalid", `kind "rule"`},
		{"GET", "entries?source=a%20b", "", "", 400, "invalid", `source "a b"`},
		{"GET", "terms?colour=red", "", "", 400, "invalid", `unknown query parameter "colour"`},
		{"GET", "terms?source=a&source=b", "", "", 400, "invalid", "given 2 times"},
		{"GET", "rules", "", "", 404, "not_found", "no knowledge endpoint GET"},
		{"PATCH", term, "application/json", `{}`, 404, "not_found", "no knowledge endpoint PATCH"},
		{"POST", "import", "application/json", `{"yaml": "terms:\n  - term: x\n"}`, 400, "invalid", "names no source"},
		{"POST", "import?source=shop", "application/json", `{"yaml": "terms:\n  - term: x\n"}`, 400, "invalid", `terms[1] term "x": description or formula is required`},
		{"POST", "import?source=shop", "application/json", `{"yaml": "terms:\n  - term: x\n    formular: y\n"}`, 400, "invalid", "line 3: field formular is not a field of an entry"},
		{"POST", "import?source=shop", "application/json", `{"yaml": "source: crm\n"}`, 400, "invalid", `the file is about source "crm"`},
		{"POST", "import?source=shop", "application/json", `{"yaml": "terms: [", "source": "shop"}`, 400, "invalid", `holds nothing else`},
		{"POST", "import?source=shop", "application/json", `{"yaml": "terms: ["}`, 400, "invalid", "line"},
		{"POST", "import", "application/json", ``, 400, "invalid", "body is empty"},
		{"POST", "import", "application/json", `{"source": "shop", "examples": [{"question": "a", "sql": "SELECT 1"}, {"question": " A ", "sql": "SELECT 2"}]}`, 400, "invalid", `examples[2] example "A": the same as examples[1]`},
		{"GET", "export", "", "", 400, "invalid", "source is required"},
	} {
		r := c.do("key-a", c2.method, c2.path, c2.ctype, c2.body)
		if r.status != c2.status || r.errorCode() != c2.code || !strings.Contains(r.message(), c2.says) {
			t.Errorf("%s %s %.80q: HTTP %d %.300s; want %d %s saying %q", c2.method, c2.path, c2.body, r.status, r.raw, c2.status, c2.code, c2.says)
		}
	}
	// Nothing of that was stored.
	if got := c.entries("key-a", "entries"); len(got) != 1 {
		t.Errorf("after the bad requests key a has %d entries, want 1", len(got))
	}
	// A key holds at most maxEntries.
	for i := 1; i < maxEntries; i++ {
		if r := c.json("key-a", "POST", "documents", map[string]any{"source": "shop", "title": fmt.Sprint("note ", i), "text": "x"}); r.status != http.StatusCreated {
			t.Fatalf("entry %d: HTTP %d %s", i+1, r.status, r.raw)
		}
	}
	r = c.json("key-a", "POST", "documents", map[string]any{"source": "shop", "title": "one too many", "text": "x"})
	if r.status != http.StatusTooManyRequests || r.errorCode() != "quota_exceeded" || !strings.Contains(r.message(), "delete some") {
		t.Errorf("one entry over the quota: HTTP %d %s", r.status, r.raw)
	}
	// Without a key: 401, before the knowledge API.
	req, _ := http.NewRequest("GET", c.base+"entries", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without a key: HTTP %d", resp.StatusCode)
	}
}
