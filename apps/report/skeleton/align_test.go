package skeleton_test

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"testing"

	"github.com/xuri/excelize/v2"

	"github.com/loomkit/loom/apps/report/layout"
	"github.com/loomkit/loom/apps/report/skeleton"
)

// TestXLSXCentredTitle: a workbook's merged title centred across its
// columns stays centred over the merged width in the skeleton; a
// right-aligned cell stays right-aligned and a plain one left.
func TestXLSXCentredTitle(t *testing.T) {
	f := excelize.NewFile()
	defer f.Close()
	sh := f.GetSheetName(0)
	for cell, v := range map[string]string{"A1": "销售订单", "A3": "客户:", "B3": "华东贸易", "D3": "第 1 页"} {
		if err := f.SetCellValue(sh, cell, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.MergeCell(sh, "A1", "D1"); err != nil {
		t.Fatal(err)
	}
	centre, _ := f.NewStyle(&excelize.Style{Font: &excelize.Font{Bold: true}, Alignment: &excelize.Alignment{Horizontal: "center"}})
	right, _ := f.NewStyle(&excelize.Style{Alignment: &excelize.Alignment{Horizontal: "right"}})
	f.SetCellStyle(sh, "A1", "D1", centre)
	f.SetCellStyle(sh, "D3", "D3", right)
	var buf bytes.Buffer
	if _, err := f.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	l, err := layout.Read(context.Background(), buf.Bytes(), layout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sk, err := skeleton.Build(l)
	if err != nil {
		t.Fatal(err)
	}
	src := string(sk.JRXML)
	title := regexp.MustCompile(`<reportElement x="0" y="0" width="(\d+)"[^>]*/>\s*<textElement textAlignment="Center">[^\n]*\n\s*<text><!\[CDATA\[销售订单\]\]>`).FindStringSubmatch(src)
	if title == nil {
		t.Fatalf("the merged title is not centred from the left edge:\n%s", src)
	}
	label := regexp.MustCompile(`width="(\d+)"[^>]*/>\s*<textElement[^\n]*\n\s*<text><!\[CDATA\[客户:\]\]>`).FindStringSubmatch(src)
	if label == nil {
		t.Fatalf("no label 客户:\n%s", src)
	}
	if tw, lw := atoi(title[1]), atoi(label[1]); tw < 3*lw {
		t.Errorf("the centred title is %d points wide, a cell %d: not the four merged columns' width", tw, lw)
	}
	if !regexp.MustCompile(`textAlignment="Right">[^\n]*\n\s*<text><!\[CDATA\[第 1 页\]\]>`).MatchString(src) {
		t.Errorf("the right-aligned cell is not right-aligned:\n%s", src)
	}
	if regexp.MustCompile(`textAlignment="[^"]*">[^\n]*\n\s*<text><!\[CDATA\[客户:\]\]>`).MatchString(src) {
		t.Errorf("a plain cell got an alignment")
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// TestXLSXBorders: a workbook table's cell borders are read as rules (one
// a grid line, as a picture's are) and the skeleton draws the table as
// boxed cells; a workbook without borders has no rules.
func TestXLSXBorders(t *testing.T) {
	book := func(borders bool) []byte {
		f := excelize.NewFile()
		defer f.Close()
		sh := f.GetSheetName(0)
		for i, row := range [][]any{{"品名", "数量", "金额"}, {"螺丝", 100, 50}, {"螺母", 200, 60}} {
			for c, v := range row {
				cell, _ := excelize.CoordinatesToCellName(c+1, 3+i)
				f.SetCellValue(sh, cell, v)
			}
		}
		f.SetCellValue(sh, "A1", "入库单")
		if borders {
			var all []excelize.Border
			for _, side := range []string{"left", "right", "top", "bottom"} {
				all = append(all, excelize.Border{Type: side, Color: "000000", Style: 1})
			}
			id, _ := f.NewStyle(&excelize.Style{Border: all})
			f.SetCellStyle(sh, "A3", "C5", id)
		}
		var buf bytes.Buffer
		if _, err := f.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	for _, borders := range []bool{true, false} {
		l, err := layout.Read(context.Background(), book(borders), layout.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var vert, horiz int
		for _, r := range l.Rules {
			if r.H > r.W {
				vert++
			} else {
				horiz++
			}
		}
		sk, err := skeleton.Build(l)
		if err != nil {
			t.Fatal(err)
		}
		boxed := regexp.MustCompile(`<box leftPadding="\d+"><pen lineWidth`).FindAllString(string(sk.JRXML), -1)
		switch {
		case borders && (vert != 4 || horiz != 4 || len(boxed) < 6):
			t.Errorf("bordered: %d vertical and %d horizontal rules (want 4 and 4), %d boxed cells (want the 3 headers and 3 fields):\n%s", vert, horiz, len(boxed), sk.JRXML)
		case !borders && (len(l.Rules) != 0 || len(boxed) != 0):
			t.Errorf("no borders: %d rules, %d boxed cells", len(l.Rules), len(boxed))
		}
	}
}
