package render

import (
	"fmt"
	"io"
	"os"

	"github.com/signintech/gopdf"
)

// WritePDF writes res as a PDF, one page per page, with the TrueType font
// at fontPath embedded.
func WritePDF(w io.Writer, res *Result, fontPath string) error {
	if _, err := readFont(fontPath); err != nil {
		return err
	}
	pdf := &gopdf.GoPdf{}
	pdf.Start(gopdf.Config{PageSize: gopdf.Rect{W: res.Width, H: res.Height}, Unit: gopdf.UnitPT})
	if err := pdf.AddTTFFont("f", fontPath); err != nil {
		return fmt.Errorf("render: embed the font: %w", err)
	}
	for _, p := range res.Pages {
		pdf.AddPage()
		if err := drawItems(pdfCanvas{pdf}, p.Items); err != nil {
			return err
		}
	}
	if _, err := pdf.WriteTo(w); err != nil {
		return fmt.Errorf("render: write PDF: %w", err)
	}
	return nil
}

// pdfCanvas draws on the PDF's current page.
type pdfCanvas struct{ pdf *gopdf.GoPdf }

func (c pdfCanvas) fill(a area) {
	c.pdf.SetFillColor(a.c.R, a.c.G, a.c.B)
	c.pdf.RectFromUpperLeftWithStyle(a.x, a.y, a.w, a.h, "F")
}

func (c pdfCanvas) pen(st Style) {
	c.pdf.SetStrokeColor(st.Fore.R, st.Fore.G, st.Fore.B)
	c.pdf.SetLineWidth(st.LineWidth)
}

func (c pdfCanvas) line(it Item) {
	c.pen(it.Style)
	switch {
	case it.H <= 1:
		c.pdf.Line(it.X, it.Y, it.X+it.W, it.Y)
	case it.W <= 1:
		c.pdf.Line(it.X, it.Y, it.X, it.Y+it.H)
	default:
		c.pdf.Line(it.X, it.Y, it.X+it.W, it.Y+it.H)
	}
}

func (c pdfCanvas) ellipse(it Item) {
	c.pen(it.Style)
	c.pdf.Oval(it.X, it.Y, it.X+it.W, it.Y+it.H)
}

func (c pdfCanvas) text(it Item) error {
	pdf := c.pdf
	it = textStyle(it)
	st := it.Style
	if st.FontSize <= 0 {
		return nil
	}
	if err := pdf.SetFont("f", "", st.FontSize); err != nil {
		return fmt.Errorf("render: font: %w", err)
	}
	pdf.SetTextColor(st.Fore.R, st.Fore.G, st.Fore.B)
	measure := func(t string) float64 {
		w, err := pdf.MeasureTextWidth(t)
		if err != nil {
			return 0
		}
		return w
	}
	for _, l := range textLines(it, measure) {
		if l.text == "" {
			continue
		}
		pdf.SetXY(l.x, l.y)
		if err := pdf.Cell(nil, l.text); err != nil {
			return fmt.Errorf("render: text %q: %w", l.text, err)
		}
	}
	return nil
}

// WritePDFFile writes res as a PDF file at path.
func WritePDFFile(path string, res *Result, fontPath string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("render: %w", err)
	}
	err = WritePDF(f, res, fontPath)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("render: write %s: %w", path, cerr)
	}
	return err
}
