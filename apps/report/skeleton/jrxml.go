package skeleton

import (
	"fmt"
	"strings"
)

// jrxml writes the template: the report element with the page, the
// fields, and the bands that have elements, in the schema's order.
func (b *builder) jrxml(bands []struct {
	name string
	band
}) []byte {
	var w strings.Builder
	colW := b.pageW - 2*b.marginX
	fmt.Fprintf(&w, `<?xml version="1.0" encoding="UTF-8"?>
<jasperReport xmlns="http://jasperreports.sourceforge.net/jasperreports" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://jasperreports.sourceforge.net/jasperreports http://jasperreports.sourceforge.net/xsd/jasperreport.xsd" name="skeleton" pageWidth="%d" pageHeight="%d" columnWidth="%d" leftMargin="%d" rightMargin="%d" topMargin="%d" bottomMargin="%d">
`, b.pageW, b.pageH, colW, b.marginX, b.marginX, b.top, b.top)
	for _, f := range b.fields {
		fmt.Fprintf(&w, "\t<field name=\"%s\" class=\"%s\">\n", f.Name, f.Class)
		if f.Label != "" {
			fmt.Fprintf(&w, "\t\t<fieldDescription>%s</fieldDescription>\n", cdata(f.Label))
		}
		w.WriteString("\t</field>\n")
	}
	room := b.pageH - 2*b.top
	used := 0
	for _, bd := range bands {
		if len(bd.elems) == 0 {
			continue
		}
		// A band is never taller than what is left of the page.
		h := min(bd.height, room-used)
		if bd.name != "summary" {
			used += h
		} else {
			h = min(bd.height, room)
		}
		fmt.Fprintf(&w, "\t<%s>\n\t\t<band height=\"%d\">\n", bd.name, h)
		for _, e := range bd.elems {
			y := min(e.y, max(0, h-1))
			eh := max(1, min(e.h, h-y))
			if e.line {
				fmt.Fprintf(&w, "\t\t\t<line>\n\t\t\t\t<reportElement x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n\t\t\t\t<graphicElement><pen lineWidth=\"%.1f\"/></graphicElement>\n\t\t\t</line>\n",
					e.x, y, e.w, eh, e.pen)
				continue
			}
			if e.field == "" {
				fmt.Fprintf(&w, "\t\t\t<staticText>\n\t\t\t\t<reportElement x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n%s\t\t\t\t<text>%s</text>\n\t\t\t</staticText>\n",
					e.x, y, e.w, eh, look(e), cdata(e.text))
				continue
			}
			fmt.Fprintf(&w, "\t\t\t<textField>\n\t\t\t\t<reportElement x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n%s\t\t\t\t<textFieldExpression><![CDATA[$F{%s}]]></textFieldExpression>\n\t\t\t</textField>\n",
				e.x, y, e.w, eh, look(e), e.field)
		}
		fmt.Fprintf(&w, "\t\t</band>\n\t</%s>\n", bd.name)
	}
	w.WriteString("</jasperReport>\n")
	return []byte(w.String())
}

// look is an element's box (border and padding) and text element (font,
// horizontal and vertical alignment).
func look(e element) string {
	var s strings.Builder
	if e.pen > 0 {
		fmt.Fprintf(&s, "\t\t\t\t<box leftPadding=\"%d\"><pen lineWidth=\"%.1f\"/></box>\n", e.pad, e.pen)
	}
	s.WriteString("\t\t\t\t<textElement")
	if e.align != "" {
		fmt.Fprintf(&s, ` textAlignment="%s"`, e.align)
	}
	if e.middle {
		s.WriteString(` verticalAlignment="Middle"`)
	}
	fmt.Fprintf(&s, `><font size="%d"`, e.size)
	if e.bold {
		s.WriteString(` isBold="true"`)
	}
	s.WriteString("/></textElement>\n")
	return s.String()
}

// cdata wraps text in CDATA sections, dropping characters XML does not
// allow and splitting any "]]>" it holds.
func cdata(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r <= 0xd7ff || r >= 0xe000 && r <= 0xfffd || r >= 0x10000 && r <= 0x10ffff {
			return r
		}
		return -1
	}, s)
	return "<![CDATA[" + strings.ReplaceAll(s, "]]>", "]]]]><![CDATA[>") + "]]>"
}
