package jrxml_test

import (
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/report/jrxml"
)

// Base is a small valid template with a group, the sections most reports
// have, Chinese text and every kind of reference.
const Base = `<?xml version="1.0" encoding="UTF-8"?>
<jasperReport xmlns="http://jasperreports.sourceforge.net/jasperreports" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://jasperreports.sourceforge.net/jasperreports http://jasperreports.sourceforge.net/xsd/jasperreport.xsd" name="Orders" pageWidth="595" pageHeight="842" columnWidth="555" leftMargin="20" rightMargin="20" topMargin="20" bottomMargin="20">
	<style name="Base" fontSize="10"/>
	<parameter name="Title" class="java.lang.String"/>
	<queryString><![CDATA[SELECT id, city FROM orders WHERE city = $P{Title}]]></queryString>
	<field name="id" class="java.lang.Integer"/>
	<field name="city" class="java.lang.String"/>
	<variable name="Total" class="java.lang.Integer" calculation="Count">
		<variableExpression><![CDATA[$F{id}]]></variableExpression>
	</variable>
	<group name="City">
		<groupExpression><![CDATA[$F{city}]]></groupExpression>
		<groupHeader>
			<band height="20">
				<textField>
					<reportElement x="0" y="0" width="200" height="20"/>
					<textFieldExpression><![CDATA["城市 " + $F{city}]]></textFieldExpression>
				</textField>
			</band>
		</groupHeader>
	</group>
	<title>
		<band height="40">
			<staticText>
				<reportElement x="0" y="0" width="555" height="30"/>
				<textElement textAlignment="Center">
					<font size="18" isBold="true"/>
				</textElement>
				<text><![CDATA[Orders 订单]]></text>
			</staticText>
		</band>
	</title>
	<pageHeader>
		<band height="20">
			<textField>
				<reportElement x="0" y="0" width="555" height="20"/>
				<textFieldExpression><![CDATA[$P{Title}]]></textFieldExpression>
			</textField>
		</band>
	</pageHeader>
	<detail>
		<band height="20">
			<rectangle>
				<reportElement mode="Opaque" x="0" y="0" width="555" height="20" backcolor="#EEEEEE"/>
			</rectangle>
			<textField>
				<reportElement x="10" y="0" width="100" height="20"/>
				<textFieldExpression><![CDATA[$F{id}]]></textFieldExpression>
			</textField>
		</band>
	</detail>
	<pageFooter>
		<band height="20">
			<textField>
				<reportElement x="455" y="0" width="100" height="20"/>
				<textFieldExpression><![CDATA["Page " + $V{PAGE_NUMBER} + " / " + $V{Total}]]></textFieldExpression>
			</textField>
		</band>
	</pageFooter>
</jasperReport>
`

// Damage is one way to break Base: replace Old with New (the first one,
// or the Nth with N), and the problem names Element at the line where At
// is in the damaged text.
type Damage struct {
	Name, Old, New string
	N              int
	Element, At    string
}

