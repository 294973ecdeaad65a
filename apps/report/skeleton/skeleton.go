// Package skeleton builds a JasperReports template (JRXML) from the layout
// of a form: its labels as static text where they were, a field
// placeholder ($F{field_1}, $F{field_2}…) where each value was, a table's
// header as the column header and its rows as the detail band, all at
// positions scaled from the layout to the page. It is deterministic and
// needs no model; the fields are named for a later step to map to real
// data.
package skeleton

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/loomkit/loom/apps/report/layout"
)

// Page sizes in points.
const (
	a4Short = 595
	a4Long  = 842
	margin  = 20
)

// ErrEmpty is returned for a layout with no text to build from.
var ErrEmpty = errors.New("the layout has no text")

// Field is a placeholder field of the skeleton.
type Field struct {
	// Name is field_1, field_2… in reading order.
	Name string `json:"name"`
	// Label is the text that names it on the form: the label before it
	// or its column's header ("" when there is none).
	Label string `json:"label"`
	// Class is the field's Java class (java.lang.String).
	Class string `json:"class"`
	// Values are the values read for it on the form: one for a label's
	// value, one per table row for a column.
	Values []string `json:"values"`
}

// Skeleton is a built template and what it was built from.
type Skeleton struct {
	// JRXML is the template.
	JRXML []byte `json:"-"`
	// Fields are its placeholder fields, in reading order.
	Fields []Field `json:"fields"`
	// Rows are the values the form holds as data rows for the template:
	// a table's rows, each with the values of the fields outside the
	// table too; one row when there is no table.
	Rows []map[string]any `json:"rows"`
	// PageWidth and PageHeight are the page's size in points, and Scale
	// the points per layout pixel.
	PageWidth  int     `json:"page_width"`
	PageHeight int     `json:"page_height"`
	Scale      float64 `json:"scale"`
}

// element is a staticText (field "") or a textField of a band, in points
// from the band's top left.
type element struct {
	x, y, w, h int
	size       int
	bold       bool
	text       string
	field      string
	// pen is the width of a border around it (0 for none), pad the room
	// left of the text; middle centres the text vertically.
	pen    float64
	pad    int
	middle bool
	// align is the text's horizontal alignment as JasperReports names
	// it ("Center", "Right"; "" for left), from a workbook's cell.
	align string
	// line makes it a line from its top left, across when h is 1, down
	// when w is 1, pen wide.
	line bool
}

// builder carries the geometry while a skeleton is built.
type builder struct {
	l            *layout.Layout
	scale        float64
	pageW, pageH int
	marginX, top int // the margins, in points
	offX, offY   float64
	fields       []Field
	rowFont      map[int]int
	pairByLabel  map[int]layout.Pair
	valueCell    map[int]bool
	fieldOfCell  map[int]string
	// free are the rules outside a table's grid: lines to draw, and
	// underlines to fill in.
	free []layout.Box
}

