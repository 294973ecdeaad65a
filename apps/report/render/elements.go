package render

import (
	"image/color"
	"strconv"
	"strings"

	"github.com/loomkit/loom/apps/report/jrxml"
)

// styles are the report's named styles by name; "" is the default style.
func styles(root *jrxml.Element) map[string]*jrxml.Element {
	m := map[string]*jrxml.Element{}
	for _, s := range root.Children {
		if s.Name != "style" {
			continue
		}
		name, _ := s.Attr("name")
		m[name] = s
		if d, _ := s.Attr("isDefault"); d == "true" {
			m[""] = s
		}
	}
	return m
}

// parseColor reads #RRGGBB (or #RGB); ok false otherwise.
func parseColor(s string) (color.RGBA, bool) {
	s = strings.TrimPrefix(s, "#")
	if len(s) == 3 {
		s = string([]byte{s[0], s[0], s[1], s[1], s[2], s[2]})
	}
	if len(s) != 6 {
		return color.RGBA{}, false
	}
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil {
		return color.RGBA{}, false
	}
	return color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 255}, true
}

func fnum(e *jrxml.Element, name string) (float64, bool) {
	if e == nil {
		return 0, false
	}
	v, ok := e.Attr(name)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	return f, err == nil
}

// applyAttrs sets what attributes of e (a style, reportElement,
// textElement or font) say.
func applyAttrs(st *Style, e *jrxml.Element) {
	if e == nil {
		return
	}
	for _, a := range e.Attrs {
		v := a.Value
		switch a.Name.Local {
		case "fontSize", "size":
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				st.FontSize = f
			}
		case "isBold":
			st.Bold = v == "true"
		case "isItalic":
			st.Italic = v == "true"
		case "hTextAlign", "textAlignment", "hAlign":
			st.HAlign = v
		case "vTextAlign", "verticalAlignment", "vAlign":
			st.VAlign = v
		case "forecolor":
			if c, ok := parseColor(v); ok {
				st.Fore = c
			}
		case "backcolor":
			if c, ok := parseColor(v); ok {
				st.Back = c
			}
		case "mode":
			st.Opaque = v == "Opaque"
		}
	}
}

// applyBox sets the borders and padding of a box element.
func applyBox(st *Style, box *jrxml.Element) {
	if box == nil {
		return
	}
	if p, ok := fnum(box, "leftPadding"); ok {
		st.LeftPadding = p
	}
	if p, ok := fnum(box, "rightPadding"); ok {
		st.RightPadding = p
	}
	if p, ok := fnum(box, "padding"); ok {
		st.LeftPadding, st.RightPadding = p, p
	}
	pen := func(e *jrxml.Element, i int) {
		if e == nil {
			return
		}
		if w, ok := fnum(e, "lineWidth"); ok {
			st.Border[i] = w
		}
		if v, ok := e.Attr("lineColor"); ok {
			if c, ok := parseColor(v); ok {
				st.BorderColor[i] = c
			}
		}
	}
	for i := range 4 {
		pen(box.Child("pen"), i)
	}
	for i, n := range []string{"topPen", "leftPen", "bottomPen", "rightPen"} {
		pen(box.Child(n), i)
	}
}

// styleOf resolves the style of element el: the default style, then its
// named style (and what that style extends), then its own attributes.
func (l *layout) styleOf(el *jrxml.Element) Style {
	st := Style{FontSize: 10, Fore: color.RGBA{0, 0, 0, 255}, Back: color.RGBA{255, 255, 255, 255}, LineWidth: 1,
		HAlign: "Left", VAlign: "Top"}
	for i := range 4 {
		st.BorderColor[i] = st.Fore
	}
	re := el.Child("reportElement")
	var chain []*jrxml.Element
	name, ok := re.Attr("style")
	if !ok {
		name = ""
	}
	for s, depth := l.styles[name], 0; s != nil && depth < 8; depth++ {
		chain = append([]*jrxml.Element{s}, chain...)
		parent, ok := s.Attr("style")
		if !ok {
			break
		}
		s = l.styles[parent]
	}
	for _, s := range chain {
		applyAttrs(&st, s)
		applyBox(&st, s.Child("box"))
	}
	applyAttrs(&st, re)
	applyBox(&st, el.Child("box"))
	if te := el.Child("textElement"); te != nil {
		applyAttrs(&st, te)
		applyAttrs(&st, te.Child("font"))
	}
	if ge := el.Child("graphicElement"); ge != nil {
		if p := ge.Child("pen"); p != nil {
			if w, ok := fnum(p, "lineWidth"); ok {
				st.LineWidth = w
			}
		}
	}
	return st
}