// Damages are the broken templates the checks must catch.
var Damages = []Damage{
	{Name: "unclosed tag", Old: "\t\t\t\t</textField>\n", New: "", Element: "textField", At: "\t\t\t</band>\n\t\t</groupHeader>"},
	{Name: "mismatched end tag", Old: "</staticText>", New: "</textField>", Element: "staticText", At: "</textField>\n\t\t</band>\n\t</title>"},
	{Name: "root never closed", Old: "</jasperReport>\n", New: "", Element: "jasperReport", At: "<jasperReport"},
	{Name: "truncated file", Old: "backcolor=\"#EEEEEE\"/>", New: "backcolor=\"#EE", Element: "reportElement", At: "<reportElement mode"},
	{Name: "unterminated CDATA", Old: "$V{Total}]]>", New: "$V{Total}]>", Element: "textFieldExpression", At: "<![CDATA[\"Page"},
	{Name: "undeclared field", Old: "$F{id}]]></textFieldExpression>", New: "$F{idd}]]></textFieldExpression>", Element: "textFieldExpression", At: "$F{idd}"},
	{Name: "undeclared field in a group", Old: "$F{city}]]></groupExpression>", New: "$F{town}]]></groupExpression>", Element: "groupExpression", At: "$F{town}"},
	{Name: "undeclared parameter", Old: "<![CDATA[$P{Title}]]></textFieldExpression>", New: "<![CDATA[$P{Titel}]]></textFieldExpression>", Element: "textFieldExpression", At: "$P{Titel}"},
	{Name: "undeclared parameter in the query", Old: "= $P{Title}", New: "= $P{Town}", Element: "queryString", At: "$P{Town}"},
	{Name: "undeclared variable", Old: "$V{Total}", New: "$V{Totl}", Element: "textFieldExpression", At: "$V{Totl}"},
	{Name: "band taller than the page", Old: "<band height=\"20\">\n\t\t\t<rectangle>", New: "<band height=\"900\">\n\t\t\t<rectangle>", Element: "band", At: "<band height=\"900\">"},
	{Name: "page header taller than the page", Old: "<band height=\"20\">\n\t\t\t<textField>\n\t\t\t\t<reportElement x=\"0\" y=\"0\" width=\"555\"", New: "<band height=\"810\">\n\t\t\t<textField>\n\t\t\t\t<reportElement x=\"0\" y=\"0\" width=\"555\"", Element: "band", At: "<band height=\"810\">"},
	{Name: "group header taller than the page", Old: "<band height=\"20\">", New: "<band height=\"2000\">", Element: "band", At: "<band height=\"2000\">"},
	{Name: "element below its band", Old: `<reportElement x="10" y="0" width="100" height="20"/>`, New: `<reportElement x="10" y="5" width="100" height="20"/>`, Element: "reportElement", At: `y="5"`},
	{Name: "columns wider than the page", Old: `columnWidth="555"`, New: `columnWidth="600"`, Element: "jasperReport", At: "<jasperReport"},
	{Name: "query after the fields", Old: "\t<queryString><![CDATA[SELECT id, city FROM orders WHERE city = $P{Title}]]></queryString>\n\t<field name=\"id\" class=\"java.lang.Integer\"/>\n", New: "\t<field name=\"id\" class=\"java.lang.Integer\"/>\n\t<queryString><![CDATA[SELECT id, city FROM orders WHERE city = $P{Title}]]></queryString>\n", Element: "queryString", At: "<queryString>"},
	{Name: "expression before reportElement", Old: "\t\t\t\t<reportElement x=\"10\" y=\"0\" width=\"100\" height=\"20\"/>\n\t\t\t\t<textFieldExpression><![CDATA[$F{id}]]></textFieldExpression>\n", New: "\t\t\t\t<textFieldExpression><![CDATA[$F{id}]]></textFieldExpression>\n\t\t\t\t<reportElement x=\"10\" y=\"0\" width=\"100\" height=\"20\"/>\n", Element: "reportElement", At: "<reportElement x=\"10\""},
	{Name: "title after the page header", Old: "\t<title>\n\t\t<band height=\"40\">", New: "\t<pageHeader><band height=\"10\"/></pageHeader>\n\t<title>\n\t\t<band height=\"40\">", Element: "title", At: "\t<title>"},
	{Name: "bad mode", Old: `mode="Opaque"`, New: `mode="Solid"`, Element: "reportElement", At: `mode="Solid"`},
	{Name: "bad alignment", Old: `textAlignment="Center"`, New: `textAlignment="Middle"`, Element: "textElement", At: `textAlignment="Middle"`},
	{Name: "width not a number", Old: `width="100" height="20"/>`, New: `width="wide" height="20"/>`, Element: "reportElement", At: `width="wide"`},
	{Name: "bad colour", Old: `backcolor="#EEEEEE"`, New: `backcolor="#EEEEEG"`, Element: "reportElement", At: `#EEEEEG`},
	{Name: "bad boolean", Old: `isBold="true"`, New: `isBold="yes"`, Element: "font", At: `isBold="yes"`},
	{Name: "font size not a number", Old: `size="18"`, New: `size="big"`, Element: "font", At: `size="big"`},
	{Name: "wrong namespace", Old: `xmlns="http://jasperreports.sourceforge.net/jasperreports"`, New: `xmlns="http://jasperreports.sourceforge.net/jasperreport"`, Element: "jasperReport", At: "<jasperReport"},
	{Name: "no report name", Old: ` name="Orders"`, New: ``, Element: "jasperReport", At: "<jasperReport"},
	{Name: "field without a name", Old: `<field name="city"`, New: `<field`, Element: "field", At: `<field class="java.lang.String"`},
	{Name: "reportElement without height", Old: `width="555" height="20"/>`, New: `width="555"/>`, Element: "reportElement", At: `width="555"/>`},
	{Name: "staticText without reportElement", Old: "\t\t\t\t<reportElement x=\"0\" y=\"0\" width=\"555\" height=\"30\"/>\n", New: "", Element: "staticText", At: "<staticText>"},
}

// damage applies d to Base.
func damage(t *testing.T, d Damage) string {
	t.Helper()
	n := max(d.N, 1)
	i := -1
	for range n {
		j := strings.Index(Base[i+1:], d.Old)
		if j < 0 {
			t.Fatalf("%s: %q is not in the base template", d.Name, d.Old)
		}
		i += 1 + j
	}
	return Base[:i] + d.New + Base[i+len(d.Old):]
}

// lineOf is the line of the first occurrence of s in text.
func lineOf(t *testing.T, text, s string) int {
	t.Helper()
	i := strings.Index(text, s)
	if i < 0 {
		t.Fatalf("%q is not in the text", s)
	}
	return strings.Count(text[:i], "\n") + 1
}

// problems parses and checks src: the parse error, or the check's errors.
func problems(src string) []jrxml.Problem {
	doc, err := jrxml.Parse([]byte(src))
	if err != nil {
		return []jrxml.Problem{*err.(*jrxml.Problem)}
	}
	return jrxml.Errors(doc.Check())
}