// Build builds the skeleton template of a layout. Pictures and PDF pages
// are taken as whole pages: with their resolution the page has their
// size, without it they are fitted to an A4 page's width. A spreadsheet's
// cells are placed inside 20-point margins of an A4 page (landscape when
// they are wider than portrait allows), scaled down if they must be.
func Build(l *layout.Layout) (*Skeleton, error) {
	if l == nil || len(l.Cells) == 0 {
		return nil, fmt.Errorf("building a skeleton: %w", ErrEmpty)
	}
	if l.Width <= 0 || l.Height <= 0 {
		return nil, fmt.Errorf("building a skeleton: the layout's page is %dx%d pixels", l.Width, l.Height)
	}
	b := &builder{l: l, pairByLabel: map[int]layout.Pair{}, valueCell: map[int]bool{}, fieldOfCell: map[int]string{}}
	for _, p := range l.Pairs {
		if p.LabelCell < 0 || p.LabelCell >= len(l.Cells) || p.Value >= len(l.Cells) {
			return nil, fmt.Errorf("building a skeleton: pair %q names a cell the layout does not have", p.Label)
		}
		b.pairByLabel[p.LabelCell] = p
		if p.Value >= 0 && p.Value != p.LabelCell {
			b.valueCell[p.Value] = true
		}
	}
	for i, t := range l.Tables {
		if t.FirstRow < 0 || t.LastRow >= len(l.Rows) || t.FirstRow > t.LastRow || len(t.Columns) == 0 || len(l.Rows[t.FirstRow].Cells) == 0 {
			return nil, fmt.Errorf("building a skeleton: table %d has rows %d to %d of %d", i+1, t.FirstRow, t.LastRow, len(l.Rows))
		}
	}
	for i, c := range l.Cells {
		if c.Row < 0 || c.Row >= len(l.Rows) {
			return nil, fmt.Errorf("building a skeleton: cell %d (%q) is in row %d of %d", i, c.Text, c.Row, len(l.Rows))
		}
	}
	for ri, r := range l.Rows {
		for _, i := range r.Cells {
			if i < 0 || i >= len(l.Cells) || l.Cells[i].Row != ri {
				return nil, fmt.Errorf("building a skeleton: row %d names cell %d, which is not one of its %d cells", ri, i, len(l.Cells))
			}
		}
	}
	b.geometry()
	b.rowFonts()
	return b.build(), nil
}

// geometry chooses the page and the scale from layout pixels to points.
func (b *builder) geometry() {
	l := b.l
	if l.Source == layout.KindXLSX {
		b.scale = 72.0 / 96
		b.pageW, b.pageH = a4Short, a4Long
		w := float64(l.Width) * b.scale
		if w > a4Short-2*margin {
			b.pageW, b.pageH = a4Long, a4Short
			if w > a4Long-2*margin {
				b.scale *= (a4Long - 2*margin) / w
			}
		}
		b.marginX, b.top = margin, margin
		return
	}
	switch {
	case l.DPI > 0:
		b.scale = 72 / l.DPI
	case l.Width <= l.Height:
		b.scale = float64(a4Short) / float64(l.Width)
	default:
		b.scale = float64(a4Long) / float64(l.Width)
	}
	b.pageW = int(math.Round(float64(l.Width) * b.scale))
	b.pageH = int(math.Round(float64(l.Height) * b.scale))
	// Margins as wide as the page's empty edges allow, up to 20 points.
	left, top := math.Inf(1), math.Inf(1)
	right, bottom := math.Inf(1), math.Inf(1)
	for _, c := range l.Cells {
		left = min(left, float64(c.Box.X)*b.scale)
		top = min(top, float64(c.Box.Y)*b.scale)
		right = min(right, float64(l.Width-c.Box.Right())*b.scale)
		bottom = min(bottom, float64(l.Height-c.Box.Bottom())*b.scale)
	}
	m := int(max(0, min(margin, left-2, top-4, right-2, bottom-2)))
	b.marginX, b.top = m, m
	b.offX, b.offY = float64(m), float64(m)
}

// pt converts layout pixels to points.
func (b *builder) pt(px int) float64 { return float64(px) * b.scale }

// fontSize guesses the font size of a cell from the height of its row's
// text: Chinese characters fill about 0.92 of the size, so the median of
// the row's Chinese cells gives it; a row without Chinese takes its
// cells' own height, capitals and digits filling about 0.64 of the size
// (0.8 with descenders). A spreadsheet cell gets 10 points, less in a low
// row.
func (b *builder) fontSize(c layout.Cell) int {
	if b.l.Source == layout.KindXLSX {
		return int(max(6, min(10, b.pt(c.Box.H)*0.6)))
	}
	if s, ok := b.rowFont[c.Row]; ok {
		return s
	}
	ratio := 0.64
	if strings.ContainsAny(c.Text, "gjpqy()[]{}|,;") {
		ratio = 0.8
	}
	return clampFont(b.pt(c.Box.H) / ratio)
}

