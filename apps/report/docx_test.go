package report_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/report"
)

// TestDOCXForm: a Word form uploaded with no model becomes a template
// that passes, with its title, its labels and its table's header as
// text and the table's columns as fields of their own.
func TestDOCXForm(t *testing.T) {
	data, err := os.ReadFile("testdata/forms/invoice.docx")
	if err != nil {
		t.Fatal(err)
	}
	l := serve(t, nil, filepath.Join(t.TempDir(), "loom.db"), report.ServerOptions{})
	id := l.uploadID("d1", "invoice.docx", data)
	tr := l.run("d1", report.Input{Upload: id, Message: "根据这个模板生成报表"})
	st := tr.state
	if st.Turn.Status != "pass" || st.Layout == nil || st.Layout.Kind != report.KindDOCX {
		t.Fatalf("path %s, status %q problems %v layout %+v", tr, st.Turn.Status, st.Turn.Problems, st.Layout)
	}
	for _, want := range []string{"INVOICE", "Bill To", "Description", "Unit Price", "$F{description}", "$F{unit_price}"} {
		if !strings.Contains(st.JRXML, want) {
			t.Errorf("the template has no %q:\n%s", want, st.JRXML)
		}
	}
	if strings.Contains(st.JRXML, "Servo motor") {
		t.Errorf("a data value is baked into the template")
	}
}
