package report

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"sync"

	"github.com/loomkit/loom/apps/report/jrxml"
	"github.com/loomkit/loom/apps/report/render"
)

// PreviewDPI is the resolution of preview images.
const PreviewDPI = 96

// previewRows is how many rows of sample values a preview shows.
const previewRows = 5

// rasterizer draws pages with the font read once, when first needed.
type rasterizer struct {
	once sync.Once
	r    *render.Rasterizer
	err  error
}

func (r *rasterizer) get() (*render.Rasterizer, error) {
	r.once.Do(func() {
		r.r, r.err = render.NewRasterizer(render.FontPath())
		if r.err != nil {
			r.err = fmt.Errorf("reading the font for previews (Debian package fonts-arphic-gbsn00lp, or LOOM_REPORT_FONT): %w", r.err)
		}
	})
	return r.r, r.err
}

// layOut parses a template and lays it out with sample rows.
func layOut(src string) (*render.Result, error) {
	doc, err := jrxml.Parse([]byte(src))
	if err != nil {
		return nil, fmt.Errorf("reading the template: %w", err)
	}
	return render.Layout(doc, render.SampleRows(doc, previewRows), nil), nil
}

// pageImage draws page p (from 0) of a template at dpi.
func (a *Agent) pageImage(src string, p int, dpi float64) (image.Image, int, error) {
	res, err := layOut(src)
	if err != nil {
		return nil, 0, err
	}
	if p < 0 || p >= len(res.Pages) {
		return nil, len(res.Pages), &PageError{Pages: len(res.Pages), Page: p + 1}
	}
	r, err := a.raster.get()
	if err != nil {
		return nil, 0, err
	}
	return r.Page(res, p, dpi), len(res.Pages), nil
}

// PNG renders page p (from 0) of a template, with sample rows, as PNG.
func (a *Agent) PNG(src string, p int) ([]byte, error) {
	img, _, err := a.pageImage(src, p, PreviewDPI)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return nil, fmt.Errorf("encoding the preview: %w", err)
	}
	return b.Bytes(), nil
}

// PDF renders a template, with sample rows, as PDF.
func (a *Agent) PDF(src string) ([]byte, error) {
	res, err := layOut(src)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := render.WritePDF(&b, res, render.FontPath()); err != nil {
		return nil, fmt.Errorf("writing the PDF: %w", err)
	}
	return b.Bytes(), nil
}

// PageError is asking for a page a report does not have.
type PageError struct {
	// Pages is how many pages the report has; Page the one asked for,
	// from 1.
	Pages, Page int
}

// Error says how many pages there are.
func (e *PageError) Error() string {
	return fmt.Sprintf("the report has %d pages, not page %d", e.Pages, e.Page)
}
