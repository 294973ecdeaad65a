package report

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/loomkit/loom/apps/report/jrxml"
	"github.com/loomkit/loom/llm/llmtest"
	"github.com/loomkit/loom/llm/openai"
)

// bigTemplate is a template of about 73 KB whose bands make 17 windows:
// a header of fields and variables, and a title, column header and detail band full of
// text fields.
func bigTemplate(t testing.TB) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<jasperReport xmlns="http://jasperreports.sourceforge.net/jasperreports" name="big" pageWidth="842" pageHeight="2400" orientation="Landscape" columnWidth="802" leftMargin="20" rightMargin="20" topMargin="20" bottomMargin="20">
	<queryString><![CDATA[SELECT * FROM sales]]></queryString>
`)
	for i := range 60 {
		fmt.Fprintf(&b, "\t<field name=\"f%d\" class=\"java.lang.String\"/>\n", i)
	}
	for i := range 60 {
		fmt.Fprintf(&b, "\t<variable name=\"total%d\" class=\"java.lang.Integer\" calculation=\"Count\">\n\t\t<variableExpression><![CDATA[$F{f%d}]]></variableExpression>\n\t</variable>\n", i, i)
	}
	band := func(tag string, n, h int, text func(i int) string) {
		fmt.Fprintf(&b, "\t<%s>\n\t\t<band height=\"%d\">\n", tag, h)
		for i := range n {
			fmt.Fprintf(&b, "\t\t\t<textField>\n\t\t\t\t<reportElement x=\"%d\" y=\"%d\" width=\"60\" height=\"18\"/>\n\t\t\t\t<textElement textAlignment=\"Left\"><font size=\"9\"/></textElement>\n\t\t\t\t<textFieldExpression><![CDATA[%s]]></textFieldExpression>\n\t\t\t</textField>\n", (i%12)*66, (i/12)*20, text(i))
		}
		fmt.Fprintf(&b, "\t\t</band>\n\t</%s>\n", tag)
	}
	band("title", 60, 120, func(i int) string { return fmt.Sprintf(`"Title cell %d"`, i) })
	band("columnHeader", 72, 140, func(i int) string { return fmt.Sprintf(`"Header %d"`, i) })
	band("detail", 144, 260, func(i int) string { return fmt.Sprintf(`$F{f%d}`, i%60) })
	b.WriteString("</jasperReport>\n")
	return b.String()
}

// BenchmarkRefine17Windows: refine_layout on a 73 KB template of 17
// windows, each answered by a model that takes 200 ms; the windows go out
// in parallel.
func BenchmarkRefine17Windows(b *testing.B) {
	src := bigTemplate(b)
	doc, err := jrxml.Parse([]byte(src))
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, band := range doc.Decompose().Bands {
		n += len(band.Windows)
	}
	srv := llmtest.New(b)
	srv.Handle(func(r llmtest.Request) llmtest.Reply {
		msgs := r.Messages()
		text := msgs[len(msgs)-1].Content
		piece := text[strings.Index(text, "```xml\n")+7 : strings.LastIndex(text, "\n```")]
		return llmtest.Reply{Content: "```xml\n" + piece + "\n```", Latency: 200 * time.Millisecond}
	})
	m, err := openai.New(openai.Config{BaseURL: srv.BaseURL(), APIKey: "test", Model: "fake", MaxRetries: 0})
	if err != nil {
		b.Fatal(err)
	}
	a, err := New(context.Background(), Config{Model: m})
	if err != nil {
		b.Fatal(err)
	}
	refine := a.refineLayout()
	s := State{Design: Design{JRXML: src, Layout: &Layout{TotalRows: 10, Schema: []byte(`{"total_rows":10}`)}}}
	b.ResetTimer()
	for range b.N {
		out, err := refine(context.Background(), s)
		if err != nil {
			b.Fatal(err)
		}
		if out.Turn.Windows != n || out.Turn.RolledBack != 0 {
			b.Fatalf("%d windows, %d rolled back", out.Turn.Windows, out.Turn.RolledBack)
		}
	}
	b.ReportMetric(float64(len(src))/1024, "KB")
	b.ReportMetric(float64(n), "windows")
}
