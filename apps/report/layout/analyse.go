package layout

import (
	"cmp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// analyse groups the cells of an OCR'd page into rows by their vertical
// overlap, puts them in reading order and finds the rest.
func (l *Layout) analyse() {
	cells := l.Cells
	slices.SortStableFunc(cells, func(a, b Cell) int { return cmp.Compare(2*a.Box.Y+a.Box.H, 2*b.Box.Y+b.Box.H) })
	var rows [][]Cell
	var top, bottom int
	for _, c := range cells {
		mid := c.Box.Y + c.Box.H/2
		if n := len(rows); n > 0 && mid >= top && mid <= bottom {
			rows[n-1] = append(rows[n-1], c)
			continue
		}
		rows = append(rows, []Cell{c})
		top, bottom = c.Box.Y, c.Box.Bottom()
	}
	l.Cells = l.Cells[:0]
	l.Rows = l.Rows[:0]
	for _, r := range rows {
		slices.SortStableFunc(r, func(a, b Cell) int { return a.Box.X - b.Box.X })
		r = joinValues(r)
		l.Rows = append(l.Rows, Row{})
		for _, c := range r {
			c.Row = len(l.Rows) - 1
			l.Cells = append(l.Cells, c)
		}
	}
	l.bound()
	l.Columns = spans(l.Cells, func(r Row) bool { return len(r.Cells) > 1 }, l.Rows)
	for i := range l.Cells {
		l.Cells[i].Col = column(l.Columns, l.Cells[i].Box)
	}
	l.finish()
}

// labelWords says whether s could be a label whose colon was lost: two
// to eight Chinese characters, or one to three words of letters, with no
// digits.
func labelWords(s string) bool {
	s = strings.TrimSpace(s)
	han, other := 0, 0
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Han, r):
			han++
		case unicode.IsLetter(r) || r == ' ':
			other++
		default:
			return false
		}
	}
	if han > 0 {
		return other == 0 && han >= 2 && han <= 8
	}
	return other > 1 && len(strings.Fields(s)) <= 3
}

