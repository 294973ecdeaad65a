package layout_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/report/layout"
)

func TestDetect(t *testing.T) {
	for _, c := range []struct {
		name, data, want string
	}{
		{"png", "\x89PNG\r\n\x1a\nrest", layout.KindImage},
		{"jpeg", "\xff\xd8\xff\xe0rest", layout.KindImage},
		{"tiff", "II*\x00rest", layout.KindImage},
		{"webp", "RIFF\x00\x00\x00\x00WEBPVP8 ", layout.KindImage},
		{"pdf", "%PDF-1.4\n", layout.KindPDF},
		{"zip that is not a workbook", "PK\x03\x04garbage", ""},
		{"old excel", "\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", ""},
		{"text named .png", "name,qty\n", ""},
		{"empty", "", ""},
	} {
		if got := layout.Detect([]byte(c.data)); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// Input of no known kind, or of another kind than the reader's, is
// ErrUnknownFormat, whatever its name would say.
func TestReadRefuses(t *testing.T) {
	ctx := context.Background()
	for _, f := range []func() error{
		func() error { _, err := layout.Read(ctx, []byte("name,qty\n"), layout.Options{}); return err },
		func() error { _, err := layout.FromImage(ctx, []byte("%PDF-1.4\n"), layout.Options{}); return err },
		func() error {
			_, err := layout.FromXLSX(ctx, []byte("\x89PNG\r\n\x1a\n"), layout.Options{})
			return err
		},
		func() error { _, err := layout.FromPDF(ctx, []byte("PK\x03\x04"), layout.Options{}); return err },
	} {
		if err := f(); !errors.Is(err, layout.ErrUnknownFormat) {
			t.Errorf("got %v, want ErrUnknownFormat", err)
		}
	}
}

// tsv is tesseract's TSV for a small form: a title, a label with its
// value, a label alone, a two-column table of three rows, a speck and a
// table rule read as a word.
const tsv = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n" +
	"1\t1\t0\t0\t0\t0\t0\t0\t1000\t1400\t-1\t\n" +
	"5\t1\t1\t1\t1\t1\t400\t50\t60\t30\t96\t订单\n" +
	"5\t1\t1\t1\t1\t2\t470\t55\t90\t22\t95\tOrder\n" +
	"5\t1\t1\t1\t2\t1\t40\t150\t40\t24\t95\t客户\n" +
	"5\t1\t1\t1\t2\t2\t90\t154\t100\t18\t93\tCustomer:\n" +
	"5\t1\t1\t1\t2\t3\t300\t150\t96\t24\t96\t华东公司\n" +
	"5\t1\t1\t1\t2\t4\t600\t154\t60\t18\t90\tNotes:\n" +
	"5\t1\t1\t1\t3\t1\t40\t250\t48\t24\t94\t品名\n" +
	"5\t1\t1\t1\t3\t2\t400\t250\t48\t24\t94\t数量\n" +
	"5\t1\t1\t1\t3\t3\t700\t240\t4\t60\t30\t|\n" +
	"5\t1\t1\t1\t4\t1\t40\t300\t48\t24\t90\t螺丝\n" +
	"5\t1\t1\t1\t4\t2\t402\t304\t30\t18\t91\t100\n" +
	"5\t1\t1\t1\t5\t1\t40\t350\t48\t24\t90\t螺母\n" +
	"5\t1\t1\t1\t5\t2\t402\t354\t30\t18\t92\t200\n" +
	"5\t1\t1\t1\t5\t3\t800\t352\t5\t6\t41\t~\n" +
	"5\t1\t1\t1\t5\t4\t820\t352\t6\t6\t45\tMe\n"

func TestFromTSV(t *testing.T) {
	l, err := layout.FromTSV([]byte(tsv), 20)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, r := range l.Rows {
		var texts []string
		for _, i := range r.Cells {
			texts = append(texts, l.Cells[i].Text)
		}
		rows = append(rows, strings.Join(texts, "|"))
	}
	want := "订单 Order / 客户 Customer:|华东公司|Notes: / 品名|数量 / 螺丝|100 / 螺母|200"
	if got := strings.Join(rows, " / "); got != want || l.TotalRows != 5 || l.Width != 1000 || l.Height != 1400 {
		t.Errorf("rows %q (total %d, page %dx%d), want %q", got, l.TotalRows, l.Width, l.Height, want)
	}
	if len(l.Pairs) != 2 || l.Pairs[0].Label != "客户 Customer" || l.Pairs[0].Text != "华东公司" || l.Pairs[1].Label != "Notes" || l.Pairs[1].Value != -1 {
		t.Errorf("pairs %+v", l.Pairs)
	}
	if len(l.Tables) != 1 || l.Tables[0].FirstRow != 2 || l.Tables[0].LastRow != 4 || len(l.Tables[0].Columns) != 2 ||
		strings.Join(l.Tables[0].Header, "|") != "品名|数量" || l.Tables[0].Body[1][1] != "200" {
		t.Errorf("tables %+v", l.Tables)
	}
	// 客户 Customer: and 品名 share the first column.
	if c := l.Cells[1]; c.Col != 0 || l.Cells[l.Rows[2].Cells[0]].Col != 0 {
		t.Errorf("columns %+v: %q in %d", l.Columns, c.Text, c.Col)
	}
	if _, err := layout.FromTSV([]byte("not tsv"), 20); err == nil {
		t.Error("text that is not TSV read without error")
	}
}

// A page without words is an empty layout whose lists are empty, not
// null, in JSON.
func TestEmptyPage(t *testing.T) {
	l, err := layout.FromTSV([]byte("level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n1\t1\t0\t0\t0\t0\t0\t0\t800\t600\t-1\t\n"), 20)
	if err != nil {
		t.Fatal(err)
	}
	j, _ := json.Marshal(l)
	if l.TotalRows != 0 || strings.Contains(string(j), "null") {
		t.Errorf("%s", j)
	}
}