// placeIn lays out the elements of container (a band or frame) with its
// top left at (x0, y0); it reports whether it holds a page break.
func (l *layout) placeIn(container *jrxml.Element, x0, y0 float64) (brk bool) {
	for _, el := range container.Children {
		if l.res.Truncated {
			return brk
		}
		if el.Name == "elementGroup" {
			if l.placeIn(el, x0, y0) {
				brk = true
			}
			continue
		}
		re := el.Child("reportElement")
		if re == nil {
			continue
		}
		if pw := re.Child("printWhenExpression"); pw != nil {
			if v, err := Eval(pw.Text(), l.scope); err == nil && !truthy(v) {
				continue
			}
		}
		x, _ := fnum(re, "x")
		y, _ := fnum(re, "y")
		w, _ := fnum(re, "width")
		h, _ := fnum(re, "height")
		x, y = x0+x, y0+y
		st := l.styleOf(el)
		add := func(k Kind, text string, st Style) {
			if l.res.items >= MaxItems || l.res.text+len(text) > MaxText {
				l.res.Truncated = true
				return
			}
			l.res.items++
			l.res.text += len(text)
			l.page.Items = append(l.page.Items, Item{Kind: k, X: x, Y: y, W: w, H: h, Text: text, Style: st})
		}
		switch {
		case el.Name == "break":
			brk = true
		case el.Name == "staticText":
			var text string
			if t := el.Child("text"); t != nil {
				text = t.Text()
			}
			add(Text, text, st)
		case el.Name == "textField":
			var text string
			if e := el.Child("textFieldExpression"); e != nil {
				v, err := Eval(e.Text(), l.scope)
				if err != nil {
					l.res.Unsupported++
					text, st.Muted = strings.TrimSpace(e.Text()), true
				} else {
					text = Format(v)
				}
			}
			add(Text, text, st)
		case el.Name == "rectangle":
			if st.Border == [4]float64{} {
				st.Border = [4]float64{st.LineWidth, st.LineWidth, st.LineWidth, st.LineWidth}
				st.BorderColor = [4]color.RGBA{st.Fore, st.Fore, st.Fore, st.Fore}
			}
			st.Opaque = st.Opaque || !hasAttr(re, "mode")
			add(Rect, "", st)
		case el.Name == "ellipse":
			add(Ellipse, "", st)
		case el.Name == "line":
			add(Line, "", st)
		case el.Name == "frame":
			add(Rect, "", st)
			if l.placeIn(el, x, y) {
				brk = true
			}
		case el.Name == "image":
			st.Border = [4]float64{0.5, 0.5, 0.5, 0.5}
			st.BorderColor = [4]color.RGBA{{160, 160, 160, 255}, {160, 160, 160, 255}, {160, 160, 160, 255}, {160, 160, 160, 255}}
			add(Placeholder, "image", st)
		default: // charts, subreports, crosstabs, components
			l.res.Placeholders++
			st.Border = [4]float64{0.5, 0.5, 0.5, 0.5}
			st.BorderColor = [4]color.RGBA{{160, 160, 160, 255}, {160, 160, 160, 255}, {160, 160, 160, 255}, {160, 160, 160, 255}}
			label := el.Name
			if el.Name == "componentElement" && len(el.Children) > 1 {
				label = el.Children[len(el.Children)-1].Name // table, list, barcode…
			}
			add(Placeholder, label, st)
		}
	}
	return brk
}

func hasAttr(e *jrxml.Element, name string) bool {
	_, ok := e.Attr(name)
	return ok
}

// place lays out band b at y on the page.
func (l *layout) place(b *jrxml.Element, y float64) bool {
	return l.placeIn(b, l.left, y)
}
