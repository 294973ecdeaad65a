package hostile

import (
	"fmt"
	"strings"
)

// jasperNS is the JasperReports namespace.
const jasperNS = "http://jasperreports.sourceforge.net/jasperreports"

// template is a small valid JRXML template: prolog goes between the XML
// declaration and the root, attrs into the root, page is the page's
// width and height, band the detail band's height and body its
// elements.
type template struct {
	prolog, attrs, body string
	pageW, pageH, band  int
}

func (t template) String() string {
	if t.pageW == 0 {
		t.pageW, t.pageH = 595, 842
	}
	if t.band == 0 {
		t.band = 20
	}
	if t.body == "" {
		t.body = staticText(0, 0, 300, 20, 10, "Sales")
	}
	return fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
%s<jasperReport xmlns="%s"%s name="sales" pageWidth="%d" pageHeight="%d" columnWidth="%d" leftMargin="20" rightMargin="20" topMargin="20" bottomMargin="20">
	<queryString><![CDATA[SELECT customer, amount FROM sales]]></queryString>
	<field name="customer" class="java.lang.String"/>
	<field name="amount" class="java.lang.Double"/>
	<detail>
		<band height="%d">
%s
			<textField>
				<reportElement x="0" y="0" width="200" height="20"/>
				<textFieldExpression><![CDATA[$F{customer}]]></textFieldExpression>
			</textField>
		</band>
	</detail>
</jasperReport>
`, t.prolog, jasperNS, t.attrs, t.pageW, t.pageH, max(t.pageW-40, 1), t.band, t.body)
}

// staticText is a static text element; text goes in as it is (an entity
// reference stays one).
func staticText(x, y, w, h, size int, text string) string {
	return fmt.Sprintf(`			<staticText><reportElement x="%d" y="%d" width="%d" height="%d"/><textElement><font size="%d"/></textElement><text>%s</text></staticText>`, x, y, w, h, size, text)
}

// jrxmlItems are templates that try to read other files, or to make the
// parser, the checks or the renderer spend without bound.
func jrxmlItems(canary string) ([]Item, error) {
	c := fileURL(canary)
	laughs := `<!DOCTYPE jasperReport [ <!ENTITY l0 "lol">`
	for i := 1; i <= 10; i++ {
		laughs += fmt.Sprintf(` <!ENTITY l%d "%s">`, i, strings.Repeat(fmt.Sprintf("&l%d;", i-1), 10))
	}
	laughs += " ]>\n"
	var many strings.Builder
	for i := range 100_000 {
		fmt.Fprintf(&many, `<line><reportElement x="%d" y="0" width="1" height="1"/></line>`, i%500)
	}
	items := []struct {
		name    string
		t       template
		control bool
	}{
		{"jrxml-control", template{}, true},
		{"jrxml-parameter-entity", template{prolog: `<!DOCTYPE jasperReport [ <!ENTITY % p SYSTEM "` + c + `"> %p; ]>` + "\n"}, false},
		{"jrxml-parameter-entity-environ", template{prolog: `<!DOCTYPE jasperReport [ <!ENTITY % p SYSTEM "file:///proc/self/environ"> %p; ]>` + "\n"}, false},
		{"jrxml-general-entity", template{prolog: `<!DOCTYPE jasperReport [ <!ENTITY x SYSTEM "` + c + `"> ]>` + "\n", body: staticText(0, 0, 300, 20, 10, "&x;")}, false},
		{"jrxml-external-dtd", template{prolog: `<!DOCTYPE jasperReport SYSTEM "` + c + `">` + "\n"}, false},
		{"jrxml-xinclude", template{attrs: ` xmlns:xi="http://www.w3.org/2001/XInclude"`, body: `			<staticText><reportElement x="0" y="0" width="300" height="20"/><text><xi:include href="` + c + `" parse="text"/></text></staticText>`}, false},
		{"jrxml-schema-location", template{attrs: ` xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="` + jasperNS + ` ` + c + `"`}, false},
		{"jrxml-no-namespace-schema", template{attrs: ` xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="` + c + `"`}, false},
		{"jrxml-billion-laughs", template{prolog: laughs, body: staticText(0, 0, 300, 20, 10, "&l10;")}, false},
		{"jrxml-huge-page", template{pageW: 200_000, pageH: 200_000}, false},
		{"jrxml-tall-band", template{band: 10_000_000}, false},
		{"jrxml-huge-element", template{body: staticText(0, 0, 2_000_000, 2_000_000, 10, "Sales")}, false},
		{"jrxml-huge-font", template{body: staticText(0, 0, 500, 20, 100_000, "Sales")}, false},
		{"jrxml-many-elements", template{body: many.String()}, false},
		// As large as an upload may be: a text of almost 10 MiB.
		{"jrxml-10mib-text", template{body: staticText(0, 0, 300, 20, 10, "<![CDATA["+strings.Repeat("Sales ", (10<<20-2048)/6)+"]]>")}, false},
		{"jrxml-deep-frames", template{body: strings.Repeat(`<frame><reportElement x="0" y="0" width="10" height="10"/>`, 100_000) + strings.Repeat("</frame>", 100_000)}, false},
	}
	out := make([]Item, len(items))
	for i, it := range items {
		out[i] = Item{Name: it.name, Filename: it.name + ".jrxml", ContentType: "application/xml", Data: []byte(it.t.String()), Control: it.control}
	}
	return out, nil
}
