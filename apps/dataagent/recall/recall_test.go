package recall_test

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/dataagent/recall"
	"github.com/loomkit/loom/datasource"
	"github.com/loomkit/loom/llm/llmtest"
	"github.com/loomkit/loom/llm/openai"
)

func embedder(t *testing.T) (*openai.Embedder, *llmtest.Server) {
	t.Helper()
	srv := llmtest.New(t)
	e, err := openai.NewEmbedder(openai.Config{BaseURL: srv.BaseURL(), Model: "embed-test", MaxRetries: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return e, srv
}

var docs = []recall.Doc{
	{ID: "gmv", Text: "GMV 成交总额: the total amount of paid orders"},
	{ID: "churn", Text: "客户流失率 churn rate: customers who stopped buying"},
	{ID: "history", Text: "ordering history of a shop"},
}

func ids(hits []recall.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.ID)
	}
	return out
}

func TestRetrieverWords(t *testing.T) {
	r, err := recall.NewRetriever(t.Context(), docs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		queries []string
		want    []string
	}{
		{[]string{"上个月客户流失了多少"}, []string{"churn"}},
		{[]string{"total order amount"}, []string{"gmv"}},
		{[]string{"", "GMV"}, []string{"gmv"}},
		{[]string{"weather"}, nil},
	} {
		hits, err := r.Search(t.Context(), c.queries, 5)
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(hits); !slices.Equal(got, c.want) {
			t.Errorf("%q: %v, want %v", c.queries, got, c.want)
		}
		for _, h := range hits {
			if h.Lexical <= 0 || h.Lexical > 1 || h.Cosine != 0 {
				t.Errorf("%q: %+v", c.queries, h)
			}
		}
	}
	// Two queries that each rank gmv first: reciprocal rank fusion sums
	// 1/(60+1) twice.
	hits, _ := r.Search(t.Context(), []string{"GMV", "paid orders"}, 1)
	if len(hits) != 1 || math.Abs(hits[0].Score-2.0/61) > 1e-12 {
		t.Errorf("fused %+v, want gmv at 2/61", hits)
	}
}

