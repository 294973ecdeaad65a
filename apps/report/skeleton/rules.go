package skeleton

import (
	"math"
	"slices"

	"github.com/loomkit/loom/apps/report/layout"
)

// grid is the cells a table's rules draw: the edges between its columns
// and between its rows, in layout pixels, and how thick the rules are.
type grid struct {
	xs, ys []int
	pen    float64
}

// gridOf finds the rules around and inside a table: vertical rules
// spanning most of its height (a column's text may end far from its
// right rule), horizontal ones most of its width and close above or
// below. ok is
// false when there are not at least two of each.
func (b *builder) gridOf(t *layout.Table) (g grid, ok bool) {
	thin := math.MaxInt
	for _, r := range b.l.Rules {
		if !ofTable(r, t, b.l.Rows[t.FirstRow].H) {
			continue
		}
		if r.H > r.W {
			g.xs = append(g.xs, r.X+r.W/2)
			thin = min(thin, r.W)
		} else {
			g.ys = append(g.ys, r.Y+r.H/2)
			thin = min(thin, r.H)
		}
	}
	if len(g.xs) < 2 || len(g.ys) < 2 {
		return grid{}, false
	}
	slices.Sort(g.xs)
	slices.Sort(g.ys)
	g.pen = max(0.5, min(3, math.Round(b.pt(thin)*2)/2))
	return g, true
}

// ofTable says whether rule r belongs to table t, whose rows are about
// rowH high: a vertical rule spanning most of its height, a horizontal
// one most of its width and within two rows above or below it.
func ofTable(r layout.Box, t *layout.Table, rowH int) bool {
	box := t.Box
	if r.H > r.W {
		return 2*(min(r.Bottom(), box.Bottom())-max(r.Y, box.Y)) >= box.H
	}
	over := min(r.Right(), box.Right()) - max(r.X, box.X)
	return 2*over >= box.W && r.Y >= box.Y-2*rowH && r.Bottom() <= box.Bottom()+2*rowH
}

// around returns the edges of edges just before lo and just after hi;
// ok is false when there is none on a side.
func around(edges []int, lo, hi int) (a, z int, ok bool) {
	a, z = math.MinInt, math.MaxInt
	for _, e := range edges {
		if e <= lo+2 {
			a = max(a, e)
		}
		if e >= hi-2 {
			z = min(z, e)
		}
	}
	return a, z, a != math.MinInt && z != math.MaxInt && z > a
}

