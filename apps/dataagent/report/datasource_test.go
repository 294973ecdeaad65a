package report_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/dataagent/report"
	"github.com/loomkit/loom/datasource"
	"github.com/loomkit/loom/datasource/shop"
)

// Results of real queries over the demo shop (SQLite, read through
// datasource's guard) get the chart their shape calls for, and a page
// draws them.
func TestFromResultOnTheDemoShop(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shop.db")
	if _, err := shop.Ensure(ctx, path); err != nil {
		t.Fatal(err)
	}
	src, err := datasource.Open(ctx, path, datasource.Limits{MaxRows: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()

	for _, tc := range []struct {
		name, sql, kind string
		bars            int // bars drawn, for a bar chart
	}{
		{"revenue by category", `SELECT c.name AS category, ROUND(SUM(oi.quantity * oi.unit_price), 2) AS revenue, COUNT(DISTINCT oi.order_id) AS orders
			FROM order_items oi JOIN products p ON p.id = oi.product_id JOIN categories c ON c.id = p.category_id
			GROUP BY c.name ORDER BY revenue DESC`, "bar", 16},
		{"revenue by month", `SELECT substr(o.ordered_at, 1, 7) AS month, ROUND(SUM(p.amount), 2) AS revenue
			FROM orders o JOIN payments p ON p.order_id = o.id GROUP BY 1 ORDER BY 1`, "line", 0},
		{"share of payment methods", `SELECT method, ROUND(100.0 * COUNT(*) / (SELECT COUNT(*) FROM payments), 1) AS share_pct
			FROM payments GROUP BY method ORDER BY 2 DESC`, "pie", 0},
		{"empty", `SELECT name, price FROM products WHERE price < 0`, "", 0},
		{"no numbers", `SELECT name, city FROM customers ORDER BY id LIMIT 5`, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := src.Query(ctx, tc.sql)
			if err != nil {
				t.Fatal(err)
			}
			c, ok := report.FromResult(*res, tc.name)
			if ok != (tc.kind != "") {
				t.Fatalf("chart %v for %d rows of %v, want %v", ok, len(res.Rows), res.Columns, tc.kind != "")
			}
			md := "# " + tc.name + "\n\n"
			if ok {
				if c.Series[0].Type != tc.kind {
					t.Fatalf("chart type %s, want %s: %s", c.Series[0].Type, tc.kind, c.JSON())
				}
				md += c.Block()
			}
			page, err := report.HTML(md, report.Options{})
			if err != nil {
				t.Fatal(err)
			}
			doc := parsePage(t, page.HTML)
			svgs := find(doc, "svg")
			if !ok {
				if len(svgs) != 0 {
					t.Errorf("%d svg for a result with no chart", len(svgs))
				}
				return
			}
			if len(svgs) != 1 {
				t.Fatalf("%d svg, problems %q", len(svgs), page.Problems)
			}
			if tc.bars > 0 {
				if n := bars(svgs[0]); n != tc.bars || n != len(res.Rows)*len(c.Series) {
					t.Errorf("%d bars for %d rows × %d series, want %d", n, len(res.Rows), len(c.Series), tc.bars)
				}
			}
			got := strings.Join(texts(svgs[0]), "|")
			if !strings.Contains(got, tc.name) {
				t.Errorf("chart texts lack the title %q", tc.name)
			}
			if lbl, _ := res.Rows[0][0].(string); lbl != "" && !strings.Contains(got, lbl) {
				t.Errorf("chart texts lack the first category %q", lbl)
			}
		})
	}
}
