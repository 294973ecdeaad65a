package layout

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/loomkit/loom/internal/leash"
)

// Languages are the tesseract languages a picture is read with.
const Languages = "chi_sim+eng"

// ErrNoTesseract is returned when the tesseract program is not installed.
var ErrNoTesseract = errors.New("tesseract is not installed (Debian packages tesseract-ocr and tesseract-ocr-chi-sim)")

// Word is one word tesseract read, with its box and confidence.
type Word struct {
	Text       string
	Box        Box
	Confidence float64
	// Block, Par and Line are tesseract's numbers for where it found the
	// word.
	Block, Par, Line int
}

// tesseractLimits bound one run of tesseract: a page of a form takes a
// few seconds and a few hundred MB.
var tesseractLimits = leash.Limits{Wall: time.Minute, Memory: 1 << 30, Output: 16 << 20}

// OCR runs tesseract on the picture img (PNG, JPEG, TIFF…) with
// Chinese and English and returns the page's size and its words, read
// from tesseract's TSV output. tesseract runs on a leash (time, CPU,
// memory, one thread); what it prints on failure goes to the log, not
// into the error.
func OCR(ctx context.Context, img []byte, psm int) (width, height int, words []Word, err error) {
	if _, err := exec.LookPath("tesseract"); err != nil {
		return 0, 0, nil, ErrNoTesseract
	}
	if psm <= 0 {
		psm = Options{}.psm()
	}
	var env []string
	if dir, ok := os.LookupEnv("TESSDATA_PREFIX"); ok {
		env = append(env, "TESSDATA_PREFIX="+dir)
	}
	res, err := leash.Run(ctx, tesseractLimits, leash.Cmd{
		Name:  "tesseract",
		Args:  []string{"stdin", "stdout", "-l", Languages, "--psm", strconv.Itoa(psm), "tsv"},
		Stdin: bytes.NewReader(img),
		Env:   env,
	})
	var stopped *leash.Error
	switch {
	case errors.As(err, &stopped):
		slog.WarnContext(ctx, "tesseract was stopped", "reason", stopped.Reason)
		return 0, 0, nil, fmt.Errorf("%w: it took too long or too much memory to read", ErrOCR)
	case err != nil && ctx.Err() != nil:
		return 0, 0, nil, fmt.Errorf("running tesseract: %w", ctx.Err())
	case errors.Is(err, exec.ErrNotFound):
		return 0, 0, nil, ErrNoTesseract
	case err != nil:
		slog.WarnContext(ctx, "tesseract could not run", "err", err)
		return 0, 0, nil, ErrOCR
	case res.ExitCode != 0:
		slog.WarnContext(ctx, "tesseract failed", "exit", res.ExitCode, "stderr", string(res.Stderr[:min(len(res.Stderr), 2000)]))
		return 0, 0, nil, ErrOCR
	}
	return parseTSV(res.Stdout)
}

// ErrOCR is returned when tesseract could not read a picture.
var ErrOCR = errors.New("the picture could not be read by OCR")

// parseTSV reads tesseract's TSV: level, page_num, block_num, par_num,
// line_num, word_num, left, top, width, height, conf, text.
func parseTSV(tsv []byte) (width, height int, words []Word, err error) {
	lines := strings.Split(string(tsv), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "level\t") {
		return 0, 0, nil, fmt.Errorf("reading tesseract's output: no TSV header")
	}
	for _, ln := range lines[1:] {
		f := strings.Split(strings.TrimRight(ln, "\r"), "\t")
		if len(f) < 12 {
			continue
		}
		n := make([]int, 10)
		for i := range n {
			n[i], _ = strconv.Atoi(f[i])
		}
		box := Box{X: n[6], Y: n[7], W: n[8], H: n[9]}
		switch n[0] {
		case 1:
			width, height = max(width, box.Right()), max(height, box.Bottom())
		case 5:
			text := strings.TrimSpace(f[11])
			conf, _ := strconv.ParseFloat(f[10], 64)
			if text == "" || !utf8.ValidString(text) {
				continue
			}
			words = append(words, Word{Text: text, Box: box, Confidence: conf, Block: n[2], Par: n[3], Line: n[4]})
		}
	}
	if width == 0 || height == 0 {
		return 0, 0, nil, fmt.Errorf("reading tesseract's output: no page size")
	}
	return width, height, words, nil
}

// FromImage reads the layout of a picture with OCR.
func FromImage(ctx context.Context, img []byte, opts Options) (*Layout, error) {
	if Detect(img) != KindImage {
		return nil, fmt.Errorf("reading layout: %w", ErrUnknownFormat)
	}
	if err := CheckPicture(img); err != nil {
		return nil, fmt.Errorf("reading layout: %w", err)
	}
	w, h, words, rules, err := readPicture(ctx, img, opts.psm())
	if err != nil {
		return nil, fmt.Errorf("reading layout: %w", err)
	}
	l := FromWords(w, h, words, opts.minConfidence())
	l.Source, l.DPI, l.Rules = KindImage, math.Round(pngDPI(img)*10)/10, rules
	return l, nil
}

// FromTSV builds the layout of a page from tesseract's TSV output, as
// FromWords does from its words.
func FromTSV(tsv []byte, minConfidence float64) (*Layout, error) {
	w, h, words, err := parseTSV(tsv)
	if err != nil {
		return nil, err
	}
	return FromWords(w, h, words, minConfidence), nil
}

