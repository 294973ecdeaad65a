package skeleton_test

import (
	"fmt"
	"strings"
)

// formLabel is one piece of text on the test form, in points from the
// top left of the band.
type formLabel struct {
	text       string
	x, y, w, h int
	size       int
	bold, box  bool
}

// testForm is an order form: a title, label/value pairs, a table of four
// columns with a header and four rows, all boxed, a total, and a label
// with a line to write on (formJRXML draws the line).
func testForm() []formLabel {
	ls := []formLabel{
		{text: "销售订单 Sales Order", x: 140, y: 10, w: 275, h: 30, size: 20, bold: true},
		{text: "客户 Customer:", x: 0, y: 60, w: 120, h: 20, size: 12},
		{text: "华东贸易公司", x: 125, y: 60, w: 150, h: 20, size: 12},
		{text: "日期 Date:", x: 300, y: 60, w: 90, h: 20, size: 12},
		{text: "2024-05-01", x: 395, y: 60, w: 120, h: 20, size: 12},
		{text: "编号 Number:", x: 0, y: 90, w: 120, h: 20, size: 12},
		{text: "SO-1001", x: 125, y: 90, w: 150, h: 20, size: 12},
		{text: "电话 Phone:", x: 300, y: 90, w: 90, h: 20, size: 12},
		{text: "010-8888", x: 395, y: 90, w: 120, h: 20, size: 12},
	}
	cols := []int{0, 180, 300, 420, 555}
	rows := [][]string{
		{"品名 Item", "数量 Qty", "单价 Price", "金额 Amount"},
		{"螺丝 Screw", "100", "0.50", "50.00"},
		{"螺母 Nut", "200", "0.30", "60.00"},
		{"垫圈 Washer", "300", "0.10", "30.00"},
		{"扳手 Wrench", "2", "45.00", "90.00"},
	}
	for r, row := range rows {
		for c, text := range row {
			ls = append(ls, formLabel{text: text, x: cols[c], y: 140 + 24*r, w: cols[c+1] - cols[c], h: 24, size: 12, bold: r == 0, box: true})
		}
	}
	ls = append(ls,
		formLabel{text: "合计 Total:", x: 300, y: 280, w: 90, h: 20, size: 12, bold: true},
		formLabel{text: "230.00", x: 395, y: 280, w: 120, h: 20, size: 12},
		formLabel{text: "备注 Notes:", x: 0, y: 320, w: 120, h: 20, size: 12},
	)
	return ls
}

// formJRXML is the test form as a template: every label a staticText of
// the title band on an A4 page.
func formJRXML(ls []formLabel) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<jasperReport xmlns="http://jasperreports.sourceforge.net/jasperreports" name="form" pageWidth="595" pageHeight="842" columnWidth="555" leftMargin="20" rightMargin="20" topMargin="20" bottomMargin="20">
	<title>
		<band height="400">
`)
	for _, l := range ls {
		box := ""
		if l.box {
			box = `<box leftPadding="4"><pen lineWidth="1.0"/></box>`
		}
		fmt.Fprintf(&b, "\t\t\t<staticText>\n\t\t\t\t<reportElement x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n\t\t\t\t%s<textElement verticalAlignment=\"Middle\"><font size=\"%d\" isBold=\"%t\"/></textElement>\n\t\t\t\t<text><![CDATA[%s]]></text>\n\t\t\t</staticText>\n", l.x, l.y, l.w, l.h, box, l.size, l.bold, l.text)
	}
	// A line to write the notes on.
	b.WriteString("\t\t\t<line>\n\t\t\t\t<reportElement x=\"125\" y=\"338\" width=\"430\" height=\"1\"/>\n\t\t\t</line>\n")
	b.WriteString("\t\t</band>\n\t</title>\n</jasperReport>\n")
	return b.String()
}
