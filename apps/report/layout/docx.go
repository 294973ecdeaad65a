package layout

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// KindDOCX is a Word document (DOCX), as Detect names it.
const KindDOCX = "docx"

// Limits on a document: how much of its body is read.
const (
	// maxDocument is how large the document's body (word/document.xml)
	// may unzip to.
	maxDocument = 8 << 20
	// maxDocRows is how many paragraphs and table rows are read.
	maxDocRows = 1000
	// maxDocCols is how many cells of a table row are read.
	maxDocCols = 64
)

// ErrDocumentTooLarge is returned for a DOCX document whose body unzips to
// more than a form needs.
var ErrDocumentTooLarge = errors.New("the document is too large")

// A DOCX page is laid out at 96 pixels to the inch: a twip is a
// twentieth of a point, 15 twips a pixel.
const twipsPerPixel = 15

// FromDOCX reads the layout of a Word document (DOCX) from its body, with
// no OCR: each paragraph is a row (its tab-separated parts cells across
// the page, a centred paragraph centred), each table row a row of cells
// as wide as the table says, with the table's grid as rules. Only the
// document's body is unzipped, and no more than maxDocument of it; the
// first maxDocRows paragraphs and rows are read.
func FromDOCX(ctx context.Context, data []byte, opts Options) (*Layout, error) {
	if Detect(data) != KindDOCX {
		return nil, fmt.Errorf("reading layout: %w", ErrUnknownFormat)
	}
	body, err := documentBody(data)
	if err != nil {
		return nil, fmt.Errorf("reading document: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("reading document: %w", err)
	}
	d := &docReader{width: 11906 - 2*1440}
	if err := d.read(body); err != nil {
		return nil, fmt.Errorf("reading document: %w", err)
	}
	if len(d.cells) == 0 {
		return nil, fmt.Errorf("reading document: it has no text")
	}
	l := &Layout{Source: KindDOCX, Width: d.width / twipsPerPixel, Height: d.y, DPI: 96, Cells: d.cells}
	l.analyse()
	l.Rules = d.rules
	return l, nil
}

// documentBody unzips word/document.xml, refusing an archive with too
// many files or a body past maxDocument whatever its header says.
func documentBody(data []byte) ([]byte, error) {
	z, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("the file is not a readable zip archive: %w", err)
	}
	if len(z.File) > maxParts {
		return nil, fmt.Errorf("%w: it holds %d files, at most %d", ErrDocumentTooLarge, len(z.File), maxParts)
	}
	for _, f := range z.File {
		if f.Name != "word/document.xml" {
			continue
		}
		if f.UncompressedSize64 > maxDocument {
			return nil, fmt.Errorf("%w: its text unzips to more than %d MiB, a form needs far less", ErrDocumentTooLarge, maxDocument>>20)
		}
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("reading the document's text: %w", err)
		}
		defer rc.Close()
		b, err := io.ReadAll(io.LimitReader(rc, maxDocument+1))
		if err != nil {
			return nil, fmt.Errorf("reading the document's text: %w", err)
		}
		if len(b) > maxDocument {
			return nil, fmt.Errorf("%w: its text unzips to more than %d MiB, a form needs far less", ErrDocumentTooLarge, maxDocument>>20)
		}
		return b, nil
	}
	return nil, errors.New("it has no document text (word/document.xml)")
}

// CheckDOCX refuses a DOCX document whose body cannot be unzipped within
// the limits, before it is stored: ErrDocumentTooLarge for one too large.
func CheckDOCX(data []byte) error {
	_, err := documentBody(data)
	return err
}

// docReader lays a document's body out top to bottom.
type docReader struct {
	width int // the text's width in twips
	y     int // the next row's top, in pixels
	rows  int
	cells []Cell
	rules []Box
}

// para is a paragraph being read.
type para struct {
	text   strings.Builder
	centre bool
	bold   bool
	size   int // half-points, 0 for the default
}

