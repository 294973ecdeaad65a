package render_test

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/loomkit/loom/apps/report/jrxml"
	"github.com/loomkit/loom/apps/report/render"
)

// allocated is how many bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// hostile is a template with a page of the given size and, in its
// title band, the elements given.
func hostile(width, height, elements string) string {
	return `<jasperReport xmlns="http://jasperreports.sourceforge.net/jasperreports" name="h" pageWidth="` + width + `" pageHeight="` + height + `" leftMargin="0" rightMargin="0" topMargin="0" bottomMargin="0">
	<field name="a" class="java.lang.String"/>
	<title><band height="100">` + elements + `</band></title>
</jasperReport>`
}

// TestHugePage: whatever size a template asks for (pages of 200,000
// points, elements and fonts past any page, NaN and infinities), the
// rasterizer draws within MaxPixels and allocates about that much.
func TestHugePage(t *testing.T) {
	needFont(t)
	r, err := render.NewRasterizer(render.DefaultFont)
	if err != nil {
		t.Fatal(err)
	}
	big := `<line><reportElement x="0" y="0" width="200000" height="150000"/></line>
		<ellipse><reportElement x="-5" y="0" width="1e300" height="1e300"/></ellipse>
		<staticText><reportElement x="0" y="0" width="200000" height="200000"/><textElement><font size="100000"/></textElement><text>huge 大</text></staticText>
		<staticText><reportElement x="NaN" y="Inf" width="-Inf" height="NaN"/><textElement><font size="NaN"/></textElement><text>nan</text></staticText>
		<rectangle><reportElement x="-1e18" y="-1e18" width="1e19" height="1e19"/></rectangle>
		<line><reportElement x="0" y="0" width="1e308" height="1e308"/></line>`
	for _, tc := range []struct{ name, w, h string }{
		{"200000 pt square", "200000", "200000"},
		{"tall", "10", "2000000000"},
		{"wide", "2000000000", "1"},
		{"zero", "0", "0"},
		{"negative", "-100", "-100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := render.Layout(parse(t, hostile(tc.w, tc.h, big)), render.SampleRows(parse(t, hostile(tc.w, tc.h, big)), 1), nil)
			for _, dpi := range []float64{96, 300, 1e9, 0, -1} {
				var bounds string
				n := allocated(func() {
					img := r.Page(res, 0, dpi)
					b := img.Bounds()
					if b.Dx() < 1 || b.Dy() < 1 || b.Dx()*b.Dy() > render.MaxPixels {
						t.Errorf("dpi %g: image %v, past %d pixels", dpi, b, render.MaxPixels)
					}
					bounds = b.String()
				})
				if limit := uint64(render.MaxPixels*4 + 64<<20); n > limit {
					t.Errorf("dpi %g: drawing %s allocated %d MiB, more than %d MiB", dpi, bounds, n>>20, limit>>20)
				}
			}
		})
	}
	// a page that fits is drawn at the resolution asked
	res := render.Layout(parse(t, hostile("595", "842", "")), nil, nil)
	if b := r.Page(res, 0, 96).Bounds(); b.Dx() != 794 || b.Dy() != 1123 {
		t.Errorf("an A4 page at 96 dpi is %v, want 794×1123", b)
	}
}

// TestConcurrentPages: one rasterizer draws pages for several requests
// at once (run with -race to see its font cache guarded).
func TestConcurrentPages(t *testing.T) {
	needFont(t)
	r, err := render.NewRasterizer(render.DefaultFont)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			el := fmt.Sprintf(`<staticText><reportElement x="0" y="0" width="300" height="90"/><textElement><font size="%d"/></textElement><text>size %d 字</text></staticText>`, 8+i, 8+i)
			res := render.Layout(parse(t, hostile("300", "200", el)), nil, nil)
			for range 5 {
				r.Page(res, 0, 72+float64(i))
			}
		}()
	}
	wg.Wait()
}

