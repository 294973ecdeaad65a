// Package render lays out a JasperReports template with data into pages
// with Loom's own layout engine, following JasperReports' band
// semantics, and draws the pages as PNG images and a PDF.
//
// The title prints once, the page header and footer on every page (the
// last page footer on the last), the column header under the page
// header, a detail band per data row, a group's header and footer when
// its expression changes, then the summary; a band that does not fit
// above the footers starts a new page. staticText, textField, line,
// rectangle, ellipse, image (a placeholder unless its file is found),
// frame and break are drawn; subreports, charts, crosstabs and
// components are labelled placeholder boxes, and counted. Expressions
// are the subset Eval reads; any other shows its text muted, and is
// counted.
package render

import (
	"image/color"
	"maps"
	"strconv"

	"github.com/loomkit/loom/apps/report/jrxml"
)

// Kind is what an Item draws.
type Kind string

// The kinds of items.
const (
	Text        Kind = "text"
	Rect        Kind = "rect"
	Line        Kind = "line"
	Ellipse     Kind = "ellipse"
	Placeholder Kind = "placeholder"
)

// Style is how an item looks.
type Style struct {
	FontSize     float64
	Bold, Italic bool
	HAlign       string // Left, Center, Right, Justified
	VAlign       string // Top, Middle, Bottom
	Fore, Back   color.RGBA
	Opaque       bool
	Border       [4]float64 // top, left, bottom, right pen widths
	BorderColor  [4]color.RGBA
	LineWidth    float64
	Muted        bool // an expression the renderer does not read
	LeftPadding  float64
	RightPadding float64
}

// Item is one thing drawn on a page, in points from the page's top left.
type Item struct {
	Kind       Kind
	X, Y, W, H float64
	Text       string
	Style      Style
}

// Page is one laid-out page.
type Page struct {
	Items []Item
}

// Result is a laid-out report.
type Result struct {
	Width, Height float64
	Pages         []Page
	// Placeholders counts subreports, charts, crosstabs and components
	// drawn as boxes; Unsupported the expressions shown as their text.
	Placeholders, Unsupported int
	// Truncated says that the layout stopped at MaxItems items or
	// MaxText bytes of text: the pages after are missing.
	Truncated bool
	// items and text count what the pages hold.
	items, text int
}

// Bounds on what one layout holds, whatever the template repeats on
// every page: about 200 bytes an item.
const (
	// MaxItems is the most items a layout places.
	MaxItems = 200_000
	// MaxText is the most bytes of text a layout places.
	MaxText = 32 << 20
)

// Row is one data row, by field name.
type Row map[string]any

// Layout lays out doc with rows and parameter values.
func Layout(doc *jrxml.Document, rows []Row, params map[string]any) *Result {
	r := doc.Root
	geo := func(name string, def int) float64 {
		v, _ := r.Attr(name)
		if n, err := strconv.Atoi(v); err == nil {
			return float64(n)
		}
		return float64(def)
	}
	l := &layout{
		res:    &Result{Width: geo("pageWidth", 595), Height: geo("pageHeight", 842)},
		left:   geo("leftMargin", 20),
		top:    geo("topMargin", 30),
		bottom: geo("bottomMargin", 30),
		styles: styles(r),
		scope:  Scope{Fields: map[string]any{}, Params: maps.Clone(params), Vars: map[string]any{}},
	}
	if l.scope.Params == nil {
		l.scope.Params = map[string]any{}
	}
	// parameters not given take their default values
	for _, p := range r.Children {
		name, _ := p.Attr("name")
		if d := p.Child("defaultValueExpression"); p.Name == "parameter" && d != nil {
			if _, given := l.scope.Params[name]; !given {
				if v, err := Eval(d.Text(), l.scope); err == nil {
					l.scope.Params[name] = v
				}
			}
		}
	}
	l.run(r, rows)
	return l.res
}

type layout struct {
	res               *Result
	left, top, bottom float64
	y                 float64
	styles            map[string]*jrxml.Element
	scope             Scope
	page              *Page
	pageNo            int
	root              *jrxml.Element
	last, firstHeaded bool
}

// bands of a section: its band elements.
func bandsOf(sec *jrxml.Element) []*jrxml.Element {
	if sec == nil {
		return nil
	}
	var out []*jrxml.Element
	for _, c := range sec.Children {
		if c.Name == "band" {
			out = append(out, c)
		}
	}
	return out
}

func height(b *jrxml.Element) float64 {
	v, _ := b.Attr("height")
	n, _ := strconv.Atoi(v)
	return float64(n)
}

func sectionHeight(sec *jrxml.Element) float64 {
	h := 0.0
	for _, b := range bandsOf(sec) {
		h += height(b)
	}
	return h
}

type group struct {
	name           string
	expr           string
	header, footer *jrxml.Element
	value          string
	started        bool
}

