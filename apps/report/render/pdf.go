package render

import (
	"fmt"
	"image/color"
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
		return fmt.Errorf("render: embed font %s: %w", fontPath, err)
	}
	fill := func(x, y, w, h float64, c color.RGBA) {
		pdf.SetFillColor(c.R, c.G, c.B)
		pdf.RectFromUpperLeftWithStyle(x, y, w, h, "F")
	}
	for _, p := range res.Pages {
		pdf.AddPage()
		for _, it := range p.Items {
			st := it.Style
			switch it.Kind {
			case Rect, Text, Placeholder:
				for _, a := range fills(it) {
					fill(a.x, a.y, a.w, a.h, a.c)
				}
				if it.Kind != Rect {
					if err := pdfText(pdf, it); err != nil {
						return err
					}
				}
			case Line:
				pdf.SetStrokeColor(st.Fore.R, st.Fore.G, st.Fore.B)
				pdf.SetLineWidth(st.LineWidth)
				switch {
				case it.H <= 1:
					pdf.Line(it.X, it.Y, it.X+it.W, it.Y)
				case it.W <= 1:
					pdf.Line(it.X, it.Y, it.X, it.Y+it.H)
				default:
					pdf.Line(it.X, it.Y, it.X+it.W, it.Y+it.H)
				}
			case Ellipse:
				pdf.SetStrokeColor(st.Fore.R, st.Fore.G, st.Fore.B)
				pdf.SetLineWidth(st.LineWidth)
				pdf.Oval(it.X, it.Y, it.X+it.W, it.Y+it.H)
			}
		}
	}
	if err := pdf.Write(w); err != nil {
		return fmt.Errorf("render: write PDF: %w", err)
	}
	return nil
}

func pdfText(pdf *gopdf.GoPdf, it Item) error {
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
