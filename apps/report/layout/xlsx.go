package layout

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/xuri/excelize/v2"
)

// Limits on a sheet: how many rows and columns of it are read. Rows and
// cells past them are cut out of the workbook before it is parsed.
const (
	MaxSheetRows = 1000
	MaxSheetCols = 200
)

// FromXLSX reads the layout of a sheet of an XLSX workbook (the active
// sheet unless opts.Sheet names one) from its cells: each cell with text,
// or merged range, is a cell of the layout with the box its columns'
// widths and rows' heights give, at 96 pixels to the inch. No OCR is
// involved.
func FromXLSX(ctx context.Context, data []byte, opts Options) (*Layout, error) {
	if Detect(data) != KindXLSX {
		return nil, fmt.Errorf("reading layout: %w", ErrUnknownFormat)
	}
	data, err := trimWorkbook(data)
	if err != nil {
		return nil, fmt.Errorf("reading workbook: %w", err)
	}
	// Everything is kept in memory (a part over UnzipXMLSizeLimit would go
	// to a temporary file): the trimmed workbook is small.
	f, err := excelize.OpenReader(bytes.NewReader(data), excelize.Options{UnzipSizeLimit: maxUnzip, UnzipXMLSizeLimit: maxUnzip})
	if err != nil {
		return nil, fmt.Errorf("reading workbook: %w", err)
	}
	defer f.Close()
	sheet := opts.Sheet
	if sheet == "" {
		sheet = f.GetSheetName(f.GetActiveSheetIndex())
	}
	if idx, err := f.GetSheetIndex(sheet); err != nil || idx < 0 {
		return nil, fmt.Errorf("reading workbook: no sheet %q (sheets: %s)", sheet, strings.Join(f.GetSheetList(), ", "))
	}
	grid, err := f.GetRows(sheet)
	if err != nil {
		return nil, fmt.Errorf("reading sheet %q: %w", sheet, err)
	}
	if len(grid) > MaxSheetRows {
		grid = grid[:MaxSheetRows]
	}
	merges, err := f.GetMergeCells(sheet)
	if err != nil {
		return nil, fmt.Errorf("reading sheet %q's merged cells: %w", sheet, err)
	}
	// Each merged range, by its top left cell; the other cells it covers.
	type rng struct{ c0, r0, c1, r1 int }
	merged := map[[2]int]rng{}
	covered := map[[2]int]bool{}
	for _, m := range merges {
		c0, r0, err1 := excelize.CellNameToCoordinates(m.GetStartAxis())
		c1, r1, err2 := excelize.CellNameToCoordinates(m.GetEndAxis())
		if err1 != nil || err2 != nil || c0 > MaxSheetCols || r0 > MaxSheetRows {
			continue
		}
		c1, r1 = min(c1, MaxSheetCols), min(r1, MaxSheetRows)
		merged[[2]int{c0, r0}] = rng{c0, r0, c1, r1}
		for r := r0; r <= r1; r++ {
			for c := c0; c <= c1; c++ {
				if r != r0 || c != c0 {
					covered[[2]int{c, r}] = true
				}
			}
		}
	}
	// The extent: the last row and column with text or a merged range.
	lastCol, lastRow := 0, 0
	for r, row := range grid {
		for c, v := range row {
			if c < MaxSheetCols && strings.TrimSpace(v) != "" {
				lastCol, lastRow = max(lastCol, c+1), max(lastRow, r+1)
			}
		}
	}
	for _, m := range merged {
		lastCol, lastRow = max(lastCol, m.c1), max(lastRow, m.r1)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("reading sheet %q: %w", sheet, err)
	}
	// Column edges and row edges in pixels.
	xs := make([]int, lastCol+1)
	for c := 1; c <= lastCol; c++ {
		name, _ := excelize.ColumnNumberToName(c)
		w, err := f.GetColWidth(sheet, name)
		if err != nil {
			return nil, fmt.Errorf("reading the width of column %s: %w", name, err)
		}
		xs[c] = xs[c-1] + colPixels(w)
	}
	ys := make([]int, lastRow+1)
	for r := 1; r <= lastRow; r++ {
		h, err := f.GetRowHeight(sheet, r)
		if err != nil {
			return nil, fmt.Errorf("reading the height of row %d: %w", r, err)
		}
		ys[r] = ys[r-1] + int(h*96/72+0.5)
	}
	l := &Layout{Source: KindXLSX, Width: xs[lastCol], Height: ys[lastRow], DPI: 96, Rules: []Box{}}
	for c := 1; c <= lastCol; c++ {
		l.Columns = append(l.Columns, Span{X: xs[c-1], W: xs[c] - xs[c-1]})
	}
	rowOf := map[int]int{} // sheet row → layout row
	for r := 1; r <= lastRow; r++ {
		for c := 1; c <= lastCol; c++ {
			if covered[[2]int{c, r}] {
				continue
			}
			text := ""
			if r <= len(grid) && c <= len(grid[r-1]) {
				text = strings.TrimSpace(grid[r-1][c-1])
			}
			if text == "" {
				continue
			}
			m, isMerged := merged[[2]int{c, r}]
			if !isMerged {
				m = rng{c, r, c, r}
			}
			ref, _ := excelize.CoordinatesToCellName(c, r)
			col := c - 1
			if isMerged {
				end, _ := excelize.CoordinatesToCellName(m.c1, m.r1)
				ref += ":" + end
				if m.c1 > m.c0 {
					col = -1
				}
			}
			if _, ok := rowOf[r]; !ok {
				rowOf[r] = len(l.Rows)
				l.Rows = append(l.Rows, Row{})
			}
			l.Cells = append(l.Cells, Cell{
				Text:       text,
				Box:        Box{X: xs[m.c0-1], Y: ys[m.r0-1], W: xs[m.c1] - xs[m.c0-1], H: ys[m.r1] - ys[m.r0-1]},
				Row:        rowOf[r],
				Col:        col,
				Confidence: 100,
				Bold:       bold(f, sheet, ref),
				Align:      align(f, sheet, ref),
				Ref:        ref,
			})
		}
	}
	l.Rules = borderRules(f, sheet, xs, ys, lastCol, lastRow)
	l.bound()
	l.finish()
	return l, nil
}

