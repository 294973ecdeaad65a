package knowledge_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/dataagent/knowledge"
	"github.com/loomkit/loom/datasource"
)

// serveSources runs Loom's server with the knowledge API mounted as the
// data analyst mounts it: sources shop (SQLite) and pg (PostgreSQL)
// configured, YAML files taken up to MaxImport.
func serveSources(t *testing.T) *client {
	t.Helper()
	url := serve(t, filepath.Join(t.TempDir(), "loom.db"), func(st *knowledge.Store) {
		st.SetSources(map[string]datasource.Dialect{"shop": datasource.SQLite, "pg": datasource.Postgres})
	})
	return &client{t: t, base: url + prefix}
}

// TestConfiguredSources: a key with no knowledge sees the configured
// sources, so it can add knowledge for its own database; an entry for a
// source the server does not serve is refused, naming the sources.
func TestConfiguredSources(t *testing.T) {
	c := serveSources(t)
	r := c.do("key-a", "GET", "sources", "", "")
	if r.status != 200 {
		t.Fatalf("sources: %d %s", r.status, r.raw)
	}
	var got []string
	for _, s := range r.body["sources"].([]any) {
		got = append(got, s.(string))
	}
	if !slices.Equal(got, []string{"pg", "shop"}) {
		t.Fatalf("sources = %v, want the configured pg and shop", got)
	}
	r = c.json("key-a", "POST", "terms", map[string]any{"source": "pg", "term": "GMV", "formula": "sum(amount)"})
	if r.status != 201 {
		t.Fatalf("a term for the configured pg: %d %s", r.status, r.raw)
	}
	r = c.json("key-a", "POST", "terms", map[string]any{"source": "nosuch", "term": "GMV", "formula": "sum(amount)"})
	if r.status != 422 || r.errorCode() != "unknown_source" || !strings.Contains(r.message(), `"nosuch"`) || !strings.Contains(r.message(), "pg, shop") {
		t.Fatalf("a term for a source that does not exist: %d %s", r.status, r.raw)
	}
	r = c.do("key-a", "POST", "import", "application/yaml", "source: nosuch\nterms:\n  - term: GMV\n    formula: sum(amount)\n")
	if r.status != 422 || r.errorCode() != "unknown_source" {
		t.Fatalf("importing for a source that does not exist: %d %s", r.status, r.raw)
	}
}

// TestExampleSQLChecked: an example's SQL goes through the SQL guard on
// create, update and import; what it refuses is a 422 saying why, and
// nothing is stored.
func TestExampleSQLChecked(t *testing.T) {
	c := serveSources(t)
	r := c.json("key-a", "POST", "examples", map[string]any{"source": "shop", "question": "remove the customers", "sql": "DELETE FROM customers"})
	if r.status != 422 || r.errorCode() != "unsafe_sql" || !strings.Contains(r.message(), "DELETE") {
		t.Fatalf("DELETE as an example: %d %s", r.status, r.raw)
	}
	r = c.json("key-a", "POST", "examples", map[string]any{"source": "shop", "question": "how many customers?", "sql": "SELECT count(*) FROM customers; DROP TABLE customers"})
	if r.status != 422 || r.errorCode() != "unsafe_sql" {
		t.Fatalf("two statements as an example: %d %s", r.status, r.raw)
	}
	r = c.json("key-a", "POST", "examples", map[string]any{"source": "shop", "question": "how many customers?", "sql": "SELECT count(*) FROM customers"})
	if r.status != 201 {
		t.Fatalf("a query as an example: %d %s", r.status, r.raw)
	}
	id, _ := r.body["id"].(string)
	r = c.json("key-a", "PUT", "examples/"+id, map[string]any{"question": "how many customers?", "sql": "UPDATE customers SET city = 'x'"})
	if r.status != 422 || r.errorCode() != "unsafe_sql" {
		t.Fatalf("updating an example to UPDATE: %d %s", r.status, r.raw)
	}
	r = c.do("key-a", "POST", "import", "application/yaml", "source: shop\nexamples:\n  - question: clean up\n    sql: DROP TABLE orders\n")
	if r.status != 422 || r.errorCode() != "unsafe_sql" || !strings.Contains(r.message(), "DROP") {
		t.Fatalf("importing DROP as an example: %d %s", r.status, r.raw)
	}
	entries := c.entries("key-a", "examples?source=shop")
	if len(entries) != 1 || entries[0]["sql"] != "SELECT count(*) FROM customers" {
		t.Fatalf("stored examples = %v, want only the SELECT", entries)
	}
}

// TestImportYAML: a YAML file is taken as application/yaml (and the
// other YAML types), also above the server's 1 MiB limit on JSON
// bodies, up to MaxImport; another type is a 415 naming those taken.
func TestImportYAML(t *testing.T) {
	c := serveSources(t)
	for i, ct := range knowledge.ImportTypes {
		body := "source: shop\nterms:\n  - term: T" + string(rune('a'+i)) + "\n    formula: sum(amount)\n"
		if r := c.do("key-a", "POST", "import", ct, body); r.status != 200 || r.body["created"] != float64(1) {
			t.Fatalf("import as %s: %d %s", ct, r.status, r.raw)
		}
	}
	// A file of 2 MiB: its comments make it larger than the server's
	// JSON limit, within MaxImport.
	big := "source: shop\n" + strings.Repeat("# "+strings.Repeat("x", 1000)+"\n", 2<<10) + "documents:\n  - title: Big\n    text: a file of two MiB\n"
	if r := c.do("key-a", "POST", "import", "application/yaml", big); r.status != 200 || r.body["created"] != float64(1) {
		t.Fatalf("import of %d bytes: %d %.300s", len(big), r.status, r.raw)
	}
	tooBig := strings.Repeat("# "+strings.Repeat("x", 1000)+"\n", knowledge.MaxImport/1000+10)
	if r := c.do("key-a", "POST", "import", "application/yaml", tooBig); r.status != 413 {
		t.Fatalf("import of %d bytes: %d %.300s", len(tooBig), r.status, r.raw)
	}
	r := c.do("key-a", "POST", "import", "text/plain", "source: shop\n")
	if r.status != 415 || !strings.Contains(r.message(), "application/yaml") {
		t.Fatalf("import as text/plain: %d %s", r.status, r.raw)
	}
	// Malformed YAML, an alias bomb and a document of the wrong shape
	// are refused with a 4xx that says why.
	bomb := "a: &a [x, x, x, x, x, x, x, x, x]\n"
	for _, n := range "bcdefghij" {
		prev := string(n - 1)
		bomb += string(n) + ": &" + string(n) + " [*" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + "]\n"
	}
	for name, body := range map[string]string{"malformed": "examples: [\n  - {question: ", "alias bomb": bomb, "a list": "- 1\n- 2\n"} {
		r := c.do("key-a", "POST", "import", "application/yaml", body)
		if r.status < 400 || r.status >= 500 || r.message() == "" {
			t.Errorf("import of %s YAML: %d %.300s, want a 4xx that says why", name, r.status, r.raw)
		}
	}
}