// FromWords builds the layout of a page w×h pixels from the words OCR
// read: words below minConfidence and marks that are only table rules are
// dropped, neighbouring words of a line join into cells, cells into rows;
// columns, label/value pairs and tables are found among them.
func FromWords(w, h int, words []Word, minConfidence float64) *Layout {
	// Specks: doubtful words much smaller than the page's usual word.
	hs := make([]int, 0, len(words))
	for _, wd := range words {
		hs = append(hs, wd.Box.H)
	}
	slices.Sort(hs)
	minH := 0
	if len(hs) > 0 {
		minH = hs[len(hs)/2] * 7 / 10
	}
	kept := make([]Word, 0, len(words))
	for _, wd := range words {
		if colon(wd.Text) {
			// A colon read as a word of its own ends the label before it.
			wd.Confidence = max(wd.Confidence, minConfidence)
		} else if wd.Confidence < minConfidence || isRule(wd.Text) || wd.Confidence < 60 && wd.Box.H < minH || mark(wd.Text) {
			continue
		}
		kept = append(kept, wd)
	}
	l := &Layout{Width: w, Height: h, Rules: []Box{}}
	l.Cells = joinWords(kept)
	l.analyse()
	return l
}

// colon is a word that is only a colon, full- or half-width (or the
// comma OCR may read one as).
func colon(s string) bool {
	return s == ":" || s == "：" || s == "，" || s == ","
}

// mark is a word with no letter, digit or symbol a form writes (a quote,
// a dot): a speck OCR read as punctuation.
func mark(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool {
		return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsSymbol(r) || strings.ContainsRune("%#&@*", r)
	})
}

// isRule is a "word" made of the strokes OCR reads table borders as.
func isRule(s string) bool {
	for _, r := range s {
		if !strings.ContainsRune("|_—-–=~[]{}()!/\\¦│┃丨一'\"`.,:;·•、。，", r) {
			return false
		}
	}
	return true
}

// joinWords joins the words of each tesseract line that follow each other
// closely (a gap less than the taller word's height) into cells.
func joinWords(words []Word) []Cell {
	type key struct{ b, p, l int }
	lines := map[key][]Word{}
	var order []key
	for _, wd := range words {
		k := key{wd.Block, wd.Par, wd.Line}
		if _, ok := lines[k]; !ok {
			order = append(order, k)
		}
		lines[k] = append(lines[k], wd)
	}
	var cells []Cell
	for _, k := range order {
		ws := lines[k]
		slices.SortFunc(ws, func(a, b Word) int { return a.Box.X - b.Box.X })
		var cur *Cell
		var last Box
		for _, wd := range ws {
			if colon(wd.Text) {
				// A colon of its own ends the cell before it, as a colon
				// (a comma here is one misread); one with no cell before
				// it on its line is a speck.
				if cur != nil && wd.Box.X-last.Right() < 3*max(last.H, wd.Box.H) {
					ra, _ := utf8.DecodeLastRuneInString(cur.Text)
					if unicode.Is(unicode.Han, ra) {
						cur.Text += "："
					} else {
						cur.Text += ":"
					}
					cur.Box = union(cur.Box, wd.Box)
					last = wd.Box
				}
				continue
			}
			// A line read on its own (Block < 0: a title OCR missed) is
			// one phrase unless its words are far apart.
			reach := max(last.H, wd.Box.H)
			if k.b < 0 {
				reach *= 3
			}
			if gap := wd.Box.X - last.Right(); cur != nil && gap < reach {
				last = wd.Box
				cur.Text = joinText(cur.Text, wd.Text, gap*4 > max(last.H, wd.Box.H))
				cur.Box = union(cur.Box, wd.Box)
				cur.Confidence = min(cur.Confidence, wd.Confidence)
				continue
			}
			cells = append(cells, Cell{Text: wd.Text, Box: wd.Box, Confidence: wd.Confidence, Col: -1})
			cur, last = &cells[len(cells)-1], wd.Box
		}
	}
	return cells
}

// joinText joins two words: with a space between words of alphabetic
// scripts, and between Chinese and other text when there was a visible
// gap; Chinese characters close together join without one.
func joinText(a, b string, gap bool) string {
	ra, _ := utf8.DecodeLastRuneInString(a)
	rb, _ := utf8.DecodeRuneInString(b)
	han := unicode.Is(unicode.Han, ra) || isFullwidthPunct(ra)
	bhan := unicode.Is(unicode.Han, rb) || isFullwidthPunct(rb)
	if han && bhan || (han || bhan) && !gap {
		return a + b
	}
	return a + " " + b
}

func isFullwidthPunct(r rune) bool {
	return r >= 0x3000 && r <= 0x303f || r >= 0xff00 && r <= 0xffef
}

func union(a, b Box) Box {
	x, y := min(a.X, b.X), min(a.Y, b.Y)
	return Box{X: x, Y: y, W: max(a.Right(), b.Right()) - x, H: max(a.Bottom(), b.Bottom()) - y}
}

// pngDPI is the resolution a PNG's pHYs chunk gives, 0 without one.
func pngDPI(img []byte) float64 {
	if !bytes.HasPrefix(img, []byte("\x89PNG\r\n\x1a\n")) {
		return 0
	}
	for p := 8; p+12 <= len(img); {
		n := int(uint32(img[p])<<24 | uint32(img[p+1])<<16 | uint32(img[p+2])<<8 | uint32(img[p+3]))
		typ := string(img[p+4 : p+8])
		if typ == "IDAT" || n < 0 || p+12+n > len(img) {
			return 0
		}
		if typ == "pHYs" && n == 9 && img[p+16] == 1 {
			ppm := uint32(img[p+8])<<24 | uint32(img[p+9])<<16 | uint32(img[p+10])<<8 | uint32(img[p+11])
			return float64(ppm) * 0.0254
		}
		p += 12 + n
	}
	return 0
}
