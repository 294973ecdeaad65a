package layout

import (
	"archive/zip"
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/xuri/excelize/v2"
)

// Limits on what a workbook may hold before it is read. A form is small:
// Excel's own files for a page of cells unzip to well under a megabyte.
const (
	// maxUnzip is how much all of a workbook's parts may unzip to.
	maxUnzip = 16 << 20
	// maxParts is how many files its zip may hold.
	maxParts = 1000
	// maxSmallPart is how large the workbook, its relationships, content
	// types and styles may each be; a larger style sheet is left out (the
	// cells are read without their formats).
	maxSmallPart = 1 << 20
	// maxMerges and maxColDefs are how many merged ranges and column
	// definitions of a sheet are read.
	maxMerges  = 1000
	maxColDefs = 256
)

// ErrWorkbookTooLarge is returned for a workbook that unzips to more than
// a form needs.
var ErrWorkbookTooLarge = errors.New("the workbook is too large")

// trimWorkbook returns the parts of the XLSX workbook data that reading a
// layout needs, each cut to the caps before any of it is parsed into
// cells: the rows of each sheet up to MaxSheetRows, their cells up to
// MaxSheetCols (a cell past the last column, or numbered for another
// row, is dropped, so nothing is padded to it), the first merged ranges
// and column widths, and only the shared strings the kept cells use. The
// sheets are read as a stream of XML tokens and copied byte for byte
// where kept, so what excelize then reads is bounded by the caps whatever
// the upload held. Drawings, themes and the like are left out.
func trimWorkbook(data []byte) ([]byte, error) {
	z, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("the file is not a readable zip archive: %w", err)
	}
	if len(z.File) > maxParts {
		return nil, fmt.Errorf("%w: it holds %d files, at most %d", ErrWorkbookTooLarge, len(z.File), maxParts)
	}
	var declared uint64
	for _, f := range z.File {
		declared += min(f.UncompressedSize64, maxUnzip+1)
	}
	tooLarge := fmt.Errorf("%w: it unzips to more than %d MiB, a form needs far less", ErrWorkbookTooLarge, maxUnzip>>20)
	if declared > maxUnzip {
		return nil, tooLarge
	}
	type part struct {
		name  string
		data  []byte
		edits []edit
	}
	var parts []part
	sst := -1
	refs := map[int]bool{}
	used := int64(0)
	for _, f := range z.File {
		if f.FileInfo().IsDir() {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("reading %s in the workbook: %w", f.Name, err)
		}
		b, err := io.ReadAll(io.LimitReader(rc, maxUnzip-used+1))
		rc.Close()
		if used += int64(len(b)); used > maxUnzip {
			return nil, tooLarge
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s in the workbook: %w", f.Name, err)
		}
		name := strings.ReplaceAll(f.Name, "\\", "/")
		p := part{name: name, data: b}
		switch root(b) {
		case "worksheet":
			if p.edits, err = trimSheet(b, refs); err != nil {
				return nil, fmt.Errorf("reading sheet %s: %w", path.Base(name), err)
			}
		case "sst":
			if !strings.EqualFold(name, "xl/sharedStrings.xml") {
				continue
			}
		case "Types", "Relationships", "workbook":
			if len(b) > maxSmallPart {
				return nil, fmt.Errorf("%w: its %s is larger than %d MiB", ErrWorkbookTooLarge, path.Base(name), maxSmallPart>>20)
			}
		case "styleSheet":
			if len(b) > maxSmallPart {
				continue
			}
		default:
			continue
		}
		if root(b) == "sst" {
			sst = len(parts)
		}
		parts = append(parts, p)
	}
	// The shared strings the kept cells use, renumbered in order.
	renumber := map[int]int{}
	if sst >= 0 {
		var err error
		if parts[sst].edits, renumber, err = trimStrings(parts[sst].data, refs); err != nil {
			return nil, fmt.Errorf("reading the workbook's shared strings: %w", err)
		}
	}
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	for _, p := range parts {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: p.name, Method: zip.Store})
		if err != nil {
			return nil, fmt.Errorf("copying the workbook: %w", err)
		}
		if _, err := w.Write(apply(p.data, p.edits, renumber)); err != nil {
			return nil, fmt.Errorf("copying the workbook: %w", err)
		}
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("copying the workbook: %w", err)
	}
	return out.Bytes(), nil
}

