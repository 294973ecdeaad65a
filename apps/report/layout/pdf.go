package layout

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"log/slog"
	"math"
	"os/exec"
	"regexp"
	"strconv"
	"time"

	"github.com/loomkit/loom/internal/leash"
)

// PDFDPI is the resolution a PDF page is drawn at for OCR.
const PDFDPI = 150

// MaxPDFPages is the most pages a PDF read for its layout may have.
const MaxPDFPages = 500

// maxPageSide is the longest side, in pixels at PDFDPI, pdftoppm is let
// draw whatever the PDF says its page is: a little more than A0's.
const maxPageSide = 7200

// Limits of the programs that read a PDF: pdfinfo reads its page sizes,
// pdftoppm draws a page.
var (
	pdfinfoLimits  = leash.Limits{Wall: 15 * time.Second, Memory: 512 << 20, Output: 1 << 20}
	pdftoppmLimits = leash.Limits{Wall: 30 * time.Second, Memory: 1 << 30, Output: 256 << 20}
)

// ErrNoPdftoppm is returned when the pdftoppm program is not installed.
var ErrNoPdftoppm = errors.New("pdftoppm is not installed (Debian package poppler-utils)")

// ErrBadPDF is returned for a PDF that could not be read or drawn; what
// the program said about it goes to the log, not into the error.
var ErrBadPDF = errors.New("the PDF could not be read")

// FromPDF reads the layout of a page of a PDF (page 1 unless opts.Page
// says otherwise): its text layer (pdftotext -bbox-layout) gives the text
// and where it is when it has one; otherwise pdftoppm draws it at 150 dpi
// and OCR reads the picture. The drawn page gives the rules either way.
func FromPDF(ctx context.Context, pdf []byte, opts Options) (*Layout, error) {
	if Detect(pdf) != KindPDF {
		return nil, fmt.Errorf("reading layout: %w", ErrUnknownFormat)
	}
	png, err := PDFPage(ctx, pdf, opts.page())
	if err != nil {
		return nil, fmt.Errorf("reading layout: %w", err)
	}
	if err := CheckPicture(png); err != nil {
		return nil, fmt.Errorf("reading layout of PDF page %d: %w", opts.page(), err)
	}
	var w, h int
	var words []Word
	var rules []Box
	if words = textLayer(ctx, pdf, opts.page()); words != nil {
		// The page's own text, exactly where it is; the drawn page gives
		// the rules.
		var g *image.Gray
		if g, rules = greyWithoutRules(png); g == nil {
			return nil, fmt.Errorf("reading layout of PDF page %d: %w", opts.page(), ErrBadPDF)
		}
		w, h = g.Rect.Dx(), g.Rect.Dy()
		fitInk(g, words)
	} else if w, h, words, rules, err = readPicture(ctx, png, opts.psm()); err != nil {
		return nil, fmt.Errorf("reading layout of PDF page %d: %w", opts.page(), err)
	}
	l := FromWords(w, h, words, opts.minConfidence())
	l.Source, l.DPI, l.Rules = KindPDF, PDFDPI, rules
	return l, nil
}

// PDFPage draws page (from 1) of a PDF as a PNG at 150 dpi with pdftoppm.
// The page's size is read first (with pdfinfo): a page that would be
// more than MaxPixels pixels is refused before it is drawn, and pdftoppm
// is given a crop no larger than A0 besides, so that what it draws is
// bounded whatever the PDF says. Both programs run on a leash (time,
// CPU, memory).
func PDFPage(ctx context.Context, pdf []byte, page int) ([]byte, error) {
	if _, err := exec.LookPath("pdftoppm"); err != nil {
		return nil, ErrNoPdftoppm
	}
	if err := checkPDFPage(ctx, pdf, page); err != nil {
		return nil, err
	}
	p, side := strconv.Itoa(page), strconv.Itoa(maxPageSide)
	res, err := leash.Run(ctx, pdftoppmLimits, leash.Cmd{
		Name:  "pdftoppm",
		Args:  []string{"-r", strconv.Itoa(PDFDPI), "-png", "-f", p, "-l", p, "-x", "0", "-y", "0", "-W", side, "-H", side, "-singlefile", "-"},
		Stdin: bytes.NewReader(pdf),
	})
	if err := programFailed(ctx, "pdftoppm", page, res, err); err != nil {
		return nil, fmt.Errorf("drawing PDF page %d: %w", page, err)
	}
	if len(res.Stdout) == 0 {
		return nil, fmt.Errorf("drawing PDF page %d: %w (page %d)", page, ErrBadPDF, page)
	}
	return res.Stdout, nil
}

