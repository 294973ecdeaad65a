package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// jrxmlData is the JasperReports data folder beside the repository
// (LOOM_JRXML_DATA overrides it); the test is skipped without it, or
// fails under CI=true.
func jrxmlData(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("LOOM_JRXML_DATA")
	if dir == "" {
		dir, _ = filepath.Abs("../../../shared/data/jrxml")
	}
	if _, err := os.Stat(filepath.Join(dir, "samples")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the jrxml data must be beside the repository under CI: %v", err)
		}
		t.Skipf("the jrxml data are not beside the repository: %v", err)
	}
	return dir
}

type checkSummary struct {
	Files, Parsed, Roundtrip, Valid, Rendered int
	Errors                                    []struct {
		File, Element, Message string
		Line                   int
	}
}

// lastJSON decodes the last line of stdout.
func lastJSON(t *testing.T, stdout string) checkSummary {
	t.Helper()
	lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	var s checkSummary
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil {
		t.Fatalf("last line %q: %v", lines[len(lines)-1], err)
	}
	return s
}

// TestReportCheckSamples runs loom report check over the 97 demo
// templates: all parse and round-trip; all pass the structural checks,
// and 76 the report schema too.
func TestReportCheckSamples(t *testing.T) {
	data := jrxmlData(t)
	samples := filepath.Join(data, "samples")
	code, stdout, stderr := loom(t, "", "report", "check", "--json", samples)
	s := lastJSON(t, stdout)
	if code != 0 || stderr != "" || s.Files != 97 || s.Parsed != 97 || s.Roundtrip != 97 || s.Valid != 97 || s.Rendered != 0 || len(s.Errors) != 0 {
		t.Errorf("exit %d, stderr %q, summary %+v", code, stderr, s)
	}
	if _, err := exec.LookPath("xmllint"); err != nil && os.Getenv("CI") != "true" {
		t.Skip("xmllint is not installed")
	}
	code, stdout, _ = loom(t, "", "report", "check", samples, "--xsd", filepath.Join(data, "xsd", "jasperreport.xsd"), "--json")
	s = lastJSON(t, stdout)
	if code != 0 || s.Valid != 76 || len(s.Errors) == 0 {
		t.Errorf("with the schema: exit %d, valid %d, %d errors", code, s.Valid, len(s.Errors))
	}
	for _, e := range s.Errors {
		if e.Line == 0 || e.Element == "" || !strings.HasPrefix(e.File, samples) {
			t.Errorf("error without a place: %+v", e)
		}
	}
	// LOOM_JRXML_XSD names schemas when --xsd does not.
	t.Setenv("LOOM_JRXML_XSD", filepath.Join(data, "xsd", "jasperreport.xsd")+string(os.PathListSeparator)+filepath.Join(data, "xsd", "components.xsd"))
	code, stdout, _ = loom(t, "", "report", "check", "--json", samples)
	if s = lastJSON(t, stdout); code != 0 || s.Valid != 91 {
		t.Errorf("with both schemas from the environment: exit %d, valid %d", code, s.Valid)
	}
}