// edit replaces the bytes from..to of a part: with nothing when sst is
// -1, else with the new number of shared string sst.
type edit struct {
	from, to int64
	sst      int
}

// apply makes the edits to data, in order.
func apply(data []byte, edits []edit, renumber map[int]int) []byte {
	if len(edits) == 0 {
		return data
	}
	out := make([]byte, 0, len(data))
	last := int64(0)
	for _, e := range edits {
		out = append(out, data[last:e.from]...)
		switch n, ok := renumber[e.sst]; {
		case e.sst < 0:
		case ok:
			out = strconv.AppendInt(out, int64(n), 10)
		default:
			out = append(out, data[e.from:e.to]...)
		}
		last = e.to
	}
	return append(out, data[last:]...)
}

// root is the local name of the XML document's root element, "" when
// data is not XML.
func root(data []byte) string {
	d := newDecoder(data)
	for {
		tok, err := d.Token()
		if err != nil {
			return ""
		}
		if s, ok := tok.(xml.StartElement); ok {
			return s.Name.Local
		}
	}
}

func newDecoder(data []byte) *xml.Decoder {
	d := xml.NewDecoder(bytes.NewReader(data))
	// Bytes are taken as they are, so that offsets are offsets in data.
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	return d
}

// trimmer cuts elements out of one XML part as it reads it.
type trimmer struct {
	d     *xml.Decoder
	edits []edit
}

// drop skips the rest of the element whose start tag began at from and
// records its bytes as cut.
func (t *trimmer) drop(from int64) error {
	if err := t.d.Skip(); err != nil {
		return err
	}
	to := t.d.InputOffset()
	if n := len(t.edits); n > 0 && t.edits[n-1].sst < 0 && t.edits[n-1].to == from {
		t.edits[n-1].to = to
		return nil
	}
	t.edits = append(t.edits, edit{from: from, to: to, sst: -1})
	return nil
}

// children calls f for each child element of the element just started,
// with the offset its start tag began at, until that element ends.
// Text between them is kept; f consumes the child (or drops it).
func (t *trimmer) children(f func(from int64, s xml.StartElement) error) error {
	for {
		from := t.d.InputOffset()
		tok, err := t.d.Token()
		if err != nil {
			return err
		}
		switch s := tok.(type) {
		case xml.StartElement:
			if err := f(from, s); err != nil {
				return err
			}
		case xml.EndElement:
			return nil
		}
	}
}

func attr(s xml.StartElement, name string) (string, bool) {
	for _, a := range s.Attr {
		if a.Name.Local == name {
			return a.Value, true
		}
	}
	return "", false
}

// trimSheet reads a worksheet's XML and returns the edits that cut it to
// the caps: only its sheetFormatPr, cols, sheetData and mergeCells are
// kept, each within the caps. The shared strings its kept cells use are
// added to refs.
func trimSheet(data []byte, refs map[int]bool) ([]edit, error) {
	t := &trimmer{d: newDecoder(data)}
	for {
		tok, err := t.d.Token()
		if err == io.EOF {
			return nil, errors.New("it has no worksheet element")
		}
		if err != nil {
			return nil, fmt.Errorf("it is not well-formed XML: %w", err)
		}
		if _, ok := tok.(xml.StartElement); ok {
			break
		}
	}
	err := t.children(func(from int64, s xml.StartElement) error {
		switch s.Name.Local {
		case "sheetFormatPr":
			return t.d.Skip()
		case "sheetData":
			return t.rows(refs)
		case "cols":
			kept := 0
			return t.children(func(from int64, s xml.StartElement) error {
				lo, _ := attr(s, "min")
				if n, err := strconv.Atoi(lo); s.Name.Local != "col" || err != nil || n > MaxSheetCols || kept >= maxColDefs {
					return t.drop(from)
				}
				kept++
				return t.d.Skip()
			})
		case "mergeCells":
			kept, area := 0, 0
			return t.children(func(from int64, s xml.StartElement) error {
				ref, _ := attr(s, "ref")
				first, last, ok := strings.Cut(ref, ":")
				c0, r0, err0 := excelize.CellNameToCoordinates(first)
				c1, r1, err1 := excelize.CellNameToCoordinates(last)
				if !ok || s.Name.Local != "mergeCell" || err0 != nil || err1 != nil || c1 < c0 || r1 < r0 ||
					c0 > MaxSheetCols || r0 > MaxSheetRows || kept >= maxMerges {
					return t.drop(from)
				}
				a := (min(c1, MaxSheetCols) - c0 + 1) * (min(r1, MaxSheetRows) - r0 + 1)
				if area+a > MaxSheetRows*MaxSheetCols {
					return t.drop(from)
				}
				kept, area = kept+1, area+a
				return t.d.Skip()
			})
		}
		return t.drop(from)
	})
	if err != nil {
		return nil, fmt.Errorf("it is not well-formed XML: %w", err)
	}
	return t.edits, nil
}