func clampFont(size float64) int {
	return int(max(6, min(36, math.Round(size))))
}

// rowFonts sets the font size of each row with Chinese text.
func (b *builder) rowFonts() {
	b.rowFont = map[int]int{}
	for ri, r := range b.l.Rows {
		var sizes []float64
		for _, i := range r.Cells {
			c := b.l.Cells[i]
			if strings.IndexFunc(c.Text, func(r rune) bool { return unicode.Is(unicode.Han, r) }) >= 0 {
				sizes = append(sizes, b.pt(c.Box.H)/0.92)
			}
		}
		if len(sizes) > 0 {
			slices.Sort(sizes)
			b.rowFont[ri] = clampFont(sizes[(len(sizes)-1)/2])
		}
	}
}

// place is the element box of a cell's text in points from the band top
// (band starting at bandTop points from the page's top), reaching right
// to limit (points from the page's left) at most.
func (b *builder) place(c layout.Cell, size int, bandTop, limit float64) (x, y, w, h int) {
	fx := b.pt(c.Box.X) - b.offX
	top := c.Box.Y
	if _, ok := b.rowFont[c.Row]; ok && c.Row < len(b.l.Rows) && b.l.Source != layout.KindXLSX {
		// In a row with Chinese, text starts at the top of the Chinese
		// characters: digits and Latin letters sit lower by themselves.
		top = b.l.Rows[c.Row].Y
	}
	fy := b.pt(top) - b.offY - bandTop
	fw, fh := b.pt(c.Box.W), b.pt(c.Box.H)
	if b.l.Source != layout.KindXLSX {
		// OCR boxes hug the ink: leave room below and to the right.
		fh = max(fh, float64(size)*1.35)
		fw = max(fw+float64(size), min(limit-b.offX-fx, fw+3*float64(size)))
	}
	x, y = int(math.Max(0, math.Floor(fx))), int(math.Max(0, math.Floor(fy)))
	w, h = int(math.Ceil(fw)), int(math.Ceil(fh))
	colW := b.pageW - 2*b.marginX
	x = min(x, colW-1)
	w = max(1, min(w, colW-x))
	return x, y, w, max(h, 1)
}

// nextRight is where the next cell of the row starts, in points from the
// page's left, or the column's right edge.
func (b *builder) nextRight(i int) float64 {
	c := b.l.Cells[i]
	r := b.l.Rows[c.Row]
	k := slices.Index(r.Cells, i)
	if k >= 0 && k+1 < len(r.Cells) {
		return b.pt(b.l.Cells[r.Cells[k+1]].Box.X) - 2
	}
	return float64(b.pageW - b.marginX)
}

// field declares the next placeholder field.
func (b *builder) field(label string, values ...string) string {
	name := fmt.Sprintf("field_%d", len(b.fields)+1)
	b.fields = append(b.fields, Field{Name: name, Label: label, Class: "java.lang.String", Values: values})
	return name
}

// band is the elements of one band and its height.
type band struct {
	height int
	elems  []element
}

func (bd *band) add(e element) {
	bd.elems = append(bd.elems, e)
	bd.height = max(bd.height, e.y+e.h)
}