// borderRules are the cells' borders as rules, as a picture's would be
// read: each run of bordered cell edges along one grid line is one rule,
// one pixel thick (two for a medium or thick border). xs and ys are the
// columns' and rows' edges in pixels.
func borderRules(f *excelize.File, sheet string, xs, ys []int, lastCol, lastRow int) []Box {
	// vert[c][r]: a border on the grid line right of column c (0: left
	// of the first) in row r; horiz[r][c] below row r in column c.
	vert := make([][]int, lastCol+1)
	for c := range vert {
		vert[c] = make([]int, lastRow+1)
	}
	horiz := make([][]int, lastRow+1)
	for r := range horiz {
		horiz[r] = make([]int, lastCol+1)
	}
	styles := map[int]*excelize.Style{}
	for r := 1; r <= lastRow; r++ {
		for c := 1; c <= lastCol; c++ {
			ref, _ := excelize.CoordinatesToCellName(c, r)
			id, err := f.GetCellStyle(sheet, ref)
			if err != nil || id == 0 {
				continue
			}
			st, ok := styles[id]
			if !ok {
				st, _ = f.GetStyle(id)
				styles[id] = st
			}
			if st == nil {
				continue
			}
			for _, b := range st.Border {
				if b.Style <= 0 {
					continue
				}
				w := 1
				if b.Style == 2 || b.Style == 5 || b.Style == 8 || b.Style == 10 || b.Style == 12 || b.Style == 13 {
					w = 2 // medium, thick and the medium dashed kinds
				}
				switch b.Type {
				case "left":
					vert[c-1][r] = max(vert[c-1][r], w)
				case "right":
					vert[c][r] = max(vert[c][r], w)
				case "top":
					horiz[r-1][c] = max(horiz[r-1][c], w)
				case "bottom":
					horiz[r][c] = max(horiz[r][c], w)
				}
			}
		}
	}
	var rules []Box
	for c := 0; c <= lastCol; c++ {
		for r := 1; r <= lastRow; {
			if vert[c][r] == 0 {
				r++
				continue
			}
			r0, w := r, 0
			for ; r <= lastRow && vert[c][r] > 0; r++ {
				w = max(w, vert[c][r])
			}
			rules = append(rules, Box{X: max(0, xs[c]-w/2), Y: ys[r0-1], W: w, H: ys[r-1] - ys[r0-1]})
		}
	}
	for r := 0; r <= lastRow; r++ {
		for c := 1; c <= lastCol; {
			if horiz[r][c] == 0 {
				c++
				continue
			}
			c0, w := c, 0
			for ; c <= lastCol && horiz[r][c] > 0; c++ {
				w = max(w, horiz[r][c])
			}
			rules = append(rules, Box{X: xs[c0-1], Y: max(0, ys[r]-w/2), W: xs[c-1] - xs[c0-1], H: w})
		}
	}
	return rules
}

// colPixels converts a column width in characters, as a workbook stores
// it, to pixels the way Excel does (7 pixels to the digit, with padding).
func colPixels(w float64) int {
	return int((256*w + 18) / 256 * 7)
}

// bold says whether the cell at ref (or a range's first cell) is set in
// a bold font.
func bold(f *excelize.File, sheet, ref string) bool {
	ref, _, _ = strings.Cut(ref, ":")
	id, err := f.GetCellStyle(sheet, ref)
	if err != nil || id == 0 {
		return false
	}
	s, err := f.GetStyle(id)
	return err == nil && s != nil && s.Font != nil && s.Font.Bold
}

// align is the horizontal alignment of the cell at ref (or a range's
// first cell) as JasperReports names it: "Center" for a cell centred or
// centred across its selection, "Right", or "" for the rest.
func align(f *excelize.File, sheet, ref string) string {
	ref, _, _ = strings.Cut(ref, ":")
	id, err := f.GetCellStyle(sheet, ref)
	if err != nil || id == 0 {
		return ""
	}
	s, err := f.GetStyle(id)
	if err != nil || s == nil || s.Alignment == nil {
		return ""
	}
	switch s.Alignment.Horizontal {
	case "center", "centerContinuous":
		return "Center"
	case "right":
		return "Right"
	}
	return ""
}