// rows trims the rows of a sheetData element: a row is kept when its
// number follows the last kept row's and is at most MaxSheetRows.
func (t *trimmer) rows(refs map[int]bool) error {
	last := 0
	return t.children(func(from int64, s xml.StartElement) error {
		n := last + 1
		if v, ok := attr(s, "r"); ok {
			var err error
			if n, err = strconv.Atoi(v); err != nil {
				n = -1
			}
		}
		if s.Name.Local != "row" || n <= last || n > MaxSheetRows {
			return t.drop(from)
		}
		last = n
		return t.cells(n, refs)
	})
}

// cells trims the cells of row n: a cell is kept when its column follows
// the last kept cell's and is at most MaxSheetCols, and its name, if it
// has one, is of this row.
func (t *trimmer) cells(row int, refs map[int]bool) error {
	last := 0
	return t.children(func(from int64, s xml.StartElement) error {
		col := last + 1
		if ref, ok := attr(s, "r"); ok {
			c, r, err := excelize.CellNameToCoordinates(ref)
			if err != nil || r != row {
				c = -1
			}
			col = c
		}
		if s.Name.Local != "c" || col <= last || col > MaxSheetCols {
			return t.drop(from)
		}
		last = col
		typ, _ := attr(s, "t")
		return t.value(typ == "s", refs)
	})
}

// value reads the rest of a cell; for a shared string (shared is set) it
// records the edit that renumbers its <v>.
func (t *trimmer) value(shared bool, refs map[int]bool) error {
	return t.children(func(from int64, s xml.StartElement) error {
		if !shared || s.Name.Local != "v" {
			return t.d.Skip()
		}
		at := t.d.InputOffset()
		tok, err := t.d.Token()
		if err != nil {
			return err
		}
		text, ok := tok.(xml.CharData)
		if !ok {
			if _, end := tok.(xml.EndElement); end {
				return nil
			}
			return t.d.Skip()
		}
		if n, err := strconv.Atoi(strings.TrimSpace(string(text))); err == nil && n >= 0 {
			refs[n] = true
			t.edits = append(t.edits, edit{from: at, to: t.d.InputOffset(), sst: n})
		}
		return t.d.Skip()
	})
}

// trimStrings cuts the shared strings no kept cell uses out of the sst
// part, and says what each kept one's number becomes.
func trimStrings(data []byte, refs map[int]bool) ([]edit, map[int]int, error) {
	t := &trimmer{d: newDecoder(data)}
	for {
		tok, err := t.d.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("it is not well-formed XML: %w", err)
		}
		if _, ok := tok.(xml.StartElement); ok {
			break
		}
	}
	var kept []int
	i := -1
	err := t.children(func(from int64, s xml.StartElement) error {
		if s.Name.Local != "si" {
			return t.drop(from)
		}
		i++
		if !refs[i] {
			return t.drop(from)
		}
		kept = append(kept, i)
		return t.d.Skip()
	})
	if err != nil {
		return nil, nil, fmt.Errorf("it is not well-formed XML: %w", err)
	}
	renumber := make(map[int]int, len(kept))
	for n, old := range kept {
		renumber[old] = n
	}
	return t.edits, renumber, nil
}
