package jrxml_test

import (
	"fmt"

	"github.com/loomkit/loom/apps/report/jrxml"
)

// A template taken apart into header and bands, checked, and put back
// together.
func Example() {
	src := []byte(`<jasperReport xmlns="http://jasperreports.sourceforge.net/jasperreports" name="r">
	<field name="city" class="java.lang.String"/>
	<title><band height="30"/></title>
	<detail>
		<band height="20">
			<textField>
				<reportElement x="0" y="0" width="200" height="20"/>
				<textFieldExpression><![CDATA[$F{cty}]]></textFieldExpression>
			</textField>
		</band>
	</detail>
</jasperReport>`)
	doc, err := jrxml.Parse(src)
	if err != nil {
		fmt.Println(err)
		return
	}
	dec := doc.Decompose()
	for _, b := range dec.Bands {
		fmt.Println(b.Label(), "line", b.Line, "elements", b.Counts.Total, "windows", len(b.Windows))
	}
	fmt.Println("same bytes:", string(dec.Reassemble()) == string(src))
	for _, p := range doc.Check() {
		fmt.Println(p.Severity, p.Error())
	}
	// Output:
	// title[0] line 3 elements 0 windows 1
	// detail[0] line 5 elements 3 windows 1
	// same bytes: true
	// warning 2:2: <field> the report declares fields but no queryString (add a <queryString> before the fields, or give the report a data source when it runs)
	// error 8:5: <textFieldExpression> $F{cty} is not a declared field (did you mean city? or declare <field name="cty" class="java.lang.String"/> in the header)
}
