package report

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/loomkit/loom/apps/report/layout"
	"github.com/loomkit/loom/apps/report/skeleton"
)

// detectLayoutKind tells a picture, a PDF, an XLSX workbook or a DOCX
// document by content.
func detectLayoutKind(data []byte) string {
	switch layout.Detect(data) {
	case layout.KindImage:
		return kindImage
	case layout.KindPDF:
		return kindPDF
	case layout.KindXLSX:
		return kindXLSX
	case layout.KindDOCX:
		return KindDOCX
	}
	return ""
}

// Toolkit reads forms with the toolkit: tesseract OCR for pictures and PDF
// pages (a PDF's text layer when it has one), the cells of XLSX workbooks,
// the paragraphs and tables of DOCX documents, and the deterministic
// skeleton.
type Toolkit struct {
	// Options tune the reading (see layout.Options).
	Options layout.Options
}

// reading holds a place for each form being read: at most two at once,
// so that uploads read side by side cannot add up past the server's
// memory (one picture may take about 240 MB while it is read, a
// workbook or a PDF page less), whatever the number of threads.
var reading = make(chan struct{}, 2)

// Read implements Layouts. It waits for one of the places of reading,
// or for ctx to end.
func (t Toolkit) Read(ctx context.Context, kind string, data []byte) (*Layout, error) {
	select {
	case reading <- struct{}{}:
		defer func() { <-reading }()
	case <-ctx.Done():
		return nil, fmt.Errorf("reading a layout: %w", ctx.Err())
	}
	var l *layout.Layout
	var err error
	switch kind {
	case kindImage:
		l, err = layout.FromImage(ctx, data, t.Options)
	case kindPDF:
		l, err = layout.FromPDF(ctx, data, t.Options)
	case kindXLSX:
		l, err = layout.FromXLSX(ctx, data, t.Options)
	case KindDOCX:
		l, err = layout.FromDOCX(ctx, data, t.Options)
	default:
		return nil, fmt.Errorf("reading a layout: %q is not a form", kind)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the layout of the %s: %w", kind, err)
	}
	schema, err := json.Marshal(l)
	if err != nil {
		return nil, fmt.Errorf("reading a layout: %w", err)
	}
	out := &Layout{Kind: kind, TotalRows: l.TotalRows, Schema: schema}
	sk, err := skeleton.Build(l)
	if err != nil {
		return nil, fmt.Errorf("drafting a template from the layout: %w", err)
	}
	out.Skeleton = string(sk.JRXML)
	out.Rows = sk.Rows
	for _, f := range sk.Fields {
		out.Labels = append(out.Labels, strings.TrimSpace(f.Label))
	}
	return out, nil
}