// cellsOf adds the cells of rows first..last (outside tables) to bd, as
// labels, values (fields) and other text, relative to bandTop points.
func (b *builder) cellsOf(bd *band, first, last int, bandTop float64) {
	l := b.l
	for ri := first; ri <= last; ri++ {
		for _, i := range l.Rows[ri].Cells {
			c := l.Cells[i]
			size := b.fontSize(c)
			limit := b.nextRight(i)
			p, isLabel := b.pairByLabel[i]
			switch {
			case b.valueCell[i]:
				x, y, w, h := b.place(c, size, bandTop, limit)
				bd.add(element{x: x, y: y, w: w, h: h, size: size, bold: c.Bold, field: b.fieldOfCell[i]})
			case isLabel && p.Value == i:
				// Label and value in one cell: split its box by characters.
				n := len([]rune(c.Text))
				v := len([]rune(p.Text))
				lc, vc := c, c
				lc.Box.W = c.Box.W * (n - v) / max(n, 1)
				lc.Text = strings.TrimSuffix(c.Text, p.Text)
				vc.Box.X, vc.Box.W = c.Box.X+lc.Box.W, c.Box.W-lc.Box.W
				x, y, w, h := b.place(lc, size, bandTop, b.pt(vc.Box.X))
				bd.add(element{x: x, y: y, w: w, h: h, size: size, bold: c.Bold, text: strings.TrimSpace(lc.Text)})
				x, y, w, h = b.place(vc, size, bandTop, limit)
				bd.add(element{x: x, y: y, w: w, h: h, size: size, bold: c.Bold, field: b.field(p.Label, p.Text)})
			case isLabel && p.Value < 0:
				x, y, w, h := b.place(c, size, bandTop, limit)
				bd.add(element{x: x, y: y, w: w, h: h, size: size, bold: c.Bold, align: c.Align, text: c.Text})
				if u, ok := b.underline(c); ok {
					// The line after the label is where the value goes.
					ux := int(math.Round(b.pt(u.X) - b.offX))
					uw := int(math.Round(b.pt(u.W)))
					uy := int(math.Round(b.pt(u.Y)-b.offY-bandTop)) - h
					bd.add(element{x: ux, y: max(0, uy), w: uw, h: h, size: size, field: b.field(p.Label)})
					break
				}
				// An empty box to fill in, right of the label.
				fx := x + w + 4
				if fw := int(limit-b.offX) - fx; fw >= size {
					bd.add(element{x: fx, y: y, w: fw, h: h, size: size, field: b.field(p.Label)})
				}
			default:
				x, y, w, h := b.place(c, size, bandTop, limit)
				bd.add(element{x: x, y: y, w: w, h: h, size: size, bold: c.Bold, align: c.Align, text: c.Text})
			}
		}
	}
}

// names gives each separate value cell of a pair its field, in reading
// order, before the bands are laid out.
func (b *builder) names(first, last int) {
	for ri := first; ri <= last; ri++ {
		for _, i := range b.l.Rows[ri].Cells {
			if p, ok := b.pairByLabel[i]; ok && p.Value >= 0 && p.Value != i {
				b.fieldOfCell[p.Value] = b.field(p.Label, p.Text)
			}
		}
	}
}

func (b *builder) build() *Skeleton {
	l := b.l
	var title, colHeader, detail, summary band
	var table *layout.Table
	if len(l.Tables) > 0 {
		table = &l.Tables[0]
	}
	last := len(l.Rows) - 1
	b.free = l.Rules
	if table != nil {
		b.free = outside(l.Rules, table, l.Rows[table.FirstRow].H)
	}
	if table == nil {
		b.names(0, last)
		b.cellsOf(&title, 0, last, 0)
		b.lines(&title, math.Inf(-1), math.Inf(1), 0)
	} else {
		b.names(0, table.FirstRow-1)
		b.cellsOf(&title, 0, table.FirstRow-1, 0)
		var end float64
		ruled := false
		if g, ok := b.gridOf(table); ok {
			end, ruled = b.ruledTable(table, g, &title, &colHeader, &detail)
		}
		if !ruled {
			// The title band reaches down to the table's header.
			headTop := b.pt(l.Rows[table.FirstRow].Y) - b.offY
			title.height = max(title.height, int(math.Floor(headTop)))
			pitch := b.tableBands(table, &colHeader, &detail, float64(title.height))
			end = b.pt(l.Rows[table.LastRow].Y) - b.offY + pitch
		}
		if table.LastRow < last {
			// The summary keeps the distance the form has between the
			// end of the table and what follows.
			b.names(table.LastRow+1, last)
			b.cellsOf(&summary, table.LastRow+1, last, end)
		}
		b.lines(&title, math.Inf(-1), float64(title.height), 0)
		b.lines(&summary, end, math.Inf(1), end)
	}
	sk := &Skeleton{Fields: b.fields, PageWidth: b.pageW, PageHeight: b.pageH, Scale: b.scale}
	sk.Rows = b.rows(table)
	sk.JRXML = b.jrxml([]struct {
		name string
		band
	}{{"title", title}, {"columnHeader", colHeader}, {"detail", detail}, {"summary", summary}})
	return sk
}

