package render_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/report/render"
)

func TestEval(t *testing.T) {
	s := render.Scope{Fields: map[string]any{"name": "李", "n": 2.0}, Params: map[string]any{"T": "Title"}, Vars: map[string]any{"PAGE_NUMBER": 3.0}}
	for _, tc := range []struct{ expr, want string }{
		{`$F{name}`, "李"},
		{`"Page " + $V{PAGE_NUMBER}`, "Page 3"},
		{`$F{n} + 1.5`, "3.5"},
		{`$P{T} + " \u0393"`, "Title Γ"},
		{`$F{name} == "李" ? "yes" : "no"`, "yes"},
		{`($F{n} != 2) ? "yes" : "no"`, "no"},
		{`$F{missing}`, ""},
	} {
		v, err := render.Eval(tc.expr, s)
		if err != nil || render.Format(v) != tc.want {
			t.Errorf("%s = %q, %v; want %q", tc.expr, render.Format(v), err, tc.want)
		}
	}
	for _, bad := range []string{`new java.util.Date()`, `$F{n}.toString()`, `"open`, `$F{n} > 1`} {
		if _, err := render.Eval(bad, s); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

const grouped = `<jasperReport xmlns="http://jasperreports.sourceforge.net/jasperreports" name="g" pageWidth="595" pageHeight="300" columnWidth="555" leftMargin="20" rightMargin="20" topMargin="20" bottomMargin="20">
	<field name="city" class="java.lang.String"/>
	<field name="name" class="java.lang.String"/>
	<variable name="n" class="java.lang.Integer" calculation="Count"><variableExpression><![CDATA[$F{name}]]></variableExpression></variable>
	<group name="city">
		<groupExpression><![CDATA[$F{city}]]></groupExpression>
		<groupHeader><band height="20"><textField><reportElement x="0" y="0" width="300" height="20"/><textFieldExpression><![CDATA["H " + $F{city}]]></textFieldExpression></textField></band></groupHeader>
		<groupFooter><band height="20"><textField><reportElement x="0" y="0" width="300" height="20"/><textFieldExpression><![CDATA["F " + $F{city} + " " + $V{city_COUNT}]]></textFieldExpression></textField></band></groupFooter>
	</group>
	<pageHeader><band height="20"><staticText><reportElement x="0" y="0" width="300" height="20"/><text><![CDATA[PH]]></text></staticText></band></pageHeader>
	<detail><band height="20"><textField><reportElement x="0" y="0" width="300" height="20"/><textFieldExpression><![CDATA["D " + $F{name}]]></textFieldExpression></textField></band></detail>
	<pageFooter><band height="20"><textField><reportElement x="0" y="0" width="300" height="20"/><textFieldExpression><![CDATA["P" + $V{PAGE_NUMBER}]]></textFieldExpression></textField></band></pageFooter>
	<summary><band height="20"><textField><reportElement x="0" y="0" width="300" height="20"/><textFieldExpression><![CDATA["S " + $V{n} + " " + $V{REPORT_COUNT}]]></textFieldExpression></textField></band></summary>
</jasperReport>`

// TestBands lays out groups over pages: the page header and footer on
// every page, a group header and footer around each city, a new page
// when a band does not fit, the summary last.
func TestBands(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "rows.csv")
	os.WriteFile(csv, []byte("city,name\n北京,a\n北京,b\n上海,c\n上海,d\n上海,e\n广州,f\n"), 0o644)
	rows, err := render.ReadRows(csv)
	if err != nil || len(rows) != 6 {
		t.Fatalf("rows %v, %v", rows, err)
	}
	res := render.Layout(parse(t, grouped), rows, nil)
	var pages []string
	for _, p := range res.Pages {
		var texts []string
		for _, it := range p.Items {
			texts = append(texts, it.Text)
		}
		pages = append(pages, strings.Join(texts, "|"))
	}
	// 260 points between the margins, 20 for the footer: 12 bands a page
	want := []string{
		"PH|H 北京|D a|D b|F 北京 2|H 上海|D c|D d|D e|F 上海 3|H 广州|D f|P1",
		"PH|F 广州 1|S 6 6|P2",
	}
	if strings.Join(pages, "\n") != strings.Join(want, "\n") {
		t.Errorf("pages:\n%s\nwant:\n%s", strings.Join(pages, "\n"), strings.Join(want, "\n"))
	}
}

// TestTitleReadsFirstRow: the title band, laid out before any detail,
// reads the first row's fields (JasperReports does too), and an empty
// data source leaves them empty.
func TestTitleReadsFirstRow(t *testing.T) {
	const tpl = `<jasperReport xmlns="http://jasperreports.sourceforge.net/jasperreports" name="t" pageWidth="595" pageHeight="300" columnWidth="555" leftMargin="20" rightMargin="20" topMargin="20" bottomMargin="20">
	<field name="city" class="java.lang.String"/>
	<title><band height="20"><textField><reportElement x="0" y="0" width="300" height="20"/><textFieldExpression><![CDATA["T " + $F{city}]]></textFieldExpression></textField></band></title>
	<detail><band height="20"><textField><reportElement x="0" y="0" width="300" height="20"/><textFieldExpression><![CDATA["D " + $F{city}]]></textFieldExpression></textField></band></detail>
</jasperReport>`
	for _, tc := range []struct {
		rows []render.Row
		want string
	}{
		{[]render.Row{{"city": "北京"}, {"city": "上海"}}, "T 北京|D 北京|D 上海"},
		{nil, "T "},
	} {
		res := render.Layout(parse(t, tpl), tc.rows, nil)
		var texts []string
		for _, it := range res.Pages[0].Items {
			texts = append(texts, it.Text)
		}
		if got := strings.Join(texts, "|"); got != tc.want {
			t.Errorf("rows %v: page %q, want %q", tc.rows, got, tc.want)
		}
	}
}
