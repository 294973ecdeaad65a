package main

import (
	"database/sql"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"

	"github.com/loomkit/loom/apps/report/jrxml"
	"github.com/loomkit/loom/internal/testenv"
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
		testenv.Need(t, "the jrxml data are not beside the repository", err)
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
	testenv.NeedProgram(t, "xmllint", "Debian package libxml2-utils")
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

// formBook is a small XLSX order form: a merged title, a label with its
// value, and a table of two columns and two rows.
func formBook(t *testing.T, path string) {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	sh := f.GetSheetName(0)
	for cell, v := range map[string]string{"A1": "订单 Order", "A2": "客户 Customer:", "B2": "华东公司", "A4": "品名 Item", "B4": "数量 Qty", "A5": "螺丝", "B5": "100", "A6": "螺母", "B6": "200"} {
		if err := f.SetCellValue(sh, cell, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.MergeCell(sh, "A1", "B1"); err != nil {
		t.Fatal(err)
	}
	if err := f.SaveAs(path); err != nil {
		t.Fatal(err)
	}
}

// TestReportOCRSkeleton reads a form's layout and its skeleton from an
// XLSX file (no OCR), refuses what is not a form by its content, and
// reads a rendered form's PNG back through tesseract.
func TestReportOCRSkeleton(t *testing.T) {
	dir := t.TempDir()
	book := filepath.Join(dir, "form.xlsx")
	formBook(t, book)
	code, stdout, stderr := loom(t, "", "report", "ocr", "--json", book)
	var l struct {
		Source    string
		TotalRows int `json:"total_rows"`
		Pairs     []struct{ Label, Text string }
		Tables    []struct{ Header []string }
	}
	if err := json.Unmarshal([]byte(stdout), &l); err != nil || code != 0 {
		t.Fatalf("exit %d, %v, stderr %s\n%s", code, err, stderr, stdout)
	}
	if l.Source != "xlsx" || l.TotalRows != 5 || len(l.Pairs) != 1 || l.Pairs[0].Text != "华东公司" || len(l.Tables) != 1 || strings.Join(l.Tables[0].Header, "|") != "品名 Item|数量 Qty" {
		t.Errorf("layout %+v", l)
	}
	code, stdout, _ = loom(t, "", "report", "ocr", book)
	if code != 0 || !strings.Contains(stdout, "pair: 客户 Customer = 华东公司") || !strings.Contains(stdout, "table 1: rows 3-5, 2 columns: 品名 Item | 数量 Qty") {
		t.Errorf("exit %d\n%s", code, stdout)
	}
	code, stdout, stderr = loom(t, "", "report", "skeleton", book)
	if code != 0 || !strings.Contains(stdout, "$F{field_1}") || !strings.Contains(stdout, "<detail>") {
		t.Errorf("skeleton: exit %d, %s\n%s", code, stderr, stdout)
	}
	if doc, err := jrxml.Parse([]byte(stdout)); err != nil || len(jrxml.Errors(doc.Check())) > 0 {
		t.Errorf("the skeleton does not check: %v", err)
	}
	out := filepath.Join(dir, "skeleton.jrxml")
	if code, stdout, _ := loom(t, "", "report", "skeleton", book, "--out", out); code != 0 || !strings.Contains(stdout, "3 fields") {
		t.Errorf("--out: exit %d, %s", code, stdout)
	}
	if code, _, stderr := loom(t, "", "report", "check", out); code != 0 {
		t.Errorf("check of the skeleton: exit %d, %s", code, stderr)
	}
	// A CSV named .png, and a missing file: exit 1 with the reason.
	fake := filepath.Join(dir, "fake.png")
	os.WriteFile(fake, []byte("name,qty\n"), 0o644)
	for _, args := range [][]string{{"report", "ocr", fake}, {"report", "skeleton", fake}, {"report", "ocr", filepath.Join(dir, "none.png")}} {
		if code, _, stderr := loom(t, "", args...); code != 1 || !strings.Contains(stderr, filepath.Base(args[2])) || args[2] == fake && !strings.Contains(stderr, "not a picture") {
			t.Errorf("loom %q: exit %d, %s", args, code, stderr)
		}
	}
	for _, args := range [][]string{{"report", "ocr"}, {"report", "skeleton", book, book}, {"report", "ocr", "--psm", "99", book}, {"report", "ocr", "--bogus", book}} {
		if code, _, stderr := loom(t, "", args...); code != 2 {
			t.Errorf("loom %q: exit %d, %s", args, code, stderr)
		}
	}
	if code, stdout, _ := loom(t, "", "report", "ocr", "--help"); code != 0 || !strings.Contains(stdout, "loom report skeleton") {
		t.Errorf("help: exit %d\n%s", code, stdout)
	}

	// A form drawn by loom report render, read back with OCR.
	testenv.NeedProgram(t, "tesseract", "Debian packages tesseract-ocr, tesseract-ocr-chi-sim")
	tpl := filepath.Join(dir, "form.jrxml")
	os.WriteFile(tpl, []byte(`<jasperReport xmlns="http://jasperreports.sourceforge.net/jasperreports" name="form" pageWidth="595" pageHeight="842" columnWidth="555" leftMargin="20" rightMargin="20" topMargin="20" bottomMargin="20">
	<title><band height="100">
		<staticText><reportElement x="0" y="0" width="300" height="30"/><textElement><font size="18"/></textElement><text><![CDATA[订单 Order]]></text></staticText>
		<staticText><reportElement x="0" y="50" width="150" height="20"/><textElement><font size="12"/></textElement><text><![CDATA[客户 Customer:]]></text></staticText>
		<staticText><reportElement x="200" y="50" width="150" height="20"/><textElement><font size="12"/></textElement><text><![CDATA[华东公司]]></text></staticText>
	</band></title>
</jasperReport>`), 0o644)
	if code, _, stderr := loom(t, "", "report", "render", tpl, "--png", dir); code != 0 {
		t.Fatalf("render: exit %d, %s", code, stderr)
	}
	code, stdout, stderr = loom(t, "", "report", "ocr", filepath.Join(dir, "form-1.png"))
	if code != 0 || !strings.Contains(stdout, "pair: 客户 Customer = 华东公司") || !strings.Contains(stdout, "订单 Order") {
		t.Errorf("ocr of the PNG: exit %d, %s\n%s", code, stderr, stdout)
	}
}

// TestReportRenderDB renders a template with the rows its queryString
// gives on a SQLite database, read-only.
func TestReportRenderDB(t *testing.T) {
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "shop.db")
	db, err := sql.Open("sqlite", dbPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, qty INTEGER);
		INSERT INTO items VALUES (1, '螺丝 screw', 100), (2, '螺母 nut', 200), (3, '垫圈 washer', 300)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	write := func(name, query string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(`<jasperReport xmlns="http://jasperreports.sourceforge.net/jasperreports" name="items" pageWidth="595" pageHeight="842" columnWidth="555" leftMargin="20" rightMargin="20" topMargin="20" bottomMargin="20">
	<parameter name="MIN" class="java.lang.Integer"/>
	<queryString><![CDATA[`+query+`]]></queryString>
	<field name="NAME" class="java.lang.String"/>
	<field name="qty" class="java.lang.Integer"/>
	<detail><band height="20">
		<textField><reportElement x="0" y="0" width="300" height="20"/><textFieldExpression><![CDATA[$F{NAME}]]></textFieldExpression></textField>
		<textField><reportElement x="300" y="0" width="100" height="20"/><textFieldExpression><![CDATA[$F{qty}]]></textFieldExpression></textField>
	</band></detail>
</jasperReport>`), 0o644)
		return p
	}
	tpl := write("items.jrxml", "SELECT name, qty FROM items ORDER BY id")
	pdf := filepath.Join(dir, "items.pdf")
	code, stdout, stderr := loom(t, "", "report", "render", tpl, "--db", "sqlite://"+dbPath, "--pdf", pdf)
	if code != 0 || !strings.Contains(stdout, "3 rows, 1 pages") {
		t.Fatalf("exit %d, %s\n%s", code, stderr, stdout)
	}
	if _, err := exec.LookPath("pdftotext"); err == nil {
		// The column "name" fills the field NAME.
		text, err := exec.Command("pdftotext", pdf, "-").Output()
		if err != nil || !strings.Contains(string(text), "螺母 nut") || !strings.Contains(string(text), "300") {
			t.Errorf("pdftotext: %v\n%s", err, text)
		}
	}
	for _, c := range []struct{ name, query, want string }{
		{"write.jrxml", "DELETE FROM items", "read-only"},
		{"param.jrxml", "SELECT name, qty FROM items WHERE qty > $P{MIN}", "$P{}"},
		{"none.jrxml", " ", "no queryString"},
	} {
		code, _, stderr := loom(t, "", "report", "render", write(c.name, c.query), "--db", "sqlite://"+dbPath, "--pdf", pdf)
		if code != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, %s", c.name, code, stderr)
		}
	}
	if code, stdout, _ := loom(t, "", "sql", "--db", "sqlite://"+dbPath, "SELECT count(*) AS n FROM items"); code != 0 || !strings.Contains(stdout, "3") {
		t.Errorf("the items are gone after the refused DELETE: exit %d\n%s", code, stdout)
	}
	if code, _, _ := loom(t, "", "report", "render", tpl, "--db", "sqlite://"+dbPath, "--data", "rows.json", "--pdf", pdf); code != 2 {
		t.Errorf("--db with --data: exit %d", code)
	}
}