func (l *layout) run(r *jrxml.Element, rows []Row) {
	l.root = r
	var groups []*group
	for _, g := range r.Children {
		if g.Name != "group" {
			continue
		}
		gr := &group{header: g.Child("groupHeader"), footer: g.Child("groupFooter")}
		gr.name, _ = g.Attr("name")
		if e := g.Child("groupExpression"); e != nil {
			gr.expr = e.Text()
		}
		groups = append(groups, gr)
	}
	type variable struct {
		name, calc, expr string
	}
	var vars []variable
	for _, v := range r.Children {
		if v.Name == "variable" {
			var x variable
			x.name, _ = v.Attr("name")
			x.calc, _ = v.Attr("calculation")
			if e := v.Child("variableExpression"); e != nil {
				x.expr = e.Text()
			}
			vars = append(vars, x)
		}
	}
	l.newPage(true)
	if len(rows) > 0 {
		l.scope.Fields = rows[0] // the title reads the first row's fields, as in JasperReports
	}
	for _, b := range bandsOf(r.Child("title")) {
		l.band(b)
	}
	for i, row := range rows {
		l.scope.Fields = row
		// the outermost group whose value changed closes, with the groups
		// inside it, on the previous row's values
		changed := -1
		for gi, g := range groups {
			val, _ := Eval(g.expr, l.scope)
			if !g.started || Format(val) != g.value {
				changed = gi
				break
			}
		}
		if changed >= 0 && i > 0 {
			l.scope.Fields = rows[i-1]
			for gi := len(groups) - 1; gi >= changed; gi-- {
				for _, b := range bandsOf(groups[gi].footer) {
					l.band(b)
				}
			}
			l.scope.Fields = row
		}
		l.scope.Vars["REPORT_COUNT"] = float64(i + 1)
		for _, v := range vars {
			val, err := Eval(v.expr, l.scope)
			switch v.calc {
			case "Count":
				if err == nil && val != nil {
					l.scope.Vars[v.name] = num(l.scope.Vars[v.name]) + 1
				}
			case "Sum":
				if n, ok := number(val); ok {
					l.scope.Vars[v.name] = num(l.scope.Vars[v.name]) + n
				}
			default:
				if err == nil {
					l.scope.Vars[v.name] = val
				}
			}
		}
		if changed >= 0 {
			for gi := changed; gi < len(groups); gi++ {
				val, _ := Eval(groups[gi].expr, l.scope)
				groups[gi].value, groups[gi].started = Format(val), true
				l.scope.Vars[groups[gi].name+"_COUNT"] = 0.0
				for _, b := range bandsOf(groups[gi].header) {
					l.band(b)
				}
			}
		}
		for _, g := range groups {
			l.scope.Vars[g.name+"_COUNT"] = num(l.scope.Vars[g.name+"_COUNT"]) + 1
		}
		for _, b := range bandsOf(r.Child("detail")) {
			l.band(b)
		}
	}
	if len(rows) > 0 {
		for gi := len(groups) - 1; gi >= 0; gi-- {
			for _, b := range bandsOf(groups[gi].footer) {
				l.band(b)
			}
		}
	}
	for _, b := range bandsOf(r.Child("summary")) {
		l.band(b)
	}
	l.last = true
	l.footers()
}

func num(v any) float64 {
	n, _ := number(v)
	return n
}

// footerTop is where the column and page footers start.
func (l *layout) footerTop() float64 {
	pf := sectionHeight(l.root.Child("pageFooter"))
	return l.res.Height - l.bottom - pf - sectionHeight(l.root.Child("columnFooter"))
}

func (l *layout) newPage(first bool) {
	if l.res.Truncated {
		return // what follows is not drawn
	}
	if !first {
		l.footers()
	}
	l.res.Pages = append(l.res.Pages, Page{})
	l.page = &l.res.Pages[len(l.res.Pages)-1]
	l.pageNo++
	l.scope.Vars["PAGE_NUMBER"] = float64(l.pageNo)
	l.y = l.top
	for _, b := range bandsOf(l.root.Child("background")) {
		l.place(b, l.top)
	}
	if first {
		// the title comes before the page header on the first page
		return
	}
	l.headers()
}

func (l *layout) headers() {
	for _, s := range []string{"pageHeader", "columnHeader"} {
		for _, b := range bandsOf(l.root.Child(s)) {
			l.place(b, l.y)
			l.y += height(b)
		}
	}
}

// footers prints the column footer (at the bottom of the current page, or
// under its last band with isFloatColumnFooter) and the page (or last
// page) footer at the bottom.
func (l *layout) footers() {
	y := l.footerTop()
	if f, _ := l.root.Attr("isFloatColumnFooter"); f == "true" {
		y = l.y // right under the last band printed
	}
	for _, b := range bandsOf(l.root.Child("columnFooter")) {
		l.place(b, y)
		y += height(b)
	}
	pf := l.root.Child("pageFooter")
	if lp := l.root.Child("lastPageFooter"); l.last && lp != nil {
		pf = lp
		y = l.res.Height - l.bottom - sectionHeight(lp)
	}
	for _, b := range bandsOf(pf) {
		l.place(b, y)
		y += height(b)
	}
}

// band prints b at the cursor, starting a new page first when it does not
// fit above the footers; a page break in it starts one after it.
func (l *layout) band(b *jrxml.Element) {
	if l.res.Truncated {
		return
	}
	if !l.firstHeaded && b.Parent.Name != "title" {
		l.firstHeaded = true
		l.headers()
	}
	if l.y+height(b) > l.footerTop() && l.y > l.top {
		l.newPage(false)
	}
	brk := l.place(b, l.y)
	l.y += height(b)
	if brk {
		l.newPage(false)
	}
}