// TestReportCheckBroken: a file that does not parse exits 1 and its error
// carries file and line; an invalid one is reported and exits 0; usage
// errors exit 2.
func TestReportCheckBroken(t *testing.T) {
	dir := t.TempDir()
	good := `<?xml version="1.0" encoding="UTF-8"?>
<jasperReport xmlns="http://jasperreports.sourceforge.net/jasperreports" name="r">
	<detail>
		<band height="20">
			<textField>
				<reportElement x="0" y="0" width="100" height="20"/>
				<textFieldExpression><![CDATA[$F{missing}]]></textFieldExpression>
			</textField>
		</band>
	</detail>
</jasperReport>
`
	invalid := filepath.Join(dir, "invalid.jrxml")
	truncated := filepath.Join(dir, "truncated.jrxml")
	os.WriteFile(invalid, []byte(good), 0o644)
	os.WriteFile(truncated, []byte(good[:strings.Index(good, "</textField>")]), 0o644)

	code, stdout, _ := loom(t, "", "report", "check", "--json", invalid)
	s := lastJSON(t, stdout)
	if code != 0 || s.Valid != 0 || len(s.Errors) != 1 || s.Errors[0].Line != 7 || s.Errors[0].Element != "textFieldExpression" {
		t.Errorf("invalid: exit %d, %+v", code, s)
	}
	if !strings.Contains(stdout, invalid+":7:5: error <textFieldExpression> $F{missing} is not a declared field") {
		t.Errorf("invalid: no FILE:LINE line in\n%s", stdout)
	}
	code, stdout, stderr := loom(t, "", "report", "check", "--json", dir)
	s = lastJSON(t, stdout)
	if code != 1 || s.Files != 2 || s.Parsed != 1 || !strings.Contains(stderr, "1 of 2 files did not parse") {
		t.Errorf("directory: exit %d, stderr %q, %+v", code, stderr, s)
	}
	if !strings.Contains(stdout, truncated+":5:4: error <textField>") {
		t.Errorf("truncated: no FILE:LINE line in\n%s", stdout)
	}
	for _, args := range [][]string{{"report"}, {"report", "draw"}, {"report", "check"}, {"report", "check", "--bogus", invalid}} {
		if code, _, stderr := loom(t, "", args...); code != 2 || !strings.Contains(stderr, "report") {
			t.Errorf("loom %q: exit %d, %s", args, code, stderr)
		}
	}
	if code, _, stderr := loom(t, "", "report", "check", filepath.Join(dir, "none.jrxml")); code != 1 || !strings.Contains(stderr, "none.jrxml") {
		t.Errorf("missing file: exit %d, %s", code, stderr)
	}
	if code, stdout, _ := loom(t, "", "report", "check", "--help"); code != 0 || !strings.Contains(stdout, `"rendered" is 0`) {
		t.Errorf("help: exit %d\n%s", code, stdout)
	}
}

// TestReportRender renders the samples with loom report check --out, and
// one template with rows from JSON with loom report render.
func TestReportRender(t *testing.T) {
	data := jrxmlData(t)
	out := t.TempDir()
	code, stdout, stderr := loom(t, "", "report", "check", "--out", out, "--dpi", "30", "--json", filepath.Join(data, "samples"))
	s := lastJSON(t, stdout)
	if code != 0 || s.Rendered != 97 {
		t.Errorf("exit %d, rendered %d, stderr %s", code, s.Rendered, stderr)
	}
	pngs, _ := filepath.Glob(filepath.Join(out, "*-1.png"))
	pdfs, _ := filepath.Glob(filepath.Join(out, "*.pdf"))
	if len(pngs) != 97 || len(pdfs) != 97 {
		t.Errorf("%d first pages and %d PDFs", len(pngs), len(pdfs))
	}

	dir := t.TempDir()
	tpl := filepath.Join(dir, "list.jrxml")
	os.WriteFile(tpl, []byte(`<jasperReport xmlns="http://jasperreports.sourceforge.net/jasperreports" name="list" pageWidth="595" pageHeight="200" columnWidth="555" leftMargin="20" rightMargin="20" topMargin="20" bottomMargin="20">
	<field name="name" class="java.lang.String"/>
	<detail><band height="40"><textField><reportElement x="0" y="0" width="300" height="40"/><textFieldExpression><![CDATA[$F{name}]]></textFieldExpression></textField></band></detail>
</jasperReport>`), 0o644)
	rows := filepath.Join(dir, "rows.json")
	os.WriteFile(rows, []byte(`[{"name":"一"},{"name":"二"},{"name":"三"},{"name":"四"},{"name":"五"}]`), 0o644)
	code, stdout, stderr = loom(t, "", "report", "render", tpl, "--data", rows, "--png", filepath.Join(dir, "png"), "--pdf", filepath.Join(dir, "list.pdf"), "--dpi", "50")
	// 160 points between the margins hold 4 bands of 40
	if code != 0 || !strings.Contains(stdout, "5 rows, 2 pages") {
		t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, f := range []string{"png/list-1.png", "png/list-2.png", "list.pdf"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	for _, args := range [][]string{{"report", "render", tpl}, {"report", "render", "--pdf", "x.pdf"}, {"report", "render", tpl, "--pdf", "x.pdf", "--dpi", "0"}} {
		if code, _, stderr := loom(t, dir, args...); code != 2 {
			t.Errorf("loom %q: exit %d, %s", args, code, stderr)
		}
	}
	if code, _, stderr := loom(t, dir, "report", "render", tpl, "--pdf", "x.pdf", "--data", "missing.json"); code != 1 || !strings.Contains(stderr, "missing.json") {
		t.Errorf("missing data: exit %d, %s", code, stderr)
	}
}
