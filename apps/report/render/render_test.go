package render_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/report/internal/reporttest"
	"github.com/loomkit/loom/apps/report/jrxml"
	"github.com/loomkit/loom/apps/report/render"
	"github.com/loomkit/loom/internal/testenv"
)

func needFont(t testing.TB) {
	t.Helper()
	testenv.NeedFile(t, render.DefaultFont, "the CJK font (Debian package fonts-arphic-gbsn00lp)")
}

func parse(t testing.TB, src string) *jrxml.Document {
	t.Helper()
	doc, err := jrxml.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestSamplesRender lays out every demo template with sample rows and
// draws its first page and a PDF without error.
func TestSamplesRender(t *testing.T) {
	needFont(t)
	r, err := render.NewRasterizer(render.DefaultFont)
	if err != nil {
		t.Fatal(err)
	}
	placeholders := 0
	for _, path := range reporttest.Samples(t) {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		doc := parse(t, string(src))
		res := render.Layout(doc, render.SampleRows(doc, 4), nil)
		if len(res.Pages) == 0 {
			t.Errorf("%s: no pages", filepath.Base(path))
			continue
		}
		placeholders += res.Placeholders
		img := r.Page(res, 0, 36)
		if img.Bounds().Dx() != int(res.Width/2+0.99) {
			t.Errorf("%s: width %d at 36 dpi for a page %v wide", filepath.Base(path), img.Bounds().Dx(), res.Width)
		}
		if err := render.WritePDF(&bytes.Buffer{}, res, render.DefaultFont); err != nil {
			t.Errorf("%s: %v", filepath.Base(path), err)
		}
	}
	if placeholders == 0 {
		t.Error("no chart, subreport, crosstab or component counted in the samples")
	}
}

const pixels = `<jasperReport xmlns="http://jasperreports.sourceforge.net/jasperreports" name="px" pageWidth="595" pageHeight="842" columnWidth="555" leftMargin="20" rightMargin="20" topMargin="20" bottomMargin="20">
	<title>
		<band height="100">
			<rectangle>
				<reportElement x="0" y="0" width="200" height="50"/>
				<graphicElement><pen lineWidth="2.0"/></graphicElement>
			</rectangle>
			<staticText>
				<reportElement mode="Opaque" x="0" y="60" width="555" height="40" backcolor="#0000FF"/>
				<text><![CDATA[]]></text>
			</staticText>
			<staticText>
				<reportElement x="300" y="0" width="200" height="40"/>
				<textElement><font size="20"/></textElement>
				<text><![CDATA[HELLO 你好]]></text>
			</staticText>
		</band>
	</title>
</jasperReport>`

// TestPixels checks pixels at known coordinates at 150 dpi: the
// rectangle's border, its white inside, the filled band and text in its
// box only.
func TestPixels(t *testing.T) {
	needFont(t)
	r, err := render.NewRasterizer(render.DefaultFont)
	if err != nil {
		t.Fatal(err)
	}
	img := r.Page(render.Layout(parse(t, pixels), nil, nil), 0, 150)
	s := 150.0 / 72
	at := func(x, y float64) (uint8, uint8, uint8) {
		c := img.RGBAAt(int(x*s), int(y*s))
		return c.R, c.G, c.B
	}
	if w, h := img.Bounds().Dx(), img.Bounds().Dy(); w != 1240 || h != 1755 {
		t.Errorf("A4 at 150 dpi is %dx%d", w, h)
	}
	for _, p := range [][2]float64{{20.5, 45}, {120, 20.5}, {219.5, 45}, {120, 69.5}} {
		if r, g, b := at(p[0], p[1]); r > 60 || g > 60 || b > 60 {
			t.Errorf("rectangle border at %v is %d,%d,%d", p, r, g, b)
		}
	}
	if r, g, b := at(120, 45); r != 255 || g != 255 || b != 255 {
		t.Errorf("inside the rectangle %d,%d,%d", r, g, b)
	}
	if r, g, b := at(300, 100); r != 0 || g != 0 || b != 255 {
		t.Errorf("the filled band is %d,%d,%d", r, g, b)
	}
	dark := func(x0, y0, x1, y1 float64) int {
		n := 0
		for y := int(y0 * s); y < int(y1*s); y++ {
			for x := int(x0 * s); x < int(x1*s); x++ {
				if c := img.RGBAAt(x, y); c.R < 100 && c.G < 100 && c.B < 100 {
					n++
				}
			}
		}
		return n
	}
	if n := dark(320, 20, 520, 60); n < 200 {
		t.Errorf("%d dark pixels in the text's box", n)
	}
	if n := dark(225, 15, 315, 75); n != 0 {
		t.Errorf("%d dark pixels between the rectangle and the text", n)
	}
}

const orders = `<jasperReport xmlns="http://jasperreports.sourceforge.net/jasperreports" name="orders" pageWidth="595" pageHeight="842" columnWidth="555" leftMargin="20" rightMargin="20" topMargin="20" bottomMargin="20">
	<field name="name" class="java.lang.String"/>
	<field name="qty" class="java.lang.Integer"/>
	<title><band height="40"><staticText><reportElement x="0" y="0" width="555" height="30"/><textElement><font size="18"/></textElement><text><![CDATA[Orders 订单]]></text></staticText></band></title>
	<detail><band height="20">
		<textField><reportElement x="0" y="0" width="300" height="20"/><textFieldExpression><![CDATA[$F{name}]]></textFieldExpression></textField>
		<textField><reportElement x="300" y="0" width="100" height="20"/><textFieldExpression><![CDATA[$F{qty} > 5 ? "many" : "few"]]></textFieldExpression></textField>
	</band></detail>
	<pageFooter><band height="20"><textField><reportElement x="0" y="0" width="555" height="20"/><textFieldExpression><![CDATA["Page " + $V{PAGE_NUMBER}]]></textFieldExpression></textField></band></pageFooter>
</jasperReport>`

// TestPDF renders 100 rows: three pages (37 rows under the title, then 39
// a page), and pdftotext gives the text back in order, Chinese included.
func TestPDF(t *testing.T) {
	needFont(t)
	testenv.NeedProgram(t, "pdftotext", "Debian package poppler-utils")
	var rows []render.Row
	for i := range 100 {
		rows = append(rows, render.Row{"name": fmt.Sprintf("客户 customer %03d", i+1), "qty": float64(i % 10)})
	}
	res := render.Layout(parse(t, orders), rows, nil)
	if len(res.Pages) != 3 || res.Unsupported != 100 {
		t.Errorf("%d pages, %d unsupported expressions; want 3 and 100 (the > comparison)", len(res.Pages), res.Unsupported)
	}
	dir := t.TempDir()
	f := filepath.Join(dir, "orders.pdf")
	var buf bytes.Buffer
	if err := render.WritePDF(&buf, res, render.DefaultFont); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(f, buf.Bytes(), 0o644)
	out, err := exec.Command("pdftotext", "-layout", f, "-").Output()
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	if n := strings.Count(strings.TrimRight(text, "\f"), "\f") + 1; n != 3 {
		t.Errorf("pdftotext sees %d pages", n)
	}
	last := -1
	for _, want := range []string{"Orders 订单", "客户 customer 001", "客户 customer 037", "Page 1", "客户 customer 038", "Page 2", "客户 customer 100", "Page 3"} {
		i := strings.Index(text, want)
		if i < 0 || i < last {
			t.Errorf("%q at %d, after %d, in\n%.600s", want, i, last, text)
		}
		last = i
	}
	if strings.Contains(text, "customer 038") && strings.Index(text, "customer 038") < strings.Index(text, "Page 1") {
		t.Error("row 38 is on the first page")
	}
}

func BenchmarkRenderPage(b *testing.B) {
	needFont(b)
	r, err := render.NewRasterizer(render.DefaultFont)
	if err != nil {
		b.Fatal(err)
	}
	var rows []render.Row
	for i := range 40 {
		rows = append(rows, render.Row{"name": fmt.Sprintf("客户 customer %03d", i+1), "qty": float64(i)})
	}
	res := render.Layout(parse(b, orders), rows, nil)
	for b.Loop() {
		r.Page(res, 0, 150)
	}
}

func BenchmarkPDF(b *testing.B) {
	needFont(b)
	var rows []render.Row
	for i := range 380 {
		rows = append(rows, render.Row{"name": fmt.Sprintf("客户 customer %03d", i+1), "qty": float64(i)})
	}
	res := render.Layout(parse(b, orders), rows, nil)
	if len(res.Pages) != 10 {
		b.Fatalf("%d pages", len(res.Pages))
	}
	for b.Loop() {
		if err := render.WritePDF(&bytes.Buffer{}, res, render.DefaultFont); err != nil {
			b.Fatal(err)
		}
	}
}

// clipped has text larger than its boxes: a font taller than its box, a
// paragraph of more lines than its box holds, a glyph wider than its box.
const clipped = `<jasperReport xmlns="http://jasperreports.sourceforge.net/jasperreports" name="clipped" pageWidth="300" pageHeight="200" columnWidth="300" leftMargin="0" rightMargin="0" topMargin="0" bottomMargin="0">
	<title><band height="200">
		<staticText><reportElement x="0" y="0" width="150" height="10"/><textElement><font size="20"/></textElement><text><![CDATA[溢出 Overflow]]></text></staticText>
		<staticText><reportElement x="0" y="50" width="60" height="30"/><textElement><font size="12"/></textElement><text><![CDATA[一二三四五六七八九十一二三四五六七八九十一二三四五六七八九十]]></text></staticText>
		<staticText><reportElement x="200" y="50" width="5" height="20"/><textElement><font size="12"/></textElement><text><![CDATA[宽宽宽]]></text></staticText>
	</band></title>
</jasperReport>`

// TestTextClipped: text is clipped to its box as JasperReports clips it:
// a font taller than its box prints nothing, a paragraph prints the lines
// its box holds and nothing below, a glyph wider than its box nothing
// beside it.
func TestTextClipped(t *testing.T) {
	needFont(t)
	r, err := render.NewRasterizer(render.DefaultFont)
	if err != nil {
		t.Fatal(err)
	}
	img := r.Page(render.Layout(parse(t, clipped), nil, nil), 0, 144)
	const s = 2.0
	dark := func(x0, y0, x1, y1 float64) int {
		n := 0
		for y := int(y0 * s); y < int(y1*s); y++ {
			for x := int(x0 * s); x < int(x1*s); x++ {
				if c := img.RGBAAt(x, y); c.R < 128 && c.G < 128 && c.B < 128 {
					n++
				}
			}
		}
		return n
	}
	if n := dark(0, 0, 300, 45); n != 0 {
		t.Errorf("a font of 20 in a box 10 high drew %d dark pixels", n)
	}
	if n := dark(0, 50, 60, 80); n < 100 {
		t.Errorf("the paragraph drew %d dark pixels in its box", n)
	}
	if n := dark(0, 80, 195, 200); n != 0 {
		t.Errorf("the paragraph drew %d dark pixels below its box", n)
	}
	if n := dark(205, 45, 300, 200); n != 0 {
		t.Errorf("a glyph wider than its box drew %d dark pixels beside it", n)
	}
}