// joinValues joins the pieces OCR split a label's value into ("Pacific"
// and "Steel Supply" after "Vendor:"): the cells after a label's value,
// up to the next label and close to each other, become one value.
func joinValues(r []Cell) []Cell {
	out := r[:0:0]
	inValue := false
	for _, c := range r {
		_, value, isLabel := splitLabel(c.Text)
		n := len(out)
		switch {
		case isLabel:
			inValue = value == ""
			out = append(out, c)
			continue
		case inValue && n > 0:
			if _, _, prevLabel := splitLabel(out[n-1].Text); !prevLabel && c.Box.X-out[n-1].Box.Right() < 2*max(c.Box.H, out[n-1].Box.H) {
				prev := &out[n-1]
				prev.Text = joinText(prev.Text, c.Text, true)
				prev.Box = union(prev.Box, c.Box)
				prev.Confidence = min(prev.Confidence, c.Confidence)
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

// bound fills each row's cell list and vertical extent from the cells'
// Row numbers.
func (l *Layout) bound() {
	for i := range l.Rows {
		l.Rows[i] = Row{Cells: []int{}}
	}
	for i, c := range l.Cells {
		r := &l.Rows[c.Row]
		if len(r.Cells) == 0 {
			r.Y, r.H = c.Box.Y, c.Box.H
		} else {
			b := union(Box{Y: r.Y, H: r.H}, Box{Y: c.Box.Y, H: c.Box.H})
			r.Y, r.H = b.Y, b.H
		}
		r.Cells = append(r.Cells, i)
	}
	l.TotalRows = len(l.Rows)
}

// spans are the columns the cells of the rows keep takes up: the union of
// their horizontal extents where they overlap, left to right.
func spans(cells []Cell, keep func(Row) bool, rows []Row) []Span {
	var in []Span
	for _, r := range rows {
		if !keep(r) {
			continue
		}
		for _, i := range r.Cells {
			in = append(in, Span{X: cells[i].Box.X, W: cells[i].Box.W})
		}
	}
	slices.SortFunc(in, func(a, b Span) int { return a.X - b.X })
	var out []Span
	for _, s := range in {
		if n := len(out); n > 0 && s.X < out[n-1].X+out[n-1].W {
			out[n-1].W = max(out[n-1].X+out[n-1].W, s.X+s.W) - out[n-1].X
			continue
		}
		out = append(out, s)
	}
	return out
}

// column is the index of the span b overlaps most, -1 for none or when b
// reaches over more than one.
func column(cols []Span, b Box) int {
	best, bestW, n := -1, 0, 0
	for i, s := range cols {
		w := min(s.X+s.W, b.Right()) - max(s.X, b.X)
		if w <= 0 {
			continue
		}
		n++
		if w > bestW {
			best, bestW = i, w
		}
	}
	if n > 1 {
		return -1
	}
	return best
}

// finish finds label/value pairs and tables once cells, rows and columns
// are known.
func (l *Layout) finish() {
	l.Pairs = []Pair{}
	l.Tables = []Table{}
	// Empty lists, not nulls, in the JSON form.
	if l.Columns == nil {
		l.Columns = []Span{}
	}
	if l.Cells == nil {
		l.Cells = []Cell{}
	}
	if l.Rows == nil {
		l.Rows = []Row{}
	}
	labelRow := make([]bool, len(l.Rows))
	for ri, r := range l.Rows {
		for k, i := range r.Cells {
			label, value, ok := splitLabel(l.Cells[i].Text)
			if !ok {
				continue
			}
			labelRow[ri] = true
			p := Pair{Label: label, LabelCell: i, Value: -1}
			switch {
			case value != "":
				p.Value, p.Text = i, value
			case k+1 < len(r.Cells):
				next := r.Cells[k+1]
				if _, _, isLabel := splitLabel(l.Cells[next].Text); !isLabel {
					p.Value, p.Text = next, l.Cells[next].Text
				}
			}
			l.Pairs = append(l.Pairs, p)
		}
	}
	// Label words without a colon (OCR dropped it): in a row with labels,
	// a short word of letters before a cell that is no label's nor value.
	used := map[int]bool{}
	for _, p := range l.Pairs {
		used[p.LabelCell], used[p.Value] = true, true
	}
	for ri, r := range l.Rows {
		if !labelRow[ri] {
			continue
		}
		for k := 0; k+1 < len(r.Cells); k++ {
			i, next := r.Cells[k], r.Cells[k+1]
			if used[i] || used[next] || !labelWords(l.Cells[i].Text) {
				continue
			}
			if _, _, isLabel := splitLabel(l.Cells[next].Text); isLabel {
				continue
			}
			l.Pairs = append(l.Pairs, Pair{Label: strings.TrimSpace(l.Cells[i].Text), LabelCell: i, Value: next, Text: l.Cells[next].Text})
			used[i], used[next] = true, true
			k++
		}
	}
	slices.SortStableFunc(l.Pairs, func(a, b Pair) int { return a.LabelCell - b.LabelCell })
	// Tables: runs of at least two rows of several cells, none of them a
	// label, close to each other.
	start := -1
	for ri := 0; ri <= len(l.Rows); ri++ {
		ok := ri < len(l.Rows) && len(l.Rows[ri].Cells) > 1 && !labelRow[ri]
		if ok && start >= 0 {
			prev, cur := l.Rows[ri-1], l.Rows[ri]
			if cur.Y-(prev.Y+prev.H) > 3*max(prev.H, cur.H) {
				l.table(start, ri-1)
				start = -1
			}
		}
		switch {
		case ok && start < 0:
			start = ri
		case !ok && start >= 0:
			l.table(start, ri-1)
			start = -1
		}
	}
}

// table records rows first..last as a table if they make at least two
// rows of at least two columns.
func (l *Layout) table(first, last int) {
	if last <= first {
		return
	}
	rows := l.Rows[first : last+1]
	cols := spans(l.Cells, func(Row) bool { return true }, rows)
	if len(cols) < 2 {
		return
	}
	t := Table{FirstRow: first, LastRow: last, Columns: cols, Body: [][]string{}}
	var box Box
	for ri, r := range rows {
		texts := make([]string, len(cols))
		for _, i := range r.Cells {
			c := l.Cells[i]
			if ri == 0 && box.W == 0 {
				box = c.Box
			}
			box = union(box, c.Box)
			if k := column(cols, c.Box); k >= 0 {
				texts[k] = strings.TrimSpace(texts[k] + " " + c.Text)
			}
		}
		if ri == 0 {
			t.Header = texts
		} else {
			t.Body = append(t.Body, texts)
		}
	}
	t.Box = box
	l.Tables = append(l.Tables, t)
}

// splitLabel tells a label — text ending in a colon, or text, a colon and
// a value ("客户：张三") — from other text, and splits it. Colons may be
// full- or half-width; a comma OCR read where a colon was is taken as one
// after a short Chinese label ("单号，XS20240518") or at the end of a
// cell ("Date,").
func splitLabel(s string) (label, value string, ok bool) {
	s = strings.TrimSpace(s)
	i := strings.IndexAny(s, ":：")
	if i <= 0 {
		i = commaColon(s)
	}
	if i <= 0 {
		return "", "", false
	}
	label = strings.TrimSpace(s[:i])
	_, n := firstRune(s[i:])
	// Underscores after a label are a line to fill in, not a value.
	value = strings.TrimSpace(strings.Trim(strings.TrimSpace(s[i+n:]), "_＿"))
	// A time or a ratio ("12:30") is not a label.
	hasLetter := false
	for _, r := range label {
		if unicode.IsLetter(r) {
			hasLetter = true
			break
		}
	}
	if !hasLetter {
		return "", "", false
	}
	return label, value, true
}

// commaColon is where a comma that stands for a colon is in s, -1 for
// none: the last character, or the first full-width comma after two to
// eight Chinese characters.
func commaColon(s string) int {
	if last, n := utf8.DecodeLastRuneInString(s); strings.ContainsRune(",，;；", last) {
		return len(s) - n
	}
	i := strings.Index(s, "，")
	if i <= 0 {
		return -1
	}
	k := 0
	for _, r := range s[:i] {
		if !unicode.Is(unicode.Han, r) {
			return -1
		}
		k++
	}
	if k < 2 || k > 8 {
		return -1
	}
	return i
}

func firstRune(s string) (rune, int) {
	for _, r := range s {
		return r, len(string(r))
	}
	return 0, 0
}
