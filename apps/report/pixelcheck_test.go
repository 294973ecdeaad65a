package report_test

import (
	"bytes"
	"image"
	_ "image/png"
	"os"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/report"
	"github.com/loomkit/loom/apps/report/compare"
	"github.com/loomkit/loom/apps/report/jrxml"
	"github.com/loomkit/loom/apps/report/render"
)

// cut removes s's text from open to close, both included.
func cut(t *testing.T, s, open, close string) string {
	t.Helper()
	i, j := strings.Index(s, open), strings.Index(s, close)
	if i < 0 || j < i {
		t.Fatalf("no %s … %s", open, close)
	}
	return s[:i] + s[j+len(close):]
}

// TestPixelCheck calibrates the comparison with an uploaded picture on
// the invoice form: the skeleton the toolkit drew from its picture passes,
// the same skeleton without its table, with only its title, and a blank
// page fail, although SSIM over the whole page finds all of them alike.
func TestPixelCheck(t *testing.T) {
	form, _, err := image.Decode(bytes.NewReader(invoicePNG(t)))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("testdata/invoice_skeleton.jrxml")
	if err != nil {
		t.Fatal(err)
	}
	faithful := string(src)
	noTable := cut(t, cut(t, faithful, "<columnHeader>", "</columnHeader>"), "<detail>", "</detail>")
	i, j := strings.Index(noTable, `<staticText>
				<reportElement x="2" y="53"`), strings.Index(noTable, "</band>\n\t</title>")
	titleOnly := noTable[:i] + noTable[j:]
	blank := cut(t, noTable, "<title>", "</title>")
	r, err := render.NewRasterizer(render.DefaultFont)
	if err != nil {
		t.Fatal(err)
	}
	score := func(name, src string) compare.Result {
		doc, err := jrxml.Parse([]byte(src))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := r.Page(render.Layout(doc, render.SampleRows(doc, 5), nil), 0, 72)
		res := compare.Form(got, form, 3, 3)
		t.Logf("%-10s SSIM over the page %.3f, over the form %.3f, regions %.2f", name, compare.SSIM(got, form, 3, 3).SSIM, res.SSIM, res.Regions)
		return res
	}
	if s := score("faithful", faithful); !s.Passes(report.DefaultSSIM) {
		t.Errorf("the faithful skeleton fails: %.3f", s.SSIM)
	}
	for name, src := range map[string]string{"no table": noTable, "title only": titleOnly, "blank": blank} {
		if s := score(name, src); s.Passes(report.DefaultSSIM) {
			t.Errorf("%s passes: %.3f", name, s.SSIM)
		}
	}
}
