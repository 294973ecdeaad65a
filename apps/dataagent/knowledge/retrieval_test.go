package knowledge_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/dataagent/knowledge"
	"github.com/loomkit/loom/apps/dataagent/recall"
	"github.com/loomkit/loom/store"
)

// seededStore is a store on a SQLite file with the demo knowledge seeded.
func seededStore(t *testing.T) *knowledge.Store {
	t.Helper()
	db, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "loom.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st := openStore(t, db)
	demo, err := knowledge.Demo()
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Seed(demo); err != nil {
		t.Fatal(err)
	}
	return st
}

// The demo knowledge as documents: a question finds the term and the
// example that answer it among the eight best, as many as the agent
// shows the model, through the recall package's retriever.
func TestDocsRecall(t *testing.T) {
	st := seededStore(t)
	ctx := context.Background()
	docs, err := st.Docs(ctx, knowledge.DemoSource)
	if err != nil {
		t.Fatal(err)
	}
	rdocs := make([]recall.Doc, len(docs))
	for i, d := range docs {
		if d.ID == "" || d.Title == "" || !strings.Contains(d.Text, d.Title) || (d.Kind == knowledge.KindExample) != (d.SQL != "") {
			t.Errorf("doc %+v: want an id, a title the text holds, and SQL only for an example", d)
		}
		rdocs[i] = recall.Doc{ID: d.ID, Text: d.Text}
	}
	r, err := recall.NewRetriever(ctx, rdocs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		query, term, example string
	}{
		{"客单价是多少", "客单价", "客单价是多少？"},
		{"what is the average order value", "客单价", "What is the average order value?"},
		{"复购率", "复购率", "复购率是多少？"},
	} {
		hits, err := r.Search(ctx, []string{c.query}, 8)
		if err != nil {
			t.Fatal(err)
		}
		var titles []string
		for _, h := range hits {
			titles = append(titles, docs[h.Doc].Title)
		}
		if !slices.Contains(titles, c.term) || !slices.Contains(titles, c.example) {
			t.Errorf("%q finds %q, want the term %q and the example %q among them", c.query, titles, c.term, c.example)
		}
	}
}

// The semantic model goes into the schema index as it is: a question in
// Chinese business words finds the shop's tables by their business names
// and value meanings.
func TestSemanticModelRecall(t *testing.T) {
	st := seededStore(t)
	ctx := context.Background()
	model, err := st.SemanticModel(ctx, knowledge.DemoSource)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(model, func(m recall.Meaning) bool { return m.Table == "orders" && m.Column == "status" })
	if i < 0 || model[i].Values["cancelled"] != "已取消" || model[i].Name != "订单状态" {
		t.Fatalf("orders.status in the semantic model: %+v", model)
	}
	if model[0].Table != "categories" || model[0].Column != "" {
		t.Errorf("the model starts with %+v, want the categories table's own entry", model[0])
	}
	src := openDemo(t)
	tables, err := src.Schema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s, err := recall.NewSchema(ctx, recall.Source{Tables: tables, Meanings: model}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]string{
		"已取消的订单有多少":  "orders",
		"用支付宝付款的总金额": "payments",
		"哪些商品库存不足":   "products",
		"各类目的销量":     "categories",
	} {
		res, err := s.Recall(ctx, []string{q}, recall.Options{K: 3})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tb := range res.Tables {
			got = append(got, tb.Name)
		}
		if !slices.Contains(got, want) {
			t.Errorf("%q recalls %v, want %s among them", q, got, want)
		}
	}
}