func TestRetrieverWithEmbeddings(t *testing.T) {
	e, srv := embedder(t)
	r, err := recall.NewRetriever(t.Context(), docs, e)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d embedding requests to index, want 1", n)
	}
	// "orders" shares no word with "ordering history" but, in the test
	// endpoint's vectors, character bigrams: only embeddings find it.
	hits, err := r.Search(t.Context(), []string{"orders"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var history *recall.Hit
	for i := range hits {
		if hits[i].ID == "history" {
			history = &hits[i]
		}
	}
	if history == nil || history.Lexical != 0 || history.Cosine <= 0 {
		t.Fatalf("ordering history: %+v in %+v", history, hits)
	}
	if hits[0].ID != "gmv" || hits[0].Lexical <= 0 {
		t.Errorf("best %+v, want gmv by words and vectors", hits[0])
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || !slices.Equal(reqs[1].Inputs(), []string{"orders"}) {
		t.Errorf("query embedding requests: %d", len(reqs))
	}
	words, _ := recall.NewRetriever(t.Context(), docs, nil)
	if hits, _ := words.Search(t.Context(), []string{"orders"}, 0); slices.Contains(ids(hits), "history") {
		t.Error("words alone found ordering history")
	}
}

// shop is a small schema with a declared foreign key, a logical key
// (order_items.product_id, undeclared) and a link table.
func shop() []datasource.Table {
	col := func(names ...string) []datasource.Column {
		var cs []datasource.Column
		for _, n := range names {
			typ := "text"
			if strings.HasSuffix(strings.ToLower(n), "id") {
				typ = "integer"
			}
			cs = append(cs, datasource.Column{Name: n, Type: typ})
		}
		return cs
	}
	return []datasource.Table{
		{Name: "customers", Comment: "people who bought", PrimaryKey: []string{"customer_id"}, Columns: col("customer_id", "fullName", "city", "tier")},
		{Name: "orders", PrimaryKey: []string{"id"}, Columns: col("id", "customer_id", "placedAt", "status"),
			ForeignKeys: []datasource.ForeignKey{{Columns: []string{"customer_id"}, RefTable: "customers", RefColumns: []string{"customer_id"}}}},
		{Name: "orderItems", PrimaryKey: []string{"order_id", "product_id"}, Columns: col("order_id", "product_id", "qty"),
			ForeignKeys: []datasource.ForeignKey{{Columns: []string{"order_id"}, RefTable: "orders", RefColumns: []string{"id"}}}},
		{Name: "products", PrimaryKey: []string{"product_id"}, Columns: col("product_id", "title", "category")},
		{Name: "suppliers", PrimaryKey: []string{"supplier_id"}, Columns: col("supplier_id", "company")},
		{Name: "supplies", Columns: col("supplier_id", "product_id")},
		{Name: "audit_log", Columns: col("at", "message")},
	}
}

func shopSchema(t *testing.T) *recall.Schema {
	t.Helper()
	s, err := recall.NewSchema(t.Context(), recall.Source{
		Tables: shop(),
		Meanings: []recall.Meaning{
			{Table: "customers", Column: "tier", Name: "客户等级", Synonyms: []string{"会员级别"}, Values: map[string]string{"A": "大客户"}},
			{Table: "products", Name: "商品"},
			{Table: "nowhere", Column: "x", Name: "ignored"},
		},
		Samples: map[string][]string{"customers.city": {"Berlin", "Lyon"}, "products.category": {"kettles"}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type recalled struct {
	name    string
	columns []string
	via     string
}

func recallAll(t *testing.T, s *recall.Schema, queries []string, o recall.Options) ([]recalled, *recall.Result) {
	t.Helper()
	res, err := s.Recall(t.Context(), queries, o)
	if err != nil {
		t.Fatal(err)
	}
	var out []recalled
	for _, tb := range res.Tables {
		out = append(out, recalled{tb.Name, tb.Columns, tb.Via})
	}
	return out, res
}

func TestSchemaRecall(t *testing.T) {
	s := shopSchema(t)
	if s.Len() != 7 {
		t.Fatalf("Len %d", s.Len())
	}
	for _, c := range []struct {
		name    string
		queries []string
		k       int
		want    []recalled
	}{
		{"a value names its column", []string{"who lives in Berlin"}, 2,
			[]recalled{{"customers", []string{"city"}, ""}}},
		{"semantic name and enum meaning in Chinese", []string{"会员级别是大客户的有多少"}, 1,
			[]recalled{{"customers", []string{"tier"}, ""}}},
		{"camelCase table name and plural", []string{"quantity of order items"}, 1,
			[]recalled{{"orderItems", []string{"order_id"}, ""}}},
		{"the tables that join two others are brought in", []string{"which customers bought kettles", "customers product category"}, 4,
			[]recalled{{"customers", []string{"customer_id"}, ""}, {"products", []string{"product_id", "category"}, ""}, {"orderItems", []string{"product_id"}, "join of customers and products"}, {"orders", []string{"customer_id"}, ""}}},
		{"a link table brings its ends", []string{"supplies"}, 3,
			[]recalled{{"supplies", nil, ""}, {"suppliers", nil, "joined through supplies"}, {"products", nil, "joined through supplies"}}},
	} {
		got, _ := recallAll(t, s, c.queries, recall.Options{K: c.k})
		if !equalRecalled(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

func equalRecalled(a, b []recalled) bool {
	return slices.EqualFunc(a, b, func(x, y recalled) bool {
		return x.name == y.name && slices.Equal(x.columns, y.columns) && (y.via == "" || x.via == y.via)
	})
}

func TestSchemaJoinsAlongKeys(t *testing.T) {
	s := shopSchema(t)
	// orderItems is a link table (its columns are keys to orders and, by
	// name, products): asking for it brings both of its ends.
	got, res := recallAll(t, s, []string{"customers and their order items"}, recall.Options{K: 4})
	names := make([]string, len(got))
	for i, g := range got {
		names[i] = g.name
	}
	if !slices.Equal(names, []string{"orderItems", "products", "orders", "customers"}) {
		t.Fatalf("%v", names)
	}
	for _, want := range []string{
		"customer_id integer -> customers.customer_id",          // declared
		"product_id integer PRIMARY KEY -> products.product_id", // logical: named as products' key
		"order_id integer PRIMARY KEY -> orders.id",             // declared
		"TABLE customers -- people who bought",                  // comment
		"TABLE products -- 商品; joined through orderItems",       // table meaning, and why it is here
		"  ... ", // never: nothing is compact without a budget
	} {
		if strings.Contains(res.Text, want) != (want != "  ... ") {
			t.Errorf("text and %q:\n%s", want, res.Text)
		}
	}
}

func TestSchemaPacksToBudget(t *testing.T) {
	s := shopSchema(t)
	queries := []string{"customers and their order items"}
	_, whole := recallAll(t, s, queries, recall.Options{K: 3})
	if len(whole.Tables) != 3 || whole.Tokens == 0 {
		t.Fatalf("unbounded: %d tables, %d tokens", len(whole.Tables), whole.Tokens)
	}
	for _, budget := range []int{whole.Tokens - 1, whole.Tokens / 2, 25, 1} {
		_, res := recallAll(t, s, queries, recall.Options{K: 3, TokenBudget: budget})
		if res.Tokens > budget {
			t.Errorf("budget %d: %d tokens", budget, res.Tokens)
		}
		compact := 0
		for _, tb := range res.Tables {
			if tb.Compact {
				compact++
				if !strings.Contains(res.Text, "more columns") {
					t.Errorf("budget %d: compact table without the count of left-out columns", budget)
				}
			}
		}
		if budget == whole.Tokens-1 && (len(res.Tables) != 3 || compact == 0) {
			t.Errorf("budget one short: %d tables, %d compact; want 3, some compact", len(res.Tables), compact)
		}
		if budget == 1 && len(res.Tables) != 0 {
			t.Errorf("budget 1: %d tables", len(res.Tables))
		}
	}
}

func TestSchemaWithEmbeddings(t *testing.T) {
	e, srv := embedder(t)
	s, err := recall.NewSchema(t.Context(), recall.Source{Tables: shop()}, e)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := recallAll(t, s, []string{"customers in Lyon", "customer city"}, recall.Options{K: 1})
	if len(got) != 1 || got[0].name != "customers" {
		t.Errorf("%+v, want customers", got)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || len(reqs[0].Inputs()) != 7 || len(reqs[1].Inputs()) != 2 {
		t.Errorf("embedding requests: %d", len(reqs))
	}
	srv.Close()
	if _, err := s.Recall(context.Background(), []string{"x"}, recall.Options{}); err == nil {
		t.Error("recall with the embeddings endpoint gone succeeded")
	}
}
