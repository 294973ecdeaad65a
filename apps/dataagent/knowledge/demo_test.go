package knowledge_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/loomkit/loom/apps/dataagent/knowledge"
	"github.com/loomkit/loom/datasource"
	"github.com/loomkit/loom/datasource/shop"
)

// openDemo opens the SQL agent's demo shop, read only.
func openDemo(t *testing.T) *datasource.Source {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shop.db")
	if _, err := shop.Ensure(ctx, path); err != nil {
		t.Fatal(err)
	}
	src, err := datasource.Open(ctx, path, datasource.Limits{MaxRows: 1000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

// Every example of the demo knowledge runs on the demo shop through the
// guarded path and returns rows, and the Chinese and English phrasings of
// a question give the same SQL.
func TestDemoExamplesRun(t *testing.T) {
	demo, err := knowledge.Demo()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := demo.Entries(); err != nil {
		t.Fatal(err)
	}
	src := openDemo(t)
	var zh, en int
	for _, e := range demo.Examples {
		if strings.IndexFunc(e.Question, func(r rune) bool { return unicode.Is(unicode.Han, r) }) >= 0 {
			zh++
		} else {
			en++
		}
		res, err := src.Query(context.Background(), e.SQL)
		if err != nil {
			t.Errorf("%s: %v\n%s", e.Question, err, e.SQL)
			continue
		}
		if len(res.Rows) == 0 || res.Truncated {
			t.Errorf("%s: %d rows (truncated %v), want some rows, all of them\n%s", e.Question, len(res.Rows), res.Truncated, e.SQL)
		}
		for i, v := range res.Rows[0] {
			if v == nil {
				t.Errorf("%s: column %s of the first row is NULL", e.Question, res.Columns[i])
			}
		}
	}
	if zh < 10 || en < 10 {
		t.Errorf("%d Chinese and %d English examples, want at least 10 of each", zh, en)
	}
}

// The figures the terms define come out as the shop's data say: the
// average order value is the paid orders' total over their count, and the
// repeat purchase rate is a share.
func TestDemoTerms(t *testing.T) {
	demo, err := knowledge.Demo()
	if err != nil {
		t.Fatal(err)
	}
	src := openDemo(t)
	sqlOf := func(question string) string {
		for _, e := range demo.Examples {
			if e.Question == question {
				return e.SQL
			}
		}
		t.Fatalf("no example %q", question)
		return ""
	}
	one := func(stmt string) float64 {
		res, err := src.Query(context.Background(), stmt)
		if err != nil || len(res.Rows) != 1 {
			t.Fatalf("%s: %v", stmt, err)
		}
		f, ok := res.Rows[0][0].(float64)
		if !ok {
			t.Fatalf("%s: %T %v", stmt, res.Rows[0][0], res.Rows[0][0])
		}
		return f
	}
	aov := one(sqlOf("客单价是多少？"))
	// The same figure from the orders' items: a paid order's payment is
	// its items' total.
	items := one(`SELECT sum(oi.quantity * oi.unit_price) / count(DISTINCT o.id) FROM orders o JOIN order_items oi ON oi.order_id = o.id
		WHERE o.status IN ('paid', 'shipped', 'delivered')`)
	if aov < 10 || aov > 1000 || fmt.Sprintf("%.0f", aov) != fmt.Sprintf("%.0f", items) {
		t.Errorf("average order value %v from payments, %v from items", aov, items)
	}
	if r := one(sqlOf("复购率是多少？")); r <= 0 || r >= 1 {
		t.Errorf("repeat purchase rate %v, want a share between 0 and 1", r)
	}
	var names []string
	for _, e := range demo.Terms {
		names = append(names, e.Term)
		names = append(names, e.Synonyms...)
	}
	for _, want := range []string{"客单价", "average order value", "复购率", "repeat purchase rate", "GMV"} {
		if !slices.Contains(names, want) {
			t.Errorf("no term or synonym %q", want)
		}
	}
}

// The semantic model names only tables and columns the shop has, gives
// every column a business name, and its value meanings cover exactly the
// values stored.
func TestDemoSemanticModel(t *testing.T) {
	demo, err := knowledge.Demo()
	if err != nil {
		t.Fatal(err)
	}
	src := openDemo(t)
	tables, err := src.Schema(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	columns := map[string][]string{}
	for _, tb := range tables {
		for _, c := range tb.Columns {
			columns[tb.Name] = append(columns[tb.Name], c.Name)
		}
	}
	described := map[string]bool{}
	for _, e := range demo.Semantic {
		cols, ok := columns[e.Table]
		switch {
		case !ok:
			t.Errorf("%s: no table %s in the shop", e.Label(), e.Table)
			continue
		case e.Column != "" && !slices.Contains(cols, e.Column):
			t.Errorf("%s: no column %s.%s in the shop", e.Label(), e.Table, e.Column)
			continue
		}
		described[e.Table+"."+e.Column] = true
		if !strings.ContainsFunc(e.Name, func(r rune) bool { return unicode.Is(unicode.Han, r) }) {
			t.Errorf("%s: business name %q is not Chinese", e.Label(), e.Name)
		}
		if len(e.Values) == 0 {
			continue
		}
		res, err := src.Query(context.Background(), fmt.Sprintf(`SELECT DISTINCT %q FROM %q`, e.Column, e.Table))
		if err != nil {
			t.Fatal(err)
		}
		var stored []string
		for _, r := range res.Rows {
			stored = append(stored, fmt.Sprint(r[0]))
		}
		slices.Sort(stored)
		var meant []string
		for v := range e.Values {
			meant = append(meant, v)
		}
		slices.Sort(meant)
		if !slices.Equal(stored, meant) {
			t.Errorf("%s: values %v have meanings, the shop stores %v", e.Label(), meant, stored)
		}
	}
	for table, cols := range columns {
		if !described[table+"."] {
			t.Errorf("table %s has no business name", table)
		}
		for _, c := range cols {
			if c != "id" && !described[table+"."+c] {
				t.Errorf("column %s.%s has no business name", table, c)
			}
		}
	}
	if !described["orders.status"] {
		t.Error("orders.status has no meanings for its values")
	}
}