// tableBands lays out a table: its header row as static text in the
// column header band, whose top is headTop points below the top margin,
// and one row of fields in the detail band, as high as the rows are
// apart. It returns that distance.
func (b *builder) tableBands(t *layout.Table, head, detail *band, headTop float64) float64 {
	l := b.l
	cols := t.Columns
	limit := func(k int) float64 {
		if k+1 < len(cols) {
			return b.pt(cols[k+1].X) - 2
		}
		return float64(b.pageW - b.marginX)
	}
	hr := l.Rows[t.FirstRow]
	for _, i := range hr.Cells {
		c := l.Cells[i]
		k := colOf(cols, c.Box)
		lim := float64(b.pageW - b.marginX)
		if k >= 0 {
			lim = limit(k)
		}
		size := b.fontSize(c)
		x, y, w, h := b.place(c, size, headTop, lim)
		head.add(element{x: x, y: y, w: w, h: h, size: size, bold: c.Bold, align: c.Align, text: c.Text})
	}
	if t.LastRow == t.FirstRow {
		return float64(head.height)
	}
	// The detail band: the rows' pitch, and the first body row's cells
	// (or the column's span where that row has none) for the fields.
	first := l.Rows[t.FirstRow+1]
	pitch := b.pt(first.Y - hr.Y)
	if t.LastRow > t.FirstRow+1 {
		pitch = b.pt(l.Rows[t.LastRow].Y-first.Y) / float64(t.LastRow-t.FirstRow-1)
	}
	// The header band ends where the first row's text begins.
	head.height = max(head.height, int(math.Floor(b.pt(first.Y)-b.offY-headTop)))
	rowTop := headTop + float64(head.height)
	size := 10
	for _, i := range first.Cells {
		size = b.fontSize(l.Cells[i])
		break
	}
	for k, s := range cols {
		c := layout.Cell{Box: layout.Box{X: s.X, Y: first.Y, W: s.W, H: first.H}}
		c.Row = l.Cells[first.Cells[0]].Row
		for _, i := range first.Cells {
			if colOf(cols, l.Cells[i].Box) == k {
				c = l.Cells[i]
			}
		}
		c.Box.X = s.X
		x, y, w, h := b.place(c, size, rowTop, limit(k))
		detail.add(element{x: x, y: y, w: w, h: h, size: size, field: b.field(header(t, k), column(t, k)...)})
	}
	detail.height = max(detail.height, int(math.Round(pitch)))
	return pitch
}

// colOf is the column of cols box overlaps most, -1 for none.
func colOf(cols []layout.Span, box layout.Box) int {
	best, bestW := -1, 0
	for i, s := range cols {
		if w := min(s.X+s.W, box.Right()) - max(s.X, box.X); w > bestW {
			best, bestW = i, w
		}
	}
	return best
}

// rows are the form's values as data rows.
func (b *builder) rows(t *layout.Table) []map[string]any {
	n := 1
	if t != nil {
		n = max(1, len(t.Body))
	}
	rows := make([]map[string]any, n)
	for i := range rows {
		rows[i] = map[string]any{}
		for _, f := range b.fields {
			switch {
			case len(f.Values) == n && n > 1:
				rows[i][f.Name] = f.Values[i]
			case len(f.Values) > 0:
				rows[i][f.Name] = f.Values[min(i, len(f.Values)-1)]
			default:
				rows[i][f.Name] = ""
			}
		}
	}
	return rows
}
