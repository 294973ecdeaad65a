package layout

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// PDFDPI is the resolution a PDF page is drawn at for OCR.
const PDFDPI = 150

// ErrNoPdftoppm is returned when the pdftoppm program is not installed.
var ErrNoPdftoppm = errors.New("pdftoppm is not installed (Debian package poppler-utils)")

// FromPDF reads the layout of a page of a PDF (page 1 unless opts.Page
// says otherwise): pdftoppm draws it at 150 dpi and OCR reads the picture.
func FromPDF(ctx context.Context, pdf []byte, opts Options) (*Layout, error) {
	if Detect(pdf) != KindPDF {
		return nil, fmt.Errorf("reading layout: %w", ErrUnknownFormat)
	}
	png, err := PDFPage(ctx, pdf, opts.page())
	if err != nil {
		return nil, fmt.Errorf("reading layout: %w", err)
	}
	if err := checkSize(png); err != nil {
		return nil, fmt.Errorf("reading layout of PDF page %d: %w", opts.page(), err)
	}
	clean, rules := withoutRules(png)
	w, h, words, err := OCR(ctx, clean, opts.psm())
	if err != nil {
		return nil, fmt.Errorf("reading layout of PDF page %d: %w", opts.page(), err)
	}
	l := FromWords(w, h, words, opts.minConfidence())
	l.Source, l.DPI, l.Rules = KindPDF, PDFDPI, rules
	return l, nil
}

// PDFPage draws page (from 1) of a PDF as a PNG at 150 dpi with pdftoppm.
func PDFPage(ctx context.Context, pdf []byte, page int) ([]byte, error) {
	bin, err := exec.LookPath("pdftoppm")
	if err != nil {
		return nil, ErrNoPdftoppm
	}
	p := strconv.Itoa(page)
	cmd := exec.CommandContext(ctx, bin, "-r", strconv.Itoa(PDFDPI), "-png", "-f", p, "-l", p, "-singlefile", "-")
	cmd.Stdin = bytes.NewReader(pdf)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("drawing PDF page %d: %w", page, ctx.Err())
		}
		return nil, fmt.Errorf("drawing PDF page %d: %w: %s", page, err, strings.TrimSpace(stderr.String()))
	}
	if out.Len() == 0 {
		return nil, fmt.Errorf("drawing PDF page %d: the PDF has no such page", page)
	}
	return out.Bytes(), nil
}
