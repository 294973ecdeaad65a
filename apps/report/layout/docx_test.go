package layout_test

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/report/layout"
)

// docx zips a document body into a DOCX file.
func docx(t *testing.T, body string) []byte {
	t.Helper()
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	w, err := z.Create("word/document.xml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(body)); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestFromDOCX reads a corpus form's document: its title, its labels with
// their values, and its table with the header row apart from the rows
// above it, bounded by the table's grid.
func TestFromDOCX(t *testing.T) {
	data, err := os.ReadFile("../testdata/forms/xsck.docx")
	if err != nil {
		t.Fatal(err)
	}
	if k := layout.Detect(data); k != layout.KindDOCX {
		t.Fatalf("detected as %q", k)
	}
	l, err := layout.Read(context.Background(), data, layout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Cells[0].Text != "销售出库单" || !l.Cells[0].Bold {
		t.Errorf("first cell %+v, want the bold title", l.Cells[0])
	}
	var labels []string
	for _, p := range l.Pairs {
		labels = append(labels, p.Label)
	}
	if got := strings.Join(labels, " "); got != "客户名称 单号 日期 联系电话 合计 经手人 审核人 备注" {
		t.Errorf("labels %s", got)
	}
	if len(l.Tables) != 1 || strings.Join(l.Tables[0].Header, "|") != "序号|商品编码|商品名称|规格|数量|金额" || len(l.Tables[0].Body) != 3 {
		t.Fatalf("tables %+v", l.Tables)
	}
	if len(l.Rules) == 0 {
		t.Errorf("no rules from the table's grid")
	}
}

// TestDOCXHostile: a document whose text unzips past the limit (whatever
// its header says), one that declares a DOCTYPE, one without text and a
// zip without a document are refused with errors that say so.
func TestDOCXHostile(t *testing.T) {
	ctx := context.Background()
	big := docx(t, `<w:document xmlns:w="w"><w:body>`+strings.Repeat(" ", 9<<20)+`</w:body></w:document>`)
	if err := layout.CheckDOCX(big); !errors.Is(err, layout.ErrDocumentTooLarge) {
		t.Errorf("a 9 MiB body: %v", err)
	}
	if _, err := layout.FromDOCX(ctx, big, layout.Options{}); !errors.Is(err, layout.ErrDocumentTooLarge) {
		t.Errorf("reading a 9 MiB body: %v", err)
	}
	for name, body := range map[string]string{
		"doctype": `<!DOCTYPE x [<!ENTITY a "aaaa">]><w:document xmlns:w="w"><w:body><w:p><w:r><w:t>&a;</w:t></w:r></w:p></w:body></w:document>`,
		"empty":   `<w:document xmlns:w="w"><w:body></w:body></w:document>`,
		"broken":  `<w:document xmlns:w="w"><w:body><w:p>`,
	} {
		if _, err := layout.FromDOCX(ctx, docx(t, body), layout.Options{}); err == nil {
			t.Errorf("%s: read", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	z.Create("word/other.xml")
	z.Close()
	if layout.Detect(buf.Bytes()) != "" {
		t.Errorf("a zip without a document or workbook is detected as one")
	}
}