// ruledTable lays out a table with rules as boxed cells: its header row
// as static text in the column header band, one row of fields in the
// detail band, each cell reaching from rule to rule with a border. The
// title band is made to reach down to the header's top rule. It returns where the table ends on the form (in points below the top
// margin), and false, with nothing added, when the rules do not frame
// the header and first row of every column.
func (b *builder) ruledTable(t *layout.Table, g grid, title, head, detail *band) (float64, bool) {
	l := b.l
	if t.LastRow == t.FirstRow {
		return 0, false
	}
	hr, first := l.Rows[t.FirstRow], l.Rows[t.FirstRow+1]
	hTop, hBottom, ok1 := around(g.ys, hr.Y, hr.Y+hr.H)
	_, dBottom, ok2 := around(g.ys, first.Y, first.Y+first.H)
	if !ok1 || !ok2 || dBottom <= hBottom {
		return 0, false
	}
	type edge struct{ left, right int }
	edges := make([]edge, len(t.Columns))
	for k, s := range t.Columns {
		a, z, ok := around(g.xs, s.X, s.X+s.W)
		if !ok {
			return 0, false
		}
		edges[k] = edge{a, z}
	}
	title.height = max(title.height, int(math.Floor(b.pt(hTop)-b.offY)))
	cell := func(bd *band, k, top, bottom int, c layout.Cell, size int, e element) {
		x := b.pt(edges[k].left) - b.offX
		e.x, e.w = int(math.Round(x)), int(math.Round(b.pt(edges[k].right-edges[k].left)))
		e.y, e.h = 0, int(math.Round(b.pt(bottom-top)))
		e.size, e.pen, e.middle = size, g.pen, true
		e.pad = int(max(0, min(20, math.Round(b.pt(c.Box.X-edges[k].left)))))
		colW := b.pageW - 2*b.marginX
		e.x = max(0, min(e.x, colW-1))
		e.w = max(1, min(e.w, colW-e.x))
		bd.add(e)
	}
	for k := range t.Columns {
		c := layout.Cell{Box: layout.Box{X: t.Columns[k].X}, Row: t.FirstRow}
		for _, i := range hr.Cells {
			if colOf(t.Columns, l.Cells[i].Box) == k {
				c = l.Cells[i]
			}
		}
		cell(head, k, hTop, hBottom, c, b.fontSize(c), element{bold: c.Bold, align: c.Align, text: c.Text})
	}
	size := 10
	for _, i := range first.Cells {
		size = b.fontSize(l.Cells[i])
		break
	}
	for k, s := range t.Columns {
		c := layout.Cell{Box: layout.Box{X: s.X}, Row: t.FirstRow + 1}
		for _, i := range first.Cells {
			if colOf(t.Columns, l.Cells[i].Box) == k {
				c = l.Cells[i]
			}
		}
		cell(detail, k, hBottom, dBottom, c, size, element{field: b.field(header(t, k), column(t, k)...)})
	}
	_, tableEnd, ok := around(g.ys, l.Rows[t.LastRow].Y, l.Rows[t.LastRow].Y+l.Rows[t.LastRow].H)
	if !ok {
		tableEnd = hBottom + int(float64(t.LastRow-t.FirstRow)*float64(dBottom-hBottom))
	}
	return b.pt(tableEnd) - b.offY, true
}

// header is the header text of column k of t.
func header(t *layout.Table, k int) string {
	if k < len(t.Header) {
		return t.Header[k]
	}
	return ""
}

// column is the values of column k of t's body.
func column(t *layout.Table, k int) []string {
	var values []string
	for _, r := range t.Body {
		if k < len(r) {
			values = append(values, r[k])
		}
	}
	return values
}

// outside are the rules that are not part of table t.
func outside(rules []layout.Box, t *layout.Table, rowH int) []layout.Box {
	var out []layout.Box
	for _, r := range rules {
		if !ofTable(r, t, rowH) {
			out = append(out, r)
		}
	}
	return out
}

// underline is the horizontal rule that starts right of cell c (a label)
// and runs along the bottom of its row, if there is one.
func (b *builder) underline(c layout.Cell) (layout.Box, bool) {
	for _, r := range b.free {
		if r.W <= r.H {
			continue
		}
		if r.X >= c.Box.Right()-c.Box.H && r.X <= c.Box.Right()+10*c.Box.H && r.Y >= c.Box.Y && r.Y <= c.Box.Bottom()+c.Box.H {
			return r, true
		}
	}
	return layout.Box{}, false
}

// lines adds the free rules whose top lies from top to bottom (points
// below the top margin) to bd as lines, bandTop being the band's top.
func (b *builder) lines(bd *band, top, bottom, bandTop float64) {
	for _, r := range b.free {
		y := b.pt(r.Y) - b.offY
		if y < top || y >= bottom {
			continue
		}
		e := element{line: true, pen: max(0.5, min(3, math.Round(b.pt(min(r.W, r.H))*2)/2))}
		e.x = int(math.Round(b.pt(r.X) - b.offX))
		e.y = int(math.Round(y - bandTop))
		if r.W > r.H {
			e.w, e.h = int(math.Round(b.pt(r.W))), 1
		} else {
			e.w, e.h = 1, int(math.Round(b.pt(r.H)))
		}
		colW := b.pageW - 2*b.marginX
		if e.x < 0 || e.y < 0 || e.x >= colW {
			continue
		}
		e.w = max(1, min(e.w, colW-e.x))
		bd.add(e)
	}
}
