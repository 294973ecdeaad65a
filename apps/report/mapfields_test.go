package report_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/report"
)

// formJRXML writes one order form: 客户名称 and 联系电话 label/value
// pairs in the title (the phone inside a frame), a date with no label,
// and a table of 商品, 数量, 金额 (headers in columnHeader, values in
// detail). num gives each value's placeholder number, so two skeletons
// of the same form can number it differently; the elements are written in
// the order of the numbers, as a skeleton would.
func formJRXML(num map[string]int) string {
	type el struct{ key, xml string }
	value := func(key string, x, y, w int) el {
		return el{key, fmt.Sprintf(`<textField><reportElement x="%d" y="%d" width="%d" height="20"/><textFieldExpression><![CDATA[$F{field_%d}]]></textFieldExpression></textField>`, x, y, w, num[key])}
	}
	label := func(text string, x, y, w int) string {
		return fmt.Sprintf(`<staticText><reportElement x="%d" y="%d" width="%d" height="20"/><text><![CDATA[%s]]></text></staticText>`, x, y, w, text)
	}
	title := []el{
		value("customer", 80, 40, 200),
		value("date", 420, 10, 100),
		{"phone", fmt.Sprintf(`<frame><reportElement x="300" y="40" width="250" height="20"/>%s%s</frame>`,
			label("联系电话：", 0, 0, 70), value("phone", 70, 0, 150).xml)},
	}
	detail := []el{value("product", 0, 0, 200), value("quantity", 200, 0, 100), value("amount", 300, 0, 120)}
	byNum := func(es []el) string {
		var b strings.Builder
		for n := 1; n <= len(num); n++ {
			for _, e := range es {
				if num[e.key] == n {
					b.WriteString(e.xml)
				}
			}
		}
		return b.String()
	}
	var fields strings.Builder
	for n := 1; n <= len(num); n++ {
		fmt.Fprintf(&fields, `<field name="field_%d" class="java.lang.String"/>`, n)
	}
	return `<?xml version="1.0" encoding="UTF-8"?>
<jasperReport xmlns="http://jasperreports.sourceforge.net/jasperreports" name="form" pageWidth="595" pageHeight="842" columnWidth="555" leftMargin="20" rightMargin="20" topMargin="20" bottomMargin="20">` +
		fields.String() +
		`<title><band height="70">` + label("订单", 0, 0, 200) + label("客户名称:", 0, 40, 80) + byNum(title) + `</band></title>` +
		`<columnHeader><band height="20">` + label("商品", 0, 0, 200) + label("数量", 200, 0, 100) + label("金额", 300, 0, 120) + `</band></columnHeader>` +
		`<detail><band height="20">` + byNum(detail) + `</band></detail></jasperReport>`
}

var valueRE = regexp.MustCompile(`<textField><reportElement x="(\d+)" y="(\d+)"[^>]*/><textFieldExpression><!\[CDATA\[\$F\{(\w+)\}\]\]>`)

// placed maps each text field's place (x,y as written) to its field.
func placed(src string) map[string]string {
	out := map[string]string{}
	for _, m := range valueRE.FindAllStringSubmatch(src, -1) {
		out[m[1]+","+m[2]] = m[3]
	}
	return out
}

// TestMapFieldsByLabel renames two differently numbered skeletons of the
// same form with the toolkit's labels (in the toolkit's numbering): each
// field must land on its own column, whatever its number.
func TestMapFieldsByLabel(t *testing.T) {
	// The toolkit's skeleton numbers in reading order; the labels come in
	// that order, the date's label ("日期") having no static text of its own.
	labels := []string{"日期", "客户名称", "联系电话", "商品", "数量", "金额"}
	want := map[string]string{
		"420,10": "date", "80,40": "customer_name", "70,0": "phone", // in its frame
		"0,0": "product", "200,0": "quantity", "300,0": "amount",
	}
	for _, tc := range []struct {
		name string
		num  map[string]int
	}{
		{"toolkit", map[string]int{"date": 1, "customer": 2, "phone": 3, "product": 4, "quantity": 5, "amount": 6}},
		// The model's skeleton: the date keeps its number (nothing beside
		// it to go by), every other field is numbered differently.
		{"model", map[string]int{"date": 1, "amount": 2, "product": 3, "customer": 4, "quantity": 5, "phone": 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := formJRXML(tc.num)
			out := report.MapFields(src, labels)
			got := placed(out)
			for at, name := range want {
				if got[at] != name {
					t.Errorf("the field at %s is %q, want %q", at, got[at], name)
				}
			}
			for _, name := range []string{"product", "phone", "date", "customer_name", "quantity", "amount"} {
				if !strings.Contains(out, `$F{`+name+`}`) || !strings.Contains(out, `<field name="`+name+`"`) {
					t.Errorf("no $F{%s} with its declaration in\n%s", name, out)
				}
			}
			if strings.Contains(out, "field_") {
				t.Errorf("a placeholder is left in\n%s", out)
			}
		})
	}
}

// TestMapFieldsNotBeside: a field after another field in a label's row is
// not named from that label (it takes its place in the label order), and a
// label already used names only the first field it stands beside.
func TestMapFieldsNotBeside(t *testing.T) {
	tf := func(x, n int) string {
		return fmt.Sprintf(`<textField><reportElement x="%d" y="0" width="100" height="20"/><textFieldExpression><![CDATA[$F{field_%d}]]></textFieldExpression></textField>`, x, n)
	}
	st := func(x int, text string) string {
		return fmt.Sprintf(`<staticText><reportElement x="%d" y="0" width="60" height="20"/><text><![CDATA[%s]]></text></staticText>`, x, text)
	}
	src := `<jasperReport xmlns="http://jasperreports.sourceforge.net/jasperreports" name="r"><field name="field_1"/><field name="field_2"/><field name="field_3"/><title><band height="20">` +
		st(0, "Name:") + tf(60, 2) + tf(160, 1) + st(300, "Name:") + tf(360, 3) + `</band></title></jasperReport>`
	got := placed(report.MapFields(src, []string{"City", "Ignored", "Other"}))
	want := map[string]string{"60,0": "name", "160,0": "city", "360,0": "field_3"}
	for at, name := range want {
		if got[at] != name {
			t.Errorf("the field at %s is %q, want %q", at, got[at], name)
		}
	}
}