func TestBaseIsClean(t *testing.T) {
	doc, err := jrxml.Parse([]byte(Base))
	if err != nil {
		t.Fatal(err)
	}
	if ps := doc.Check(); len(ps) > 0 {
		t.Errorf("problems in the base template: %v", ps)
	}
}

// TestDamaged breaks the base template in each of the ways of Damages:
// each gives an error naming the element and its line, with a hint.
func TestDamaged(t *testing.T) {
	if len(Damages) < 20 {
		t.Errorf("%d damaged templates, want at least 20", len(Damages))
	}
	for _, d := range Damages {
		src := damage(t, d)
		line := lineOf(t, src, d.At)
		ps := problems(src)
		found := false
		for _, p := range ps {
			if p.Element == d.Element && p.Line == line {
				found = true
				if p.Hint == "" || p.Message == "" || p.Column == 0 {
					t.Errorf("%s: %v lacks a message, hint or column", d.Name, p)
				}
			}
		}
		if !found {
			t.Errorf("%s: no error on <%s> at line %d; got %v", d.Name, d.Element, line, ps)
		}
	}
}

// TestHints: an undeclared name close to a declared one is suggested.
func TestHints(t *testing.T) {
	ps := problems(damage(t, Damages[5]))
	if len(ps) != 1 || !strings.Contains(ps[0].Hint, "did you mean id?") || ps[0].Check != "reference" {
		t.Errorf("problems %v", ps)
	}
	ps = problems(damage(t, Damage{Name: "two", Old: "$F{id}]]></textFieldExpression>", New: "$F{zzz}]]></textFieldExpression>"}))
	if len(ps) != 1 || strings.Contains(ps[0].Hint, "did you mean") || !strings.Contains(ps[0].Hint, `<field name="zzz"`) {
		t.Errorf("problems %v", ps)
	}
}

// TestQueryWarning: fields without a query are a warning, not an error.
func TestQueryWarning(t *testing.T) {
	src := damage(t, Damage{Name: "no query", Old: "\t<queryString><![CDATA[SELECT id, city FROM orders WHERE city = $P{Title}]]></queryString>\n", New: ""})
	doc, err := jrxml.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ps := doc.Check()
	if len(ps) != 1 || ps[0].Severity != jrxml.Warning || ps[0].Check != "query" || ps[0].Element != "field" {
		t.Errorf("problems %v", ps)
	}
}

// TestCrosstabBuiltins: a crosstab's built-in variables (ROW_COUNT,
// COLUMN_COUNT, IS_EVEN_ROW, IS_EVEN_COLUMN) are known in its cells and in
// the conditional styles of a report with a crosstab, and still unknown in
// a report without one.
func TestCrosstabBuiltins(t *testing.T) {
	const style = `<style name="Zebra"><conditionalStyle><conditionExpression><![CDATA[$V{ROW_COUNT} % 2 == 0]]></conditionExpression><style backcolor="#EEEEEE"/></conditionalStyle></style>`
	const crosstab = `<crosstab><reportElement x="0" y="0" width="555" height="60"/>
<rowGroup name="city" width="80"><bucket class="java.lang.String"><bucketExpression><![CDATA[$F{city}]]></bucketExpression></bucket></rowGroup>
<columnGroup name="year" height="20"><bucket class="java.lang.Integer"><bucketExpression><![CDATA[$F{id}]]></bucketExpression></bucket></columnGroup>
<measure name="n" class="java.lang.Integer" calculation="Count"><measureExpression><![CDATA[$F{id}]]></measureExpression></measure>
<crosstabCell width="60" height="20"><cellContents><textField><reportElement x="0" y="0" width="60" height="20"/><textFieldExpression><![CDATA[$V{n} + " " + $V{COLUMN_COUNT} + ($V{IS_EVEN_ROW} ? "" : "*")]]></textFieldExpression></textField></cellContents></crosstabCell>
</crosstab>`
	withStyle := strings.Replace(Base, `<style name="Base" fontSize="10"/>`, `<style name="Base" fontSize="10"/>`+style, 1)
	cases := []struct {
		name, src string
		unknown   []string
	}{
		{"crosstab", strings.Replace(withStyle, "</jasperReport>", `<summary><band height="60">`+crosstab+"</band></summary></jasperReport>", 1), nil},
		{"no crosstab", strings.Replace(withStyle, "</jasperReport>", `<summary><band height="20"><textField><reportElement x="0" y="0" width="100" height="20"/><textFieldExpression><![CDATA[$V{ROW_COUNT}]]></textFieldExpression></textField></band></summary></jasperReport>`, 1),
			[]string{"$V{ROW_COUNT} is not a declared variable", "$V{ROW_COUNT} is not a declared variable"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(c.src, "<summary><band") || !strings.Contains(c.src, "ROW_COUNT} % 2") {
				t.Fatal("the case did not put its style and band into the template")
			}
			doc, err := jrxml.Parse([]byte(c.src))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range doc.Check() {
				if p.Check == "reference" {
					got = append(got, p.Message)
				}
			}
			if strings.Join(got, "|") != strings.Join(c.unknown, "|") {
				t.Errorf("reference problems %q, want %q", got, c.unknown)
			}
		})
	}
}
