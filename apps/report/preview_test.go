package report_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/report"
)

// TestPreviewShowsFormValues: the preview and the PDF of a template made
// from an uploaded form show the form's own values (its customer, its
// three rows of goods), not made-up ones ("seq 1", "field_6 1"), also
// for a version.
func TestPreviewShowsFormValues(t *testing.T) {
	needProgram(t, "pdftotext", "poppler-utils")
	data, err := os.ReadFile("testdata/forms/xsck.xlsx")
	if err != nil {
		t.Fatal(err)
	}
	l := serve(t, nil, filepath.Join(t.TempDir(), "loom.db"), report.ServerOptions{})
	st := l.run("v1", report.Input{Upload: l.uploadID("v1", "xsck.xlsx", data), Message: "根据这个模板生成报表"}).state
	if st.Turn.Status != "pass" || st.Layout == nil || len(st.Layout.Rows) != 3 {
		t.Fatalf("status %s, layout rows %v", st.Turn.Status, st.Layout)
	}
	for _, p := range []string{"current.pdf", "versions/1.pdf"} {
		code, pdf := l.Do(keyA, "GET", "/api/v1/report/threads/v1/"+p, nil)
		if code != 200 {
			t.Fatalf("%s: %d", p, code)
		}
		f := filepath.Join(t.TempDir(), "v.pdf")
		if err := os.WriteFile(f, pdf, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("pdftotext", f, "-").Output()
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(out), " ", "")
		for _, want := range []string{"华东五金有限公司", "XS20240518", "不锈钢螺栓", "弹簧垫圈", "六角螺母", "SP-0220"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s does not show the form's %q:\n%s", p, want, out)
			}
		}
		if strings.Contains(text, "field_") || strings.Contains(text, "seq1") {
			t.Errorf("%s shows made-up values:\n%s", p, out)
		}
	}
}
