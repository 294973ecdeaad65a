package render

import (
	"errors"
	"fmt"
	"image/color"
	"io/fs"
	"os"
	"strings"
	"unicode"
)

// DefaultFont is the font to draw with where the caller names none: AR PL
// SungtiL GB (Debian package fonts-arphic-gbsn00lp), a TrueType font with
// Latin and simplified Chinese glyphs, which the PDF embeds (the PDF
// library takes TrueType, not OpenType CFF or collections). The renderer
// takes the font's path from its caller (loom reads LOOM_REPORT_FONT).
const DefaultFont = "/usr/share/fonts/truetype/arphic-gbsn00lp/gbsn00lp.ttf"

// readFont reads the TrueType font at path.
func readFont(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		// the message may reach a client: the server's paths stay out of it
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("render: read the font (install fonts-arphic-gbsn00lp, or name another TrueType font): %w", err)
	}
	return b, nil
}

// line is one line of text placed in points from the page's top left, its
// top at Y.
type line struct {
	text string
	x, y float64
}

// maxLines bounds the lines drawn of one text.
const maxLines = 2000

// lineHeight is the height of a line of text of the size.
func lineHeight(size float64) float64 { return size * 1.2 }

// textLines wraps item's text to its box (at spaces where it can, else
// between characters, as CJK text wraps), aligns it, and drops the lines
// that do not fit in the box. measure gives a string's width in points.
func textLines(it Item, measure func(string) float64) []line {
	st := it.Style
	maxW := it.W - st.LeftPadding - st.RightPadding
	lh := lineHeight(st.FontSize)
	// As JasperReports does, a line that does not fit in the box is not
	// drawn, the first one neither (a font too large for its box prints
	// nothing); a fifth of a line of slack allows for fonts whose lines
	// are closer than 1.2 of their size. Never more than maxLines.
	fit := int(min(it.H/lh+0.2, maxLines))
	if fit <= 0 {
		return nil
	}
	var lines []string
	for _, para := range strings.Split(strings.ReplaceAll(it.Text, "\r\n", "\n"), "\n") {
		rs := []rune(para)
		if len(rs) == 0 {
			lines = append(lines, "")
		}
		for len(rs) > 0 && len(lines) < fit {
			// the most characters that fit: bounded by doubling, then
			// found by halving, so that a line costs about its own length
			lo, hi := 1, 1
			for hi < len(rs) && measure(string(rs[:hi])) <= maxW {
				lo, hi = hi, min(2*hi, len(rs))
			}
			if hi == len(rs) && measure(string(rs)) <= maxW {
				lo = hi
			}
			for lo < hi {
				mid := (lo + hi + 1) / 2
				if measure(string(rs[:mid])) <= maxW {
					lo = mid
				} else {
					hi = mid - 1
				}
			}
			n := lo
			if n < len(rs) {
				// break at the last space within the line, if any
				for k := n; k > 0; k-- {
					if unicode.IsSpace(rs[k-1]) {
						n = k
						break
					}
				}
			}
			lines = append(lines, strings.TrimRightFunc(string(rs[:n]), unicode.IsSpace))
			rs = rs[n:]
		}
		if len(lines) >= fit {
			lines = lines[:fit]
			break
		}
	}
	total := lh * float64(len(lines))
	y := it.Y
	switch st.VAlign {
	case "Middle":
		y += (it.H - total) / 2
	case "Bottom":
		y += it.H - total
	}
	out := make([]line, 0, len(lines))
	for i, s := range lines {
		x := it.X + st.LeftPadding
		switch st.HAlign {
		case "Center":
			x += (maxW - measure(s)) / 2
		case "Right":
			x += maxW - measure(s)
		}
		out = append(out, line{text: s, x: x, y: y + lh*float64(i)})
	}
	return out
}

// canvas is what pages are drawn on: an image or a PDF page, in points.
type canvas interface {
	fill(a area)
	line(it Item)
	ellipse(it Item)
	text(it Item) error
}

// drawItems draws items on c in order: backgrounds and borders, then text.
func drawItems(c canvas, items []Item) error {
	for _, it := range items {
		switch it.Kind {
		case Rect, Text, Placeholder:
			for _, a := range fills(it) {
				c.fill(a)
			}
			if it.Kind != Rect {
				if err := c.text(it); err != nil {
					return err
				}
			}
		case Line:
			c.line(it)
		case Ellipse:
			c.ellipse(it)
		}
	}
	return nil
}

// area is a filled rectangle in points.
type area struct {
	x, y, w, h float64
	c          color.RGBA
}

// fills are the rectangles an item's background and borders fill.
func fills(it Item) []area {
	st := it.Style
	var out []area
	if st.Opaque && it.Kind != Placeholder {
		out = append(out, area{it.X, it.Y, it.W, it.H, st.Back})
	}
	b, bc := st.Border, st.BorderColor
	for i, a := range []area{
		{it.X, it.Y, it.W, b[0], bc[0]},
		{it.X, it.Y, b[1], it.H, bc[1]},
		{it.X, it.Y + it.H - b[2], it.W, b[2], bc[2]},
		{it.X + it.W - b[3], it.Y, b[3], it.H, bc[3]},
	} {
		if b[i] > 0 {
			out = append(out, a)
		}
	}
	return out
}

// textStyle is the item with the style its text is drawn in: a
// placeholder's label small, grey and centred, an expression the
// renderer does not read muted.
func textStyle(it Item) Item {
	st := it.Style
	if it.Kind == Placeholder {
		st.HAlign, st.VAlign, st.Fore, st.FontSize = "Center", "Middle", color.RGBA{128, 128, 128, 255}, 8
		it.Text = "[" + it.Text + "]"
	}
	if st.Muted {
		st.Fore = color.RGBA{150, 150, 150, 255}
	}
	it.Style = st
	return it
}
