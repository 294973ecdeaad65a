package jrxml

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// BandKinds returns the sections of a template that hold bands, in the
// order the schema puts them; groupHeader and groupFooter sit inside a
// group. The slice is the caller's.
func BandKinds() []string { return slices.Clone(bandKinds) }

var bandKinds = []string{
	"groupHeader", "groupFooter",
	"background", "title", "pageHeader", "columnHeader", "detail",
	"columnFooter", "pageFooter", "lastPageFooter", "summary", "noData",
}

// MaxWindow is the most characters a band window holds, unless one
// element is larger on its own.
const MaxWindow = 4000

// Band is one band of a decomposed template.
type Band struct {
	// Kind is the section it is in: one of BandKinds.
	Kind string `json:"kind"`
	// Group names the group of a groupHeader or groupFooter band.
	Group string `json:"group,omitempty"`
	// Index counts the bands of the same section (and group) from 0: a
	// detail section may hold several.
	Index int `json:"index"`
	// Line is where the band element starts.
	Line int `json:"line"`
	// Lead is the text between the previous band (or the header) and this
	// one: the tags of the sections around them, whitespace, comments.
	Lead string `json:"lead"`
	// Windows are the band element's text, cut on element boundaries into
	// pieces of at most MaxWindow characters; joined they give it back.
	Windows []string `json:"windows"`
	// Counts are the elements inside the band.
	Counts Counts `json:"counts"`
}

// Text is the band element as written.
func (b Band) Text() string { return strings.Join(b.Windows, "") }

// Label names the band for people: "detail[1]", "groupHeader(city)[0]".
func (b Band) Label() string {
	s := b.Kind
	if b.Group != "" {
		s += "(" + b.Group + ")"
	}
	return s + "[" + strconv.Itoa(b.Index) + "]"
}

// Decomposition is a template taken apart into its header, its bands and
// the text after the last band.
type Decomposition struct {
	// Header is everything before the first band: the report's
	// properties, imports, styles, parameters, query, fields, variables
	// and the group declarations up to their first band.
	Header string `json:"header"`
	Bands  []Band `json:"bands"`
	// Tail is everything after the last band.
	Tail string `json:"tail"`
}

// Reassemble puts a decomposition back together; for an unedited one it
// gives the template's source byte for byte.
func (d Decomposition) Reassemble() []byte {
	n := len(d.Header) + len(d.Tail)
	for _, b := range d.Bands {
		n += len(b.Lead)
		for _, w := range b.Windows {
			n += len(w)
		}
	}
	out := make([]byte, 0, n)
	out = append(out, d.Header...)
	for _, b := range d.Bands {
		out = append(out, b.Lead...)
		for _, w := range b.Windows {
			out = append(out, w...)
		}
	}
	return append(out, d.Tail...)
}

// Bands returns the template's bands in document order, each with its
// section (and group), windows and counts.
func (d *Document) Bands() []Band {
	return d.Decompose().Bands
}

// bandElements are the band elements of the template's sections, in
// document order.
func (d *Document) bandElements() []*Element {
	var els []*Element
	d.Root.Walk(func(e *Element) bool {
		if e.Name == "band" && e.Parent != nil && isBandKind(e.Parent.Name) {
			els = append(els, e)
			return false
		}
		return true
	})
	return els
}

// Decompose takes the template apart into header, bands and tail.
func (d *Document) Decompose() Decomposition {
	els := d.bandElements()
	src := string(d.Source)
	if len(els) == 0 {
		return Decomposition{Header: src}
	}
	dec := Decomposition{Header: src[:els[0].Start], Tail: src[els[len(els)-1].End:]}
	seen := map[string]int{}
	for i, e := range els {
		b := Band{Kind: e.Parent.Name}
		if b.Kind == "groupHeader" || b.Kind == "groupFooter" {
			if g := e.Parent.Parent; g != nil {
				b.Group, _ = g.Attr("name")
			}
		}
		key := b.Kind + "\x00" + b.Group
		b.Index = seen[key]
		seen[key]++
		b.Line, _ = e.Pos()
		if i > 0 {
			b.Lead = src[els[i-1].End:e.Start]
		}
		b.Windows = windows(e, MaxWindow)
		b.Counts = countElements(e)
		dec.Bands = append(dec.Bands, b)
	}
	return dec
}

func isBandKind(name string) bool {
	for _, k := range bandKinds {
		if k == name {
			return true
		}
	}
	return false
}

// windows cuts e's text on element boundaries into pieces of at most max
// characters: its start tag and leading text, each child with the text
// after it, and its end tag are the pieces, a piece too large is cut
// into its own pieces, and pieces are packed greedily.
func windows(e *Element, max int) []string {
	var out []string
	var cur strings.Builder
	curLen := 0
	add := func(s string) {
		n := utf8.RuneCountInString(s)
		if curLen+n > max && curLen > 0 {
			out = append(out, cur.String())
			cur.Reset()
			curLen = 0
		}
		cur.WriteString(s)
		curLen += n
	}
	var pieces func(e *Element, end int)
	src := e.doc.Source
	// pieces adds e's text up to end (e.End plus the text after it that
	// belongs with it), split when it is too large.
	pieces = func(e *Element, end int) {
		whole := string(src[e.Start:end])
		if utf8.RuneCountInString(whole) <= max || len(e.Children) == 0 {
			add(whole)
			return
		}
		add(string(src[e.Start:e.Children[0].Start]))
		for i, c := range e.Children {
			cend := e.ContentEnd
			if i+1 < len(e.Children) {
				cend = e.Children[i+1].Start
			}
			pieces(c, cend)
		}
		add(string(src[e.ContentEnd:end]))
	}
	pieces(e, e.End)
	if curLen > 0 || len(out) == 0 {
		out = append(out, cur.String())
	}
	return out
}

// Counts are the elements under a band: all of them, and how many of
// each name.
type Counts struct {
	Total  int            `json:"total"`
	ByName map[string]int `json:"by_name"`
}

// countElements counts the elements under e (not e itself).
func countElements(e *Element) Counts {
	c := Counts{ByName: map[string]int{}}
	for _, ch := range e.Children {
		ch.Walk(func(x *Element) bool {
			c.Total++
			c.ByName[x.Name]++
			return true
		})
	}
	return c
}

// CountChange is how much the element count of after differs from that
// of before, as a fraction of before's (1 when before had none and after
// has some): the measure of how much an edit of a band changed.
func CountChange(before, after Counts) float64 {
	if before.Total == 0 {
		if after.Total == 0 {
			return 0
		}
		return 1
	}
	d := after.Total - before.Total
	if d < 0 {
		d = -d
	}
	return float64(d) / float64(before.Total)
}
