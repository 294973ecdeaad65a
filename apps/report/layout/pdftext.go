package layout

import (
	"bytes"
	"context"
	"html"
	"image"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/loomkit/loom/internal/leash"
)

// pdftotextLimits bound one run of pdftotext on a page.
var pdftotextLimits = leash.Limits{Wall: 30 * time.Second, Memory: 512 << 20, Output: 8 << 20}

// minTextWords is how many words a page's text layer must have to be read
// instead of the drawn page: fewer, and the page is taken as a picture.
const minTextWords = 3

var (
	lineTag = regexp.MustCompile(`<line\b|<word xMin="([-\d.]+)" yMin="([-\d.]+)" xMax="([-\d.]+)" yMax="([-\d.]+)">([^<]*)</word>`)
)

// textLayer reads the words of a PDF page's text layer with pdftotext
// -bbox-layout, their boxes in pixels at PDFDPI. It gives none for a page
// without text (a scan) or when pdftotext cannot read it, so that the page
// is read with OCR instead.
func textLayer(ctx context.Context, pdf []byte, page int) []Word {
	p := strconv.Itoa(page)
	res, err := leash.Run(ctx, pdftotextLimits, leash.Cmd{
		Name:  "pdftotext",
		Args:  []string{"-bbox-layout", "-f", p, "-l", p, "-", "-"},
		Stdin: bytes.NewReader(pdf),
	})
	if programFailed(ctx, "pdftotext", page, res, err) != nil {
		return nil
	}
	const k = PDFDPI / 72.0
	var words []Word
	line := 0
	for _, m := range lineTag.FindAllSubmatch(res.Stdout, -1) {
		if m[1] == nil {
			line++
			continue
		}
		// Underscores are a line to fill in, drawn as text.
		text := strings.TrimSpace(strings.Trim(html.UnescapeString(string(m[5])), "_＿"))
		if text == "" || !utf8.ValidString(text) {
			continue
		}
		var f [4]float64
		for i := range f {
			f[i], _ = strconv.ParseFloat(string(m[i+1]), 64)
		}
		wd := Word{
			Text:       text,
			Box:        Box{X: int(f[0] * k), Y: int(f[1] * k), W: max(int((f[2]-f[0])*k), 1), H: max(int((f[3]-f[1])*k), 1)},
			Confidence: 100,
			Line:       line,
		}
		// Words of a line a space apart are one phrase ("PURCHASE
		// ORDER"): their boxes are as tall as the font, wider spaces than
		// a fraction of it part cells.
		if n := len(words); n > 0 && words[n-1].Line == line {
			prev := &words[n-1]
			if gap := wd.Box.X - prev.Box.Right(); gap >= 0 && 5*gap < 3*max(prev.Box.H, wd.Box.H) {
				prev.Text = joinText(prev.Text, wd.Text, true)
				prev.Box = union(prev.Box, wd.Box)
				continue
			}
		}
		words = append(words, wd)
	}
	if len(words) < minTextWords {
		return nil
	}
	return words
}

// fitInk fits the boxes of words much taller than the page's usual word
// (a text layer may give a large title the box of its font, reaching over
// the line above) to the tallest run of inked rows of g inside them.
func fitInk(g *image.Gray, words []Word) {
	m := medianHeight(words)
	for i := range words {
		b := &words[i].Box
		if 2*b.H <= 3*m {
			continue
		}
		x0, x1 := max(b.X, 0), min(b.Right(), g.Rect.Dx())
		y0, y1 := max(b.Y, 0), min(b.Bottom(), g.Rect.Dy())
		best, bestH, start, gap := 0, 0, -1, 0
		for y := y0; y <= y1; y++ {
			inked := false
			if y < y1 {
				for _, p := range g.Pix[y*g.Stride+x0 : y*g.Stride+x1] {
					if p < 128 {
						inked = true
						break
					}
				}
			}
			switch {
			case inked && start < 0:
				start, gap = y, 0
			case inked:
				gap = 0
			case start >= 0 && gap < 3 && y < y1:
				gap++
			case start >= 0:
				if h := y - gap - start; h > bestH {
					best, bestH = start, h
				}
				start = -1
			}
		}
		if bestH > 0 {
			b.Y, b.H = best, bestH
		}
	}
}
