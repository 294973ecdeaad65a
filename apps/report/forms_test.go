package report_test

import (
	"bytes"
	"fmt"
	"image/png"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"

	"github.com/loomkit/loom/apps/report"
	"github.com/loomkit/loom/apps/report/jrxml"
	"github.com/loomkit/loom/apps/report/render"
	"github.com/loomkit/loom/internal/testenv"
	"github.com/loomkit/loom/llm/llmtest"
)

// invoiceBook is a workbook of an invoice: a title, two labelled values
// and a table of three columns.
func invoiceBook(t testing.TB) []byte {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	sh := f.GetSheetName(0)
	cells := map[string]any{
		"A1": "发票 Invoice",
		"A3": "客户 Customer:", "B3": "北方机械厂",
		"A4": "日期 Date:", "B4": "2024-06-30",
		"A6": "商品 Product", "B6": "数量 Quantity", "C6": "金额 Amount",
		"A7": "轴承 Bearing", "B7": 40, "C7": 800,
		"A8": "齿轮 Gear", "B8": 12, "C8": 360,
	}
	for cell, v := range cells {
		if err := f.SetCellValue(sh, cell, v); err != nil {
			t.Fatal(err)
		}
	}
	f.SetColWidth(sh, "A", "C", 18)
	var buf bytes.Buffer
	if _, err := f.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// invoiceDoc is the same invoice as a template, for the toolkit's
// renderer to draw: labels in Chinese and English, a boxed table.
func invoiceDoc(t testing.TB) *jrxml.Document {
	t.Helper()
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<jasperReport xmlns="http://jasperreports.sourceforge.net/jasperreports" name="invoice" pageWidth="595" pageHeight="842" columnWidth="555" leftMargin="20" rightMargin="20" topMargin="20" bottomMargin="20">
	<title>
		<band height="300">
`)
	put := func(text string, x, y, w, h, size int, box bool) {
		border := ""
		if box {
			border = `<box leftPadding="4"><pen lineWidth="1.0"/></box>`
		}
		fmt.Fprintf(&b, `<staticText><reportElement x="%d" y="%d" width="%d" height="%d"/>%s<textElement verticalAlignment="Middle"><font size="%d"/></textElement><text><![CDATA[%s]]></text></staticText>
`, x, y, w, h, border, size, text)
	}
	put("发票 Invoice", 180, 0, 200, 30, 20, false)
	put("客户 Customer:", 0, 50, 130, 20, 12, false)
	put("北方机械厂", 140, 50, 160, 20, 12, false)
	put("日期 Date:", 0, 80, 130, 20, 12, false)
	put("2024-06-30", 140, 80, 160, 20, 12, false)
	for r, row := range [][]string{{"商品 Product", "数量 Quantity", "金额 Amount"}, {"轴承 Bearing", "40", "800"}, {"齿轮 Gear", "12", "360"}} {
		for c, text := range row {
			put(text, 185*c, 130+26*r, 185, 26, 12, true)
		}
	}
	b.WriteString("\t\t</band>\n\t</title>\n</jasperReport>\n")
	doc, err := jrxml.Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// invoicePNG is the invoice drawn as a page at 150 dpi.
func invoicePNG(t testing.TB) []byte {
	t.Helper()
	doc := invoiceDoc(t)
	r, err := render.NewRasterizer(render.DefaultFont)
	testenv.Need(t, "no font to draw the form (Debian package fonts-arphic-gbsn00lp)", err)
	var out bytes.Buffer
	if err := png.Encode(&out, r.Page(render.Layout(doc, nil, nil), 0, 150)); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// needTesseract skips without tesseract (a failure under CI).
func needTesseract(t testing.TB) {
	t.Helper()
	testenv.NeedProgram(t, "tesseract", "Debian packages tesseract-ocr, tesseract-ocr-chi-sim")
}

// TestFormsWithoutModel: an XLSX workbook and a picture of a form become
// valid templates with no model configured, through the toolkit's layout
// and skeleton and map_fields; the fields are named after the labels.
func TestFormsWithoutModel(t *testing.T) {
	l := serve(t, nil, filepath.Join(t.TempDir(), "loom.db"), report.ServerOptions{})
	want := path("process_input", "classify_intent", "retrieve", "generate_skeleton", "refine_layout", "map_fields", "save_session", "validate", "finalize")
	t.Run("xlsx", func(t *testing.T) {
		id := l.uploadID("x1", "invoice.xlsx", invoiceBook(t))
		tr := l.run("x1", report.Input{Upload: id, Message: "根据这个模板生成报表"})
		if tr.String() != want {
			t.Errorf("path %s", tr)
		}
		st := tr.state
		if st.Turn.Status != "pass" || st.Final == "" || st.Layout == nil || st.Layout.Kind != "xlsx" || st.Version != 1 {
			t.Fatalf("status %q problems %v layout %+v", st.Turn.Status, st.Turn.Problems, st.Layout)
		}
		for _, f := range []string{"customer", "date"} {
			if !strings.Contains(st.JRXML, `<field name="`+f+`"`) || !strings.Contains(st.JRXML, "$F{"+f+"}") {
				t.Errorf("no field %s mapped from the labels:\n%s", f, st.JRXML)
			}
		}
		if code, b := l.Do(keyA, "GET", "/api/v1/report/threads/x1/versions/1.pdf", nil); code != 200 || !bytes.HasPrefix(b, []byte("%PDF")) {
			t.Errorf("PDF: %d", code)
		}
	})
	t.Run("png", func(t *testing.T) {
		needTesseract(t)
		id := l.uploadID("p1", "invoice.png", invoicePNG(t))
		tr := l.run("p1", report.Input{Upload: id})
		if tr.String() != want {
			t.Errorf("path %s", tr)
		}
		st := tr.state
		if st.Turn.Status != "pass" || st.Final == "" || st.Layout == nil || st.Layout.TotalRows < 5 {
			t.Fatalf("status %q problems %v rows %+v", st.Turn.Status, st.Turn.Problems, st.Layout)
		}
		// The rendering was compared with the picture.
		if st.Turn.SSIM <= report.DefaultSSIM {
			t.Errorf("SSIM %.3f", st.Turn.SSIM)
		}
		t.Logf("SSIM of the skeleton against the form: %.3f", st.Turn.SSIM)
		if !regexp.MustCompile(`\$F\{(customer|date)\}`).MatchString(st.JRXML) {
			t.Errorf("no field named after a label:\n%s", st.JRXML)
		}
	})
	t.Run("pdf", func(t *testing.T) {
		needTesseract(t)
		testenv.NeedProgram(t, "pdftoppm", "Debian package poppler-utils")
		var pdf bytes.Buffer
		if err := render.WritePDF(&pdf, render.Layout(invoiceDoc(t), nil, nil), render.DefaultFont); err != nil {
			t.Fatal(err)
		}
		id := l.uploadID("f1", "invoice.pdf", pdf.Bytes())
		tr := l.run("f1", report.Input{Upload: id, Message: "make a report from this form"})
		if tr.String() != want {
			t.Errorf("path %s", tr)
		}
		if st := tr.state; st.Turn.Status != "pass" || st.Layout == nil || st.Layout.Kind != "pdf" || st.Layout.TotalRows < 5 {
			t.Errorf("status %q problems %v layout %+v", st.Turn.Status, st.Turn.Problems, st.Layout)
		}
	})
}

// TestThreeStages is the notes' scenario 2 with a model: an uploaded
// form's layout gives a skeleton (the model's), refine_layout sends each
// band window to the model in parallel — never the header — and rolls
// back a window whose element count changed by more than 10%; map_fields
// names the fields.
func TestThreeStages(t *testing.T) {
	model := llmtest.New(t)
	l := serve(t, model, filepath.Join(t.TempDir(), "loom.db"), report.ServerOptions{})
	id := l.uploadID("t1", "invoice.xlsx", invoiceBook(t))
	skel := strings.NewReplacer("$F{customer}", "$F{field_1}", `name="customer"`, `name="field_1"`, "$F{amount}", "$F{field_2}", `name="amount"`, `name="field_2"`).Replace(goodJRXML)
	// The form's labels and column headers, so that the template is
	// faithful to the form (the title's window keeps them: it is rolled back).
	var keep strings.Builder
	for i, text := range []string{"客户 Customer:", "日期 Date:", "商品 Product", "数量 Quantity", "金额 Amount"} {
		fmt.Fprintf(&keep, "<staticText><reportElement x=\"%d\" y=\"30\" width=\"100\" height=\"10\"/><text><![CDATA[%s]]></text></staticText>\n", 110*i, text)
	}
	skel = strings.Replace(skel, "\t\t</band>\n\t</title>", keep.String()+"\t\t</band>\n\t</title>", 1)
	model.Add(xmlReply(skel))
	header := "SELECT customer, amount FROM sales"
	var sawHeader bool
	model.Handle(func(r llmtest.Request) llmtest.Reply {
		text := allText(r)
		if strings.Contains(text, header) {
			sawHeader = true
		}
		piece := text[strings.Index(text, "```xml\n")+7:]
		piece = piece[:strings.LastIndex(piece, "\n```")]
		if strings.Contains(piece, "<title>") || strings.Contains(piece, "<band height=\"40\">") {
			// The title's window: drop an element, which the count check rolls back.
			return llmtest.Text("```xml\n" + regexp.MustCompile(`(?s)<staticText>.*</staticText>`).ReplaceAllString(piece, "") + "\n```")
		}
		return llmtest.Text("```xml\n" + strings.Replace(piece, `width="300"`, `width="280"`, 1) + "\n```")
	})
	tr := l.run("t1", report.Input{Upload: id, Message: "根据这个模板生成报表"})
	if want := path("process_input", "classify_intent", "retrieve", "generate_skeleton", "refine_layout", "map_fields", "save_session", "validate", "finalize"); tr.String() != want {
		t.Errorf("path %s", tr)
	}
	s := tr.state
	if s.Turn.Windows != 2 || s.Turn.RolledBack != 1 || tr.progress != 2 {
		t.Errorf("windows %d, rolled back %d, %d progress events", s.Turn.Windows, s.Turn.RolledBack, tr.progress)
	}
	if sawHeader {
		t.Errorf("a window sent to the model held the header")
	}
	if !strings.Contains(s.JRXML, `width="280"`) || !strings.Contains(s.JRXML, "销售报表 Sales") {
		t.Errorf("the detail's refinement is not kept or the title's rollback lost its text:\n%s", s.JRXML)
	}
	if !strings.Contains(s.JRXML, "$F{customer}") || strings.Contains(s.JRXML, "field_1") || s.Turn.Status != "pass" {
		t.Errorf("fields not mapped (status %s):\n%s", s.Turn.Status, s.JRXML)
	}
	if reqs := model.Requests(); !strings.Contains(system(reqs[0]), "客户 Customer") {
		t.Errorf("the skeleton's request lacks the form's layout")
	}
}