// TestLongText: a long text in a narrow box costs about its length, not
// its length for every line it wraps to.
func TestLongText(t *testing.T) {
	needFont(t)
	r, err := render.NewRasterizer(render.DefaultFont)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("long words wrap 长文本 ", 50000) // 1.3 MB
	el := `<staticText><reportElement x="0" y="0" width="60" height="14000"/><textElement><font size="1"/></textElement><text>` + text + `</text></staticText>`
	res := render.Layout(parse(t, hostile("100", "14400", strings.Replace(el, "14000", "100", 1))), nil, nil)
	res2 := render.Layout(parse(t, strings.Replace(hostile("100", "14400", el), `band height="100"`, `band height="14000"`, 1)), nil, nil)
	for _, res := range []*render.Result{res, res2} {
		if n := allocated(func() { r.Page(res, 0, 72) }); n > 512<<20 {
			t.Errorf("drawing a %d KB text allocated %d MiB", len(text)>>10, n>>20)
		}
	}
}

// TestLayoutBounded: a template that repeats a large background on
// thousands of pages stops at MaxItems, and says so.
func TestLayoutBounded(t *testing.T) {
	var bg, detail strings.Builder
	for range 2000 {
		bg.WriteString(`<staticText><reportElement x="0" y="0" width="10" height="10"/><text>bg</text></staticText>`)
	}
	for range 3000 {
		detail.WriteString(`<band height="10"><break><reportElement x="0" y="0" width="1" height="1"/></break></band>`)
	}
	src := `<jasperReport xmlns="http://jasperreports.sourceforge.net/jasperreports" name="h">
	<field name="a" class="java.lang.String"/>
	<background><band height="100">` + bg.String() + `</band></background>
	<detail>` + detail.String() + `</detail>
</jasperReport>`
	doc, err := jrxml.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var res *render.Result
	n := allocated(func() { res = render.Layout(doc, render.SampleRows(doc, 5), nil) })
	items := 0
	for _, p := range res.Pages {
		items += len(p.Items)
	}
	if !res.Truncated || items > render.MaxItems {
		t.Errorf("%d pages, %d items, truncated %v; want at most %d items, truncated", len(res.Pages), items, res.Truncated, render.MaxItems)
	}
	if n > 512<<20 {
		t.Errorf("the layout allocated %d MiB", n>>20)
	}
	// a report within the bounds is not truncated
	small := render.Layout(parse(t, hostile("595", "842", `<staticText><reportElement x="0" y="0" width="10" height="10"/><text>a</text></staticText>`)), render.SampleRows(doc, 5), nil)
	if small.Truncated || len(small.Pages) != 1 {
		t.Errorf("a small report: %d pages, truncated %v", len(small.Pages), small.Truncated)
	}
}

// TestEvalBounded: deeply nested expressions are refused rather than
// recursed into, and a long concatenation is built once.
func TestEvalBounded(t *testing.T) {
	deep := strings.Repeat("(", 1_000_000) + "1" + strings.Repeat(")", 1_000_000)
	if _, err := render.Eval(deep, render.Scope{}); err == nil {
		t.Error("a million nested parentheses evaluated")
	}
	cond := strings.Repeat("true ? ", 100000) + "1" + strings.Repeat(" : 2", 100000)
	if _, err := render.Eval(cond, render.Scope{}); err == nil {
		t.Error("a hundred thousand nested conditions evaluated")
	}
	if v, err := render.Eval("(((1 + 2)))", render.Scope{}); err != nil || v != 3.0 {
		t.Errorf("nested parentheses: %v, %v", v, err)
	}
	long := "1 + 2" + strings.Repeat(` + "ab"`, 200000)
	var v any
	var err error
	n := allocated(func() { v, err = render.Eval(long, render.Scope{}) })
	if s, ok := v.(string); err != nil || !ok || len(s) != 1+400000 || !strings.HasPrefix(s, "3abab") {
		t.Errorf("long concatenation: %v", err)
	}
	if n > 64<<20 {
		t.Errorf("a %d KB concatenation allocated %d MiB", len(long)>>10, n>>20)
	}
}

// TestFontErrorsNameNoPath: a missing or broken font is said without the
// server's paths, since the message may reach a client.
func TestFontErrorsNameNoPath(t *testing.T) {
	dir := t.TempDir()
	broken := dir + "/broken.ttf"
	if err := os.WriteFile(broken, []byte("not a font"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir + "/missing.ttf", broken} {
		_, err := render.NewRasterizer(p)
		if err == nil || strings.Contains(err.Error(), dir) {
			t.Errorf("font %s: error %v", p, err)
		}
		var b strings.Builder
		err = render.WritePDF(&b, &render.Result{Width: 10, Height: 10}, p)
		if err == nil || strings.Contains(err.Error(), dir) {
			t.Errorf("PDF with font %s: error %v", p, err)
		}
	}
}