func (d *docReader) read(body []byte) error {
	dec := xml.NewDecoder(bytes.NewReader(body))
	dec.Strict = true
	var p *para
	var row [][2]any // a table row's cells: text, width in twips
	var cellText *strings.Builder
	var cellW int
	var tableTop, tableX int
	inTable := 0
	for d.rows < maxDocRows {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("its text is not well-formed XML: %w", err)
		}
		switch t := tok.(type) {
		case xml.Directive:
			return errors.New("its text declares a DOCTYPE, which a document does not need")
		case xml.StartElement:
			switch t.Name.Local {
			case "sectPr":
				// The page's size and margins come last; the width before
				// them is what the rows were laid out in.
			case "pgSz":
				if w, err := strconv.Atoi(docAttr(t, "w")); err == nil && w > 0 && w < 100000 {
					d.width = max(w-2*1440, 1440)
				}
			case "tbl":
				inTable++
				if inTable == 1 {
					tableTop, tableX = d.y, 0
				}
			case "tr":
				row = row[:0]
			case "tc":
				cellText, cellW = &strings.Builder{}, 0
			case "tcW":
				if w, err := strconv.Atoi(docAttr(t, "w")); err == nil && w > 0 && w < 100000 {
					cellW = w
				}
			case "p":
				if cellText == nil {
					p = &para{}
				} else if cellText.Len() > 0 {
					cellText.WriteByte(' ')
				}
			case "jc":
				if p != nil && docAttr(t, "val") == "center" {
					p.centre = true
				}
			case "b":
				if p != nil && docAttr(t, "val") != "0" && docAttr(t, "val") != "false" {
					p.bold = true
				}
			case "sz":
				if n, err := strconv.Atoi(docAttr(t, "val")); p != nil && err == nil && n > 0 && n < 400 {
					p.size = max(p.size, n)
				}
			case "tab":
				if p != nil && cellText == nil {
					p.text.WriteByte('\t')
				}
			case "t":
				var s string
				if err := dec.DecodeElement(&s, &t); err != nil {
					return fmt.Errorf("its text is not well-formed XML: %w", err)
				}
				if cellText != nil {
					cellText.WriteString(s)
				} else if p != nil && p.text.Len() < 4096 {
					p.text.WriteString(s)
				}
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "p":
				if p != nil && cellText == nil {
					d.paragraph(p)
					p = nil
				}
			case "tc":
				if cellText != nil && len(row) < maxDocCols {
					row = append(row, [2]any{strings.TrimSpace(cellText.String()), cellW})
				}
				cellText = nil
			case "tr":
				d.tableRow(row, &tableX)
			case "tbl":
				inTable--
				if inTable == 0 && tableX > 0 {
					// The table's outer rules and its grid.
					d.rules = append(d.rules, Box{X: 0, Y: tableTop, W: tableX, H: 1}, Box{X: 0, Y: d.y, W: tableX, H: 1})
					d.y += 8
				}
			}
		}
	}
	return nil
}

// paragraph lays out a paragraph as a row: its tab-separated parts are
// cells spread across the page, a centred paragraph's text is centred.
func (d *docReader) paragraph(p *para) {
	size := 21 // 10.5 pt, Word's default
	if p.size > 0 {
		size = p.size
	}
	px := size * 96 / 144 // the font's size in pixels
	h := px * 3 / 2
	var parts []string
	for _, s := range strings.Split(p.text.String(), "\t") {
		// Underscores are a line to fill in, drawn as text.
		if s = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(s), "_＿")); s != "" {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		d.y += h
		return
	}
	d.rows++
	width := d.width / twipsPerPixel
	for i, s := range parts {
		w := textWidth(s, px)
		x := i * width / len(parts)
		if p.centre && len(parts) == 1 {
			x = max((width-w)/2, 0)
		}
		d.cells = append(d.cells, Cell{Text: s, Box: Box{X: x, Y: d.y, W: min(w, width-x), H: h}, Confidence: 100, Bold: p.bold, Col: -1})
	}
	d.y += h + px/2
}

// tableRow lays out a table row: its cells side by side, as wide as the
// table says (the page's width shared out when it does not), with rules
// between them.
func (d *docReader) tableRow(row [][2]any, right *int) {
	if len(row) == 0 {
		return
	}
	d.rows++
	h := 14 * 3 / 2 * 2
	x := 0
	for _, c := range row {
		w := c[1].(int) / twipsPerPixel
		if w == 0 {
			w = d.width / twipsPerPixel / len(row)
		}
		if text := c[0].(string); text != "" {
			d.cells = append(d.cells, Cell{Text: text, Box: Box{X: x + 4, Y: d.y + 4, W: max(w-8, 1), H: h - 8}, Confidence: 100, Col: -1})
		}
		d.rules = append(d.rules, Box{X: x, Y: d.y, W: 1, H: h})
		x += w
	}
	d.rules = append(d.rules, Box{X: x, Y: d.y, W: 1, H: h}, Box{X: 0, Y: d.y, W: x, H: 1})
	*right = max(*right, x)
	d.y += h
}

// textWidth is about how wide text is at a font size of px pixels: a
// Chinese character is square, other characters half as wide.
func textWidth(s string, px int) int {
	w := 0
	for _, r := range s {
		if r < 0x2e80 {
			w += px / 2
		} else {
			w += px
		}
	}
	return max(w, px)
}

// docAttr is an attribute's value by its local name (w:val, w:w).
func docAttr(s xml.StartElement, name string) string {
	for _, a := range s.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}
