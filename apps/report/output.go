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

// previewDPI is the resolution of preview images.
const previewDPI = 96

// previewRows is how many rows of sample values a preview shows.
const previewRows = 5

// rasterizer draws pages with the font at the path font, read once, when
// first needed.
type rasterizer struct {
	font string
	once sync.Once
	r    *render.Rasterizer
	err  error
}

func (r *rasterizer) get() (*render.Rasterizer, error) {
	r.once.Do(func() {
		r.r, r.err = render.NewRasterizer(r.font)
		if r.err != nil {
			r.err = fmt.Errorf("reading the font for previews (Debian package fonts-arphic-gbsn00lp, or another TrueType font: loom serve reads LOOM_REPORT_FONT): %w", r.err)
		}
	})
	return r.r, r.err
}

// layOut parses a template and lays it out with sample rows: the rows of
// the form it was made from (form, nil for none; a field the form left
// blank stays blank), with made-up values for the fields the form does not
// have, else previewRows made-up rows.
func layOut(src string, form []render.Row) (*render.Result, error) {
	doc, err := jrxml.Parse([]byte(src))
	if err != nil {
		return nil, fmt.Errorf("reading the template: %w", err)
	}
	n := previewRows
	if len(form) > 0 {
		n = len(form)
	}
	rows := render.SampleRows(doc, n)
	for i, row := range form {
		for k, v := range row {
			if _, declared := rows[i][k]; declared { // blank where the form is
				rows[i][k] = v
			}
		}
	}
	return render.Layout(doc, rows, nil), nil
}

// formRows are the values of the form a design was made from, as data
// rows; none without a form.
func (l *Layout) formRows() []render.Row {
	if l == nil {
		return nil
	}
	rows := make([]render.Row, len(l.Rows))
	for i, r := range l.Rows {
		rows[i] = r
	}
	return rows
}

// pageImage draws page p (from 0) of a template at dpi, with the form's
// rows (nil: made-up ones).
func (a *Agent) pageImage(src string, form []render.Row, p int, dpi float64) (image.Image, int, error) {
	res, err := layOut(src, form)
	if err != nil {
		return nil, 0, err
	}
	if p < 0 || p >= len(res.Pages) {
		return nil, len(res.Pages), &pageError{Pages: len(res.Pages), Page: p + 1}
	}
	r, err := a.raster.get()
	if err != nil {
		return nil, 0, err
	}
	return r.Page(res, p, dpi), len(res.Pages), nil
}

// PNG renders page p (from 0) of a template, with sample rows, as PNG.
func (a *Agent) PNG(src string, p int) ([]byte, error) {
	return a.png(src, nil, p)
}

// png renders page p of a template as PNG with the form's rows.
func (a *Agent) png(src string, form []render.Row, p int) ([]byte, error) {
	img, _, err := a.pageImage(src, form, p, previewDPI)
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
	res, err := layOut(src, nil)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := render.WritePDF(&b, res, a.cfg.Font); err != nil {
		return nil, fmt.Errorf("writing the PDF: %w", err)
	}
	return b.Bytes(), nil
}

// pageError is asking for a page a report does not have.
type pageError struct {
	// Pages is how many pages the report has; Page the one asked for,
	// from 1.
	Pages, Page int
}

// Error says how many pages there are.
func (e *pageError) Error() string {
	return fmt.Sprintf("the report has %d pages, not page %d", e.Pages, e.Page)
}
