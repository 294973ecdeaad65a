package knowledge_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/loomkit/loom/apps/dataagent/knowledge"
	"github.com/loomkit/loom/store"
	"github.com/loomkit/loom/store/storetest"
)

// eachDB runs fn on a new database of each dialect: a SQLite file, and a
// schema of the test PostgreSQL server (skipped, naming the variable,
// when it cannot be reached; a failure under CI=true).
func eachDB(t *testing.T, fn func(t *testing.T, db *store.DB)) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			url := "sqlite://" + filepath.Join(t.TempDir(), "loom.db")
			if dialect == "postgres" {
				url = storetest.PostgresURL(t)
			}
			db, err := store.Open(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			fn(t, db)
		})
	}
}

func openStore(t *testing.T, db *store.DB) *knowledge.Store {
	t.Helper()
	if err := db.Migrate(context.Background(), knowledge.DefaultAgent, knowledge.Migrations); err != nil {
		t.Fatal(err)
	}
	return knowledge.Open(db, "")
}

func TestStoreCRUD(t *testing.T) {
	eachDB(t, func(t *testing.T, db *store.DB) {
		st := openStore(t, db)
		a := knowledge.WithOwner(context.Background(), "key-a")
		b := knowledge.WithOwner(context.Background(), "key-b")

		term, err := st.Create(a, knowledge.Entry{Kind: knowledge.KindTerm, Source: "shop", Term: " 客单价 ",
			Formula: "sum(amount) / count(DISTINCT order_id)", Synonyms: []string{"AOV", "aov", " ", "average order value"}})
		if err != nil {
			t.Fatal(err)
		}
		if term.ID == "" || term.Term != "客单价" || strings.Join(term.Synonyms, "|") != "AOV|average order value" || term.CreatedAt.IsZero() {
			t.Errorf("created %+v, want an id, the term trimmed, synonyms without blanks and repeats, a time", term)
		}
		if _, err := st.Create(a, knowledge.Entry{Kind: knowledge.KindTerm, Source: "shop", Term: "客单价", Description: "again"}); !errors.Is(err, knowledge.ErrExists) {
			t.Errorf("the same term again: %v, want ErrExists", err)
		}
		// Another key may have the same term: keys are apart.
		if _, err := st.Create(b, knowledge.Entry{Kind: knowledge.KindTerm, Source: "shop", Term: "客单价", Description: "key b's"}); err != nil {
			t.Errorf("key b's own term: %v", err)
		}
		ex, err := st.Create(a, knowledge.Entry{Kind: knowledge.KindExample, Source: "shop", Question: "How many orders?", SQL: "SELECT count(*) FROM orders"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Create(a, knowledge.Entry{Kind: knowledge.KindDocument, Source: "crm", Title: "Leads", Text: "A lead is a contact not yet a customer."}); err != nil {
			t.Fatal(err)
		}

		all, err := st.List(a, knowledge.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 3 || all[0].Source != "crm" || all[1].Kind != knowledge.KindTerm || all[2].Kind != knowledge.KindExample {
			t.Errorf("key a lists %+v, want crm's document, then shop's term and example", all)
		}
		shopTerms, err := st.List(a, knowledge.Filter{Source: "shop", Kind: knowledge.KindTerm})
		if err != nil || len(shopTerms) != 1 || shopTerms[0].ID != term.ID {
			t.Errorf("shop's terms: %+v, %v", shopTerms, err)
		}
		if srcs, err := st.Sources(a); err != nil || strings.Join(srcs, ",") != "crm,shop" {
			t.Errorf("sources %v, %v", srcs, err)
		}

		got, err := st.Get(a, knowledge.KindTerm, term.ID)
		if err != nil || got.Formula != term.Formula || got.Source != "shop" {
			t.Errorf("get: %+v, %v", got, err)
		}
		for name, call := range map[string]func() error{
			"get as key b":        func() error { _, err := st.Get(b, knowledge.KindTerm, term.ID); return err },
			"get as another kind": func() error { _, err := st.Get(a, knowledge.KindExample, term.ID); return err },
			"update as key b": func() error {
				_, err := st.Update(b, term.ID, knowledge.Entry{Kind: knowledge.KindTerm, Term: "x", Description: "y"})
				return err
			},
			"delete as key b": func() error { return st.Delete(b, knowledge.KindTerm, term.ID) },
		} {
			if err := call(); !errors.Is(err, knowledge.ErrNotFound) {
				t.Errorf("%s: %v, want ErrNotFound", name, err)
			}
		}

		up, err := st.Update(a, term.ID, knowledge.Entry{Kind: knowledge.KindTerm, Term: "客单价", Description: "per paid order"})
		if err != nil {
			t.Fatal(err)
		}
		if up.Formula != "" || up.Description != "per paid order" || up.Source != "shop" || !up.CreatedAt.Equal(term.CreatedAt) || up.UpdatedAt.Before(term.UpdatedAt) {
			t.Errorf("updated %+v, want its fields replaced, source and creation kept", up)
		}
		if _, err := st.Update(a, ex.ID, knowledge.Entry{Kind: knowledge.KindExample, Question: "How many orders?", SQL: ""}); !errors.Is(err, knowledge.ErrInvalid) || !strings.Contains(err.Error(), "sql is required") {
			t.Errorf("an update without sql: %v", err)
		}
		other, err := st.Create(a, knowledge.Entry{Kind: knowledge.KindExample, Source: "shop", Question: "How many customers?", SQL: "SELECT count(*) FROM customers"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Update(a, other.ID, knowledge.Entry{Kind: knowledge.KindExample, Question: "how  many ORDERS?", SQL: "SELECT 1"}); !errors.Is(err, knowledge.ErrExists) {
			t.Errorf("an update onto another example's question: %v, want ErrExists", err)
		}

		if err := st.Delete(a, knowledge.KindTerm, term.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Get(a, "", term.ID); !errors.Is(err, knowledge.ErrNotFound) {
			t.Errorf("get after delete: %v", err)
		}
		if err := st.Delete(a, knowledge.KindTerm, term.ID); !errors.Is(err, knowledge.ErrNotFound) {
			t.Errorf("delete twice: %v", err)
		}
		if bs, err := st.List(b, knowledge.Filter{}); err != nil || len(bs) != 1 || bs[0].Description != "key b's" {
			t.Errorf("key b's entries after key a's changes: %+v, %v", bs, err)
		}
	})
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		e    knowledge.Entry
		want string
	}{
		{knowledge.Entry{Kind: "rule", Source: "shop"}, `kind "rule"`},
		{knowledge.Entry{Kind: knowledge.KindTerm, Source: "shop", Term: "GMV"}, "description or formula is required"},
		{knowledge.Entry{Kind: knowledge.KindTerm, Term: "GMV", Formula: "x"}, "source is required"},
		{knowledge.Entry{Kind: knowledge.KindTerm, Source: "my shop", Term: "GMV", Formula: "x"}, `source "my shop" must be`},
		{knowledge.Entry{Kind: knowledge.KindTerm, Source: "shop", Term: "GMV", Formula: "x", SQL: "SELECT 1"}, `a term has no field "sql"`},
		{knowledge.Entry{Kind: knowledge.KindDocument, Source: "shop", Title: "t"}, "text is required"},
		{knowledge.Entry{Kind: knowledge.KindDocument, Source: "shop", Title: "t", Text: "x", Synonyms: []string{"a"}}, `a document has no field "synonyms"`},
		{knowledge.Entry{Kind: knowledge.KindExample, Source: "shop", SQL: "SELECT 1"}, "question is required"},
		{knowledge.Entry{Kind: knowledge.KindSemantic, Source: "shop", Table: "orders"}, "at least one of name, synonyms, values and description"},
		{knowledge.Entry{Kind: knowledge.KindSemantic, Source: "shop", Column: "status", Name: "x"}, "table is required"},
		{knowledge.Entry{Kind: knowledge.KindSemantic, Source: "shop", Table: "orders", Column: "status", Values: map[string]string{"paid": " "}}, `value "paid" has no meaning`},
		{knowledge.Entry{Kind: knowledge.KindTerm, Source: "shop", Term: strings.Repeat("长", 201), Formula: "x"}, "term is 201 characters long; at most 200"},
		{knowledge.Entry{Kind: knowledge.KindTerm, Source: "shop", Term: "a\x00b", Formula: "x"}, "NUL"},
	} {
		err := c.e.Validate()
		if !errors.Is(err, knowledge.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v, want ErrInvalid saying %q", c.e, err, c.want)
		}
	}
}

const shopFile = `
source: shop
terms:
  - term: 客单价
    synonyms: [AOV]
    formula: sum(payments.amount) / count(DISTINCT payments.order_id)
documents:
  - title: Statuses
    text: Pending and cancelled orders have no payment.
examples:
  - question: 订单有多少？
    sql: SELECT count(*) FROM orders
semantic:
  - table: orders
    column: status
    name: 订单状态
    values: {paid: 已支付, cancelled: 已取消}
`

func TestImport(t *testing.T) {
	eachDB(t, func(t *testing.T, db *store.DB) {
		st := openStore(t, db)
		ctx := knowledge.WithOwner(context.Background(), "key-a")
		f, err := knowledge.Parse([]byte(shopFile))
		if err != nil {
			t.Fatal(err)
		}
		res, err := st.Import(ctx, f)
		if err != nil || res != (knowledge.ImportResult{Source: "shop", Created: 4}) {
			t.Fatalf("first import: %+v, %v", res, err)
		}
		res, err = st.Import(ctx, f)
		if err != nil || res != (knowledge.ImportResult{Source: "shop", Unchanged: 4}) {
			t.Errorf("the same file again: %+v, %v, want all unchanged", res, err)
		}
		before, _ := st.List(ctx, knowledge.Filter{Source: "shop", Kind: knowledge.KindTerm})
		changed := strings.Replace(shopFile, "synonyms: [AOV]", "synonyms: [AOV, 平均订单金额]", 1)
		changed = strings.Replace(changed, "question: 订单有多少？", "question: 订单一共有多少？", 1)
		f2, err := knowledge.Parse([]byte(changed))
		if err != nil {
			t.Fatal(err)
		}
		res, err = st.Import(ctx, f2)
		if err != nil || res != (knowledge.ImportResult{Source: "shop", Created: 1, Updated: 1, Unchanged: 2}) {
			t.Errorf("a changed file: %+v, %v, want the term updated, a new example", res, err)
		}
		after, _ := st.List(ctx, knowledge.Filter{Source: "shop", Kind: knowledge.KindTerm})
		if len(after) != 1 || after[0].ID != before[0].ID || len(after[0].Synonyms) != 2 {
			t.Errorf("the term after the import: %+v, want the same id with two synonyms", after)
		}
		// Another key's import is its own.
		if res, err := st.Import(knowledge.WithOwner(context.Background(), "key-b"), f); err != nil || res.Created != 4 {
			t.Errorf("key b's import: %+v, %v", res, err)
		}
		// Export gives back a file that imports as unchanged.
		out, err := st.Export(ctx, "shop")
		if err != nil {
			t.Fatal(err)
		}
		y, err := out.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		back, err := knowledge.Parse(y)
		if err != nil {
			t.Fatalf("%v in\n%s", err, y)
		}
		if res, err := st.Import(ctx, back); err != nil || res.Unchanged != 5 || res.Created+res.Updated != 0 {
			t.Errorf("importing the export: %+v, %v\n%s", res, err, y)
		}
		// A file with nothing in it does nothing.
		empty, err := knowledge.Parse([]byte("source: shop\n"))
		if err != nil {
			t.Fatal(err)
		}
		if res, err := st.Import(ctx, empty); err != nil || res != (knowledge.ImportResult{Source: "shop"}) {
			t.Errorf("an empty file: %+v, %v", res, err)
		}
		// A bad file changes nothing and names its entries.
		bad := shopFile + "  - table: orders\n    column: status\n    name: again\n  - table: payments\n"
		fb, err := knowledge.Parse([]byte(bad))
		if err != nil {
			t.Fatal(err)
		}
		_, err = st.Import(knowledge.WithOwner(context.Background(), "key-c"), fb)
		for _, want := range []string{`semantic[2] semantic "orders.status": the same as semantic[1]`, `semantic[3] semantic "payments": at least one of`} {
			if !errors.Is(err, knowledge.ErrInvalid) || !strings.Contains(err.Error(), want) {
				t.Errorf("a bad file: %v, want %q", err, want)
			}
		}
		if es, _ := st.List(knowledge.WithOwner(context.Background(), "key-c"), knowledge.Filter{}); len(es) != 0 {
			t.Errorf("a bad file stored %d entries", len(es))
		}
	})
}

func TestParse(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"", "the file is empty"},
		{"source: shop\nterms:\n  - term: GMV\n    formular: x\n", "line 4: field formular is not a field of an entry"},
		{"source: shop\nrules: []\n", "field rules is not a section of a knowledge file"},
		{"source: shop\nterms: {term: x}\n", "line 2"},
		{"source: shop\n---\nsource: crm\n", "more than one YAML document"},
	} {
		_, err := knowledge.Parse([]byte(c.file))
		if !errors.Is(err, knowledge.ErrInvalid) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "knowledge.") {
			t.Errorf("Parse(%q) = %v, want ErrInvalid saying %q without Go's names", c.file, err, c.want)
		}
	}
	f, err := knowledge.Parse([]byte("terms:\n  - term: GMV\n    formula: x\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Entries(); !errors.Is(err, knowledge.ErrInvalid) || !strings.Contains(err.Error(), "names no source") {
		t.Errorf("a file without a source: %v", err)
	}
}

// Seeded knowledge comes once per owner: what an owner deletes stays
// deleted, even for a new process on the same database.
func TestSeed(t *testing.T) {
	eachDB(t, func(t *testing.T, db *store.DB) {
		demo, err := knowledge.Demo()
		if err != nil {
			t.Fatal(err)
		}
		want, err := demo.Entries()
		if err != nil {
			t.Fatal(err)
		}
		st := openStore(t, db)
		if err := st.Seed(demo); err != nil {
			t.Fatal(err)
		}
		a := knowledge.WithOwner(context.Background(), "key-a")
		got, err := st.List(a, knowledge.Filter{Source: knowledge.DemoSource})
		if err != nil || len(got) != len(want) {
			t.Fatalf("key a's first list: %d entries, %v; want the %d of the demo", len(got), err, len(want))
		}
		if err := st.Delete(a, "", got[0].ID); err != nil {
			t.Fatal(err)
		}
		again := openStore(t, db)
		if err := again.Seed(demo); err != nil {
			t.Fatal(err)
		}
		if got, _ := again.List(a, knowledge.Filter{}); len(got) != len(want)-1 {
			t.Errorf("key a after a delete and a new store: %d entries, want %d", len(got), len(want)-1)
		}
		if got, _ := again.List(knowledge.WithOwner(context.Background(), "key-b"), knowledge.Filter{Kind: knowledge.KindTerm}); len(got) != len(demo.Terms) {
			t.Errorf("key b's terms: %d, want the demo's %d", len(got), len(demo.Terms))
		}
		if err := st.Seed(&knowledge.File{Source: "shop", Terms: []knowledge.Entry{{Term: "x"}}}); !errors.Is(err, knowledge.ErrInvalid) {
			t.Errorf("seeding a bad file: %v", err)
		}
	})
}

// Calls that seed and import the same entries at once, as replicas of a
// server do, all succeed and store each entry once.
func TestConcurrentSeedAndImport(t *testing.T) {
	eachDB(t, func(t *testing.T, db *store.DB) {
		demo, err := knowledge.Demo()
		if err != nil {
			t.Fatal(err)
		}
		want, _ := demo.Entries()
		f, err := knowledge.Parse([]byte(shopFile))
		if err != nil {
			t.Fatal(err)
		}
		ctx := knowledge.WithOwner(context.Background(), "key-a")
		const n = 8
		errs := make(chan error, 2*n)
		var wg sync.WaitGroup
		for range n {
			st := openStore(t, db) // each its own process's store
			if err := st.Seed(demo); err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				_, err := st.List(ctx, knowledge.Filter{Source: "shop"})
				errs <- err
			})
			wg.Go(func() {
				_, err := st.Import(ctx, f)
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		got, err := openStore(t, db).List(ctx, knowledge.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		// shopFile's term and its orders.status entry are also the demo's
		// (by natural key); its document and example are new.
		if len(got) != len(want)+2 {
			t.Errorf("%d entries, want the demo's %d and a document and an example", len(got), len(want))
		}
	})
}

// An owner may hold only so many entries; what would go over changes
// nothing, and another owner is not counted.
func TestQuota(t *testing.T) {
	eachDB(t, func(t *testing.T, db *store.DB) {
		st := openStore(t, db)
		st.SetMaxEntries(3)
		a := knowledge.WithOwner(context.Background(), "key-a")
		f, err := knowledge.Parse([]byte(shopFile)) // 4 entries
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Import(a, f); !errors.Is(err, knowledge.ErrQuota) {
			t.Errorf("importing 4 entries under a quota of 3: %v", err)
		}
		for i := range 3 {
			if _, err := st.Create(a, knowledge.Entry{Kind: knowledge.KindDocument, Source: "shop", Title: fmt.Sprint("note ", i), Text: "x"}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := st.Create(a, knowledge.Entry{Kind: knowledge.KindDocument, Source: "crm", Title: "one more", Text: "x"}); !errors.Is(err, knowledge.ErrQuota) {
			t.Errorf("a fourth entry: %v", err)
		}
		if got, _ := st.List(a, knowledge.Filter{}); len(got) != 3 {
			t.Errorf("%d entries after the refusals, want 3", len(got))
		}
		if _, err := st.Import(knowledge.WithOwner(context.Background(), "key-b"), &knowledge.File{Source: "shop", Terms: f.Terms}); err != nil {
			t.Errorf("key b's import: %v", err)
		}
	})
}

// TestMigrationsAdoptEarlierTables: the tables an earlier build made
// (its migrations recorded under "dataagent_knowledge", when Open applied
// them) are kept, with their entries, when the agent's Migrations are
// applied under its own name.
func TestMigrationsAdoptEarlierTables(t *testing.T) {
	eachDB(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		if err := db.Migrate(ctx, "dataagent_knowledge", knowledge.Migrations); err != nil {
			t.Fatal(err)
		}
		a := knowledge.WithOwner(ctx, "key-a")
		if _, err := knowledge.Open(db, "").Create(a, knowledge.Entry{Kind: knowledge.KindTerm, Source: "shop", Term: "客单价", Description: "earlier"}); err != nil {
			t.Fatal(err)
		}
		if err := db.Migrate(ctx, knowledge.DefaultAgent, knowledge.Migrations); err != nil {
			t.Fatalf("the agent's Migrations on the earlier tables: %v", err)
		}
		es, err := knowledge.Open(db, "").List(a, knowledge.Filter{Kind: knowledge.KindTerm})
		if err != nil || len(es) != 1 || es[0].Description != "earlier" {
			t.Errorf("after the migration: %+v %v, want the earlier term", es, err)
		}
	})
}
