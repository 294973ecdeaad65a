package dataagent

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/datasource"
	"github.com/loomkit/loom/datasource/shop"
	"github.com/loomkit/loom/graph"
)

// tablesOf is a schema recaller that names tables, whatever the source
// holds.
type tablesOf []string

func (t tablesOf) Recall(context.Context, string, []string, int) ([]datasource.Table, string, error) {
	var out []datasource.Table
	for _, n := range t {
		out = append(out, datasource.Table{Name: n})
	}
	return out, "", nil
}

// TestTableRelationRetries: table_relation is retried on a database error
// fewer than three times and then ends the turn; a table that does not
// exist is not retried; tables that exist give their joins.
func TestTableRelationRetries(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shop.db")
	if _, err := shop.Ensure(ctx, path); err != nil {
		t.Fatal(err)
	}
	open := func() *datasource.Source {
		src, err := datasource.Open(ctx, path, datasource.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		return src
	}
	run := func(src *datasource.Source, tables tablesOf) *graph.Result[State] {
		a := New(Config{Sources: []Source{{Name: "shop", Source: src}}, Schema: tables})
		g, err := a.Graph().Compile(graph.WithSaver(checkpoint.NewMemory()))
		if err != nil {
			t.Fatal(err)
		}
		res, err := g.Invoke(ctx, "t", func(s *State) { s.Question = "orders by customer" })
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	closed := open()
	closed.Close()
	// intent, evidence, enhance, schema, three tries of table_relation,
	// then the budget's exit, give_up.
	res := run(closed, tablesOf{"orders"})
	st := res.State
	if res.Steps != 4+RelationTries+1 || st.Relations != nil || st.Answer == nil || !st.Answer.Failed || !strings.Contains(st.Answer.Text, "describing orders") {
		t.Errorf("closed source: %d steps, relations %v, answer %+v", res.Steps, st.Relations, st.Answer)
	}

	src := open()
	defer src.Close()
	res = run(src, tablesOf{"orders", "no_such_table"})
	if st = res.State; res.Steps != 5 || st.Answer == nil || !strings.Contains(st.Answer.Text, "no_such_table") {
		t.Errorf("missing table: %d steps, answer %+v; want one try", res.Steps, st.Answer)
	}

	st = run(src, tablesOf{"orders", "customers", "order_items", "products"}).State
	want := []Relation{
		{From: "orders.customer_id", To: "customers.id"},
		{From: "order_items.order_id", To: "orders.id"},
		{From: "order_items.product_id", To: "products.id"},
	}
	for _, w := range want {
		found := false
		for _, r := range st.Relations {
			found = found || r == w
		}
		if !found {
			t.Errorf("relations %+v lack %+v", st.Relations, w)
		}
	}
	// Without a model or a matching example the turn ends at feasibility.
	if st.RelationError != "" || st.Feasibility == nil || st.Feasibility.Kind != "not_analysis" || !strings.Contains(st.Answer.Text, "LOOM_MODEL") {
		t.Errorf("after the relations: feasibility %+v answer %+v", st.Feasibility, st.Answer)
	}
}

// TestLogicalKeys: a column named after another table's key joins them
// when no foreign key says so.
func TestLogicalKeys(t *testing.T) {
	tables := []datasource.Table{
		{Name: "users", PrimaryKey: []string{"id"}, Columns: []datasource.Column{{Name: "id"}}},
		{Name: "visits", Columns: []datasource.Column{{Name: "user_id"}, {Name: "id"}}, PrimaryKey: []string{"id"}},
		{Name: "category", PrimaryKey: []string{"cid"}, Columns: []datasource.Column{{Name: "cid"}}},
		{Name: "items", Columns: []datasource.Column{{Name: "categoryid"}, {Name: "paid"}}},
	}
	got := relations(tables)
	want := []Relation{{From: "visits.user_id", To: "users.id", Logical: true}, {From: "items.categoryid", To: "category.cid", Logical: true}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("relations %+v, want %+v", got, want)
	}
}