var (
	pagesLine = regexp.MustCompile(`(?m)^Pages:\s+(\d+)`)
	boxLine   = regexp.MustCompile(`(?m)^Page\s+\d+\s+CropBox:\s+(-?[\d.]+)\s+(-?[\d.]+)\s+(-?[\d.]+)\s+(-?[\d.]+)`)
)

// checkPDFPage reads the PDF's page count and the page's crop box with
// pdfinfo and refuses a page it does not have or one too large to draw.
func checkPDFPage(ctx context.Context, pdf []byte, page int) error {
	p := strconv.Itoa(page)
	res, err := leash.Run(ctx, pdfinfoLimits, leash.Cmd{Name: "pdfinfo", Args: []string{"-f", p, "-l", p, "-box", "-"}, Stdin: bytes.NewReader(pdf)})
	if errors.Is(err, exec.ErrNotFound) {
		return ErrNoPdftoppm
	}
	if err == nil && res.ExitCode == 99 && bytes.Contains(res.Stderr, []byte("Wrong page range")) {
		return fmt.Errorf("the PDF has no page %d", page)
	}
	if err := programFailed(ctx, "pdfinfo", page, res, err); err != nil {
		return fmt.Errorf("reading the PDF's pages: %w", err)
	}
	m := pagesLine.FindSubmatch(res.Stdout)
	if m == nil {
		slog.WarnContext(ctx, "pdfinfo gave no page count", "page", page)
		return fmt.Errorf("reading the PDF's pages: %w (no pages)", ErrBadPDF)
	}
	pages, _ := strconv.Atoi(string(m[1]))
	switch {
	case pages > MaxPDFPages:
		return fmt.Errorf("the PDF has %d pages, at most %d", pages, MaxPDFPages)
	case page > pages:
		return fmt.Errorf("the PDF has no page %d (it has %d)", page, pages)
	}
	b := boxLine.FindSubmatch(res.Stdout)
	if b == nil {
		slog.WarnContext(ctx, "pdfinfo gave no crop box", "page", page)
		return fmt.Errorf("reading the size of PDF page %d: %w (page %d)", page, ErrBadPDF, page)
	}
	var f [4]float64
	for i := range f {
		f[i], _ = strconv.ParseFloat(string(b[i+1]), 64)
	}
	w, h := math.Abs(f[2]-f[0]), math.Abs(f[3]-f[1])
	if px := (w * PDFDPI / 72) * (h * PDFDPI / 72); px > MaxPixels || math.IsNaN(px) {
		return fmt.Errorf("PDF page %d is %w: %.0f×%.0f points, larger than A0 (2384×3370)", page, ErrTooLarge, w, h)
	}
	return nil
}

// programFailed turns how a program run on a PDF page ended into the
// error a client is shown: what went wrong in words, never what the
// program printed, which goes to the log.
func programFailed(ctx context.Context, program string, page int, res *leash.Result, err error) error {
	var stopped *leash.Error
	switch {
	case errors.As(err, &stopped):
		slog.WarnContext(ctx, "a program reading a PDF was stopped", "program", program, "page", page, "reason", stopped.Reason)
		return fmt.Errorf("%w (page %d): it took too long or too much memory to read", ErrBadPDF, page)
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, exec.ErrNotFound):
		return ErrNoPdftoppm
	case err != nil:
		slog.WarnContext(ctx, "a program reading a PDF could not run", "program", program, "err", err)
		return fmt.Errorf("%w (page %d)", ErrBadPDF, page)
	case res.ExitCode != 0:
		slog.WarnContext(ctx, "a program reading a PDF failed", "program", program, "page", page, "exit", res.ExitCode, "stderr", string(res.Stderr[:min(len(res.Stderr), 2000)]))
		return fmt.Errorf("%w (page %d)", ErrBadPDF, page)
	}
	return nil
}
