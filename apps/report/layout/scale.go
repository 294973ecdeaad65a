package layout

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"slices"
	"strings"
	"unicode"

	"golang.org/x/image/draw"
)

// OCR reads text best when its letters are about 30 pixels tall: smaller
// text is read again from the picture enlarged, and a line OCR missed (a
// title much larger than the rest) is read again on its own.
const (
	// smallText is the median word height, in pixels, below which a page
	// is read again enlarged.
	smallText = 20
	// wantText is the word height a page is enlarged to.
	wantText = 30
	// maxScaled is the most pixels an enlarged page may have.
	maxScaled = 16_000_000
	// maxMissed is the most missed lines read again on a page.
	maxMissed = 4
)

// readPicture reads the words of a picture: its rules are found and
// painted out, OCR reads the rest — again enlarged when its text is small
// — and lines of ink no word covers are read one by one at the scale
// their text needs. Boxes are in the picture's pixels.
func readPicture(ctx context.Context, img []byte, psm int) (w, h int, words []Word, rules []Box, err error) {
	g, rules := greyWithoutRules(img)
	if g == nil {
		w, h, words, err = OCR(ctx, img, psm)
		return w, h, words, nil, err
	}
	w, h = g.Rect.Dx(), g.Rect.Dy()
	_, _, words, err = ocrGrey(ctx, g, psm, 1)
	if err != nil {
		return 0, 0, nil, nil, err
	}
	if m := medianHeight(words); m > 0 && m < smallText {
		k := min((wantText+m-1)/m, 3)
		for k > 1 && w*h*k*k > maxScaled {
			k--
		}
		if k > 1 {
			if _, _, big, err := ocrGrey(ctx, g, psm, k); err == nil && len(big) > 0 {
				words = big
			} else if err != nil && ctx.Err() != nil {
				return 0, 0, nil, nil, err
			}
		}
	}
	words = missedLines(ctx, g, words)
	return w, h, words, rules, nil
}

// ocrGrey runs OCR on g enlarged k times and gives the words' boxes in
// g's pixels.
func ocrGrey(ctx context.Context, g *image.Gray, psm, k int) (w, h int, words []Word, err error) {
	var src image.Image = g
	if k > 1 {
		big := image.NewGray(image.Rect(0, 0, g.Rect.Dx()*k, g.Rect.Dy()*k))
		draw.CatmullRom.Scale(big, big.Rect, g, g.Rect, draw.Src, nil)
		src = big
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, src); err != nil {
		return 0, 0, nil, err
	}
	w, h, words, err = OCR(ctx, buf.Bytes(), psm)
	if err != nil {
		return 0, 0, nil, err
	}
	for i := range words {
		b := &words[i].Box
		b.X, b.Y, b.W, b.H = b.X/k, b.Y/k, max(b.W/k, 1), max(b.H/k, 1)
	}
	return w / k, h / k, words, nil
}

// medianHeight is the median height of the words, 0 for none.
func medianHeight(words []Word) int {
	if len(words) == 0 {
		return 0
	}
	hs := make([]int, len(words))
	for i, w := range words {
		hs[i] = w.Box.H
	}
	slices.Sort(hs)
	return hs[len(hs)/2]
}

// sureWord is the confidence above which a word is taken to cover its
// line.
const sureWord = 50

// missedLines finds the lines of ink of g that no sure word covers, at
// least as tall as the page's usual word, and reads each on its own (as
// one line, scaled to wantText). It gives back words with the doubtful
// words of the lines read again replaced by what was read there, each
// line as one of its own.
func missedLines(ctx context.Context, g *image.Gray, words []Word) []Word {
	m := medianHeight(words)
	if m == 0 {
		return words
	}
	w, h := g.Rect.Dx(), g.Rect.Dy()
	ink := make([]int, h) // dark pixels on each row
	left, right := make([]int, h), make([]int, h)
	for y := range h {
		row := g.Pix[y*g.Stride : y*g.Stride+w]
		left[y], right[y] = w, -1
		for x, p := range row {
			if p < 128 {
				ink[y]++
				left[y], right[y] = min(left[y], x), max(right[y], x)
			}
		}
	}
	covered := make([]bool, h)
	for _, wd := range words {
		if wd.Confidence < sureWord || isRule(wd.Text) {
			continue
		}
		for y := max(wd.Box.Y, 0); y < min(wd.Box.Bottom(), h); y++ {
			covered[y] = true
		}
	}
	var out []Word
	var bands [][2]int
	for y := 0; y < h && len(bands) < maxMissed; {
		if ink[y] == 0 {
			y++
			continue
		}
		y0, x0, x1, n, hit := y, w, -1, 0, 0
		for y < h && ink[y] > 0 {
			x0, x1, n = min(x0, left[y]), max(x1, right[y]), n+ink[y]
			if covered[y] {
				hit++
			}
			y++
		}
		bh := y - y0
		if 3*hit > bh || bh < m || bh > 8*m || n < 4*bh || x1-x0 < bh {
			continue
		}
		// The line alone, on paper with a margin of half its height.
		pad := bh / 2
		crop := image.Rect(x0, y0, x1+1, y)
		part := image.NewGray(image.Rect(0, 0, crop.Dx()+2*pad, crop.Dy()+2*pad))
		for i := range part.Pix {
			part.Pix[i] = 255
		}
		draw.Copy(part, image.Point{X: pad, Y: pad}, g, crop, draw.Src, nil)
		crop.Min = crop.Min.Sub(image.Point{X: pad, Y: pad})
		k := 1
		if bh < wantText {
			k = min((wantText+bh-1)/bh, 3)
		}
		_, _, ws, err := ocrGrey(ctx, part, 7, k)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			continue
		}
		bands = append(bands, [2]int{y0, y})
		for _, wd := range ws {
			if !strings.ContainsFunc(wd.Text, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
				continue // a speck read as a mark
			}
			wd.Box.X += crop.Min.X
			wd.Box.Y += crop.Min.Y
			wd.Block, wd.Par, wd.Line = -len(bands), 0, 0
			out = append(out, wd)
		}
	}
	for _, wd := range words {
		mid := wd.Box.Y + wd.Box.H/2
		if !slices.ContainsFunc(bands, func(b [2]int) bool { return mid >= b[0] && mid < b[1] }) {
			out = append(out, wd)
		}
	}
	return out
}
