package skeleton_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"

	"github.com/loomkit/loom/apps/report/layout"
	"github.com/loomkit/loom/apps/report/skeleton"
)

// orderBook is a workbook with a merged, bold title over four columns,
// two label/value rows, and a table of a header and three rows.
func orderBook(t testing.TB) []byte {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	sh := f.GetSheetName(0)
	set := func(cell string, v any) {
		if err := f.SetCellValue(sh, cell, v); err != nil {
			t.Fatal(err)
		}
	}
	set("A1", "销售订单 Sales Order")
	if err := f.MergeCell(sh, "A1", "D1"); err != nil {
		t.Fatal(err)
	}
	bold, err := f.NewStyle(&excelize.Style{Font: &excelize.Font{Bold: true, Size: 16}})
	if err != nil {
		t.Fatal(err)
	}
	f.SetCellStyle(sh, "A1", "D1", bold)
	f.SetRowHeight(sh, 1, 30)
	f.SetColWidth(sh, "A", "A", 20)
	f.SetColWidth(sh, "B", "D", 12)
	set("A3", "客户 Customer:")
	set("B3", "华东贸易公司")
	set("C3", "日期 Date:")
	set("D3", "2024-05-01")
	set("A5", "品名 Item")
	set("B5", "数量 Qty")
	set("C5", "单价 Price")
	set("D5", "金额 Amount")
	for i, r := range [][]any{{"螺丝 Screw", 100, 0.5, 50}, {"螺母 Nut", 200, 0.3, 60}, {"垫圈 Washer", 300, 0.1, 30}} {
		for c, v := range r {
			cell, _ := excelize.CoordinatesToCellName(c+1, 6+i)
			set(cell, v)
		}
	}
	var buf bytes.Buffer
	if _, err := f.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestXLSX reads the workbook's layout exactly — the merged title's box,
// the columns' widths, pairs and the table — and builds a valid skeleton.
func TestXLSX(t *testing.T) {
	data := orderBook(t)
	if k := layout.Detect(data); k != layout.KindXLSX {
		t.Fatalf("detected as %q", k)
	}
	l, err := layout.Read(context.Background(), data, layout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Column A is 20 characters wide (140 px, as Excel draws it), B to D
	// 12 (84 px); row 1 is 30 points (40 px), the others 15 (20 px).
	if len(l.Columns) != 4 || l.Columns[0].W != 140 || l.Columns[1].W != 84 || l.Width != 140+3*84 {
		t.Errorf("columns %+v, width %d", l.Columns, l.Width)
	}
	if l.TotalRows != 6 || l.Height != 40+7*20 {
		t.Errorf("%d rows, %d px high; want 6 rows (1, 3, 5-8) and 180 px", l.TotalRows, l.Height)
	}
	title := l.Cells[0]
	if title.Text != "销售订单 Sales Order" || title.Ref != "A1:D1" || title.Box != (layout.Box{X: 0, Y: 0, W: 140 + 3*84, H: 40}) || !title.Bold || title.Col != -1 {
		t.Errorf("title %+v", title)
	}
	if len(l.Pairs) != 2 || l.Pairs[0].Label != "客户 Customer" || l.Pairs[0].Text != "华东贸易公司" || l.Pairs[1].Text != "2024-05-01" {
		t.Errorf("pairs %+v", l.Pairs)
	}
	if len(l.Tables) != 1 {
		t.Fatalf("tables %+v", l.Tables)
	}
	tb := l.Tables[0]
	if tb.FirstRow != 2 || tb.LastRow != 5 || len(tb.Columns) != 4 || strings.Join(tb.Header, "|") != "品名 Item|数量 Qty|单价 Price|金额 Amount" || len(tb.Body) != 3 || tb.Body[2][1] != "300" {
		t.Errorf("table %+v", tb)
	}
	sk, err := skeleton.Build(l)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, sk.JRXML)
	// Two pair values and four columns; three rows of data, the pairs'
	// values in each.
	if len(sk.Fields) != 6 || sk.Fields[2].Label != "品名 Item" || len(sk.Rows) != 3 || sk.Rows[1]["field_1"] != "华东贸易公司" || sk.Rows[1]["field_4"] != "200" {
		t.Errorf("fields %+v, rows %v", sk.Fields, sk.Rows)
	}
	if !bytes.Contains(sk.JRXML, []byte(`isBold="true"`)) {
		t.Error("the bold title is not bold in the skeleton")
	}
}

// A layout whose indexes do not hold together is an error, not a panic.
func TestBuildRefuses(t *testing.T) {
	good := func() *layout.Layout {
		return &layout.Layout{Width: 100, Height: 100,
			Cells:  []layout.Cell{{Text: "a:", Box: layout.Box{X: 10, Y: 10, W: 20, H: 10}}, {Text: "b", Box: layout.Box{X: 40, Y: 10, W: 20, H: 10}}},
			Rows:   []layout.Row{{Y: 10, H: 10, Cells: []int{0, 1}}},
			Pairs:  []layout.Pair{{Label: "a", LabelCell: 0, Value: 1}},
			Tables: []layout.Table{{FirstRow: 0, LastRow: 0, Columns: []layout.Span{{X: 10, W: 20}, {X: 40, W: 20}}}},
		}
	}
	if _, err := skeleton.Build(good()); err != nil {
		t.Fatalf("the good layout: %v", err)
	}
	for name, spoil := range map[string]func(*layout.Layout){
		"nil cells":       func(l *layout.Layout) { l.Cells = nil },
		"no page":         func(l *layout.Layout) { l.Width = 0 },
		"cell's row":      func(l *layout.Layout) { l.Cells[1].Row = 7 },
		"row's cell":      func(l *layout.Layout) { l.Rows[0].Cells = []int{0, 5} },
		"pair's cell":     func(l *layout.Layout) { l.Pairs[0].Value = 9 },
		"pair's label":    func(l *layout.Layout) { l.Pairs[0].LabelCell = -1 },
		"table's rows":    func(l *layout.Layout) { l.Tables[0].LastRow = 3 },
		"table's columns": func(l *layout.Layout) { l.Tables[0].Columns = nil },
	} {
		l := good()
		spoil(l)
		if _, err := skeleton.Build(l); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := skeleton.Build(nil); !errors.Is(err, skeleton.ErrEmpty) {
		t.Errorf("nil layout: %v", err)
	}
}
