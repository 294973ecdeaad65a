// Package jrxml reads JasperReports 6.x report templates (JRXML) into a
// model that keeps every byte of the input: each element knows where it
// starts and ends in the original text, so comments, CDATA, unknown
// elements, attributes and namespaces are never lost and a template
// taken apart and put back together is the same, byte for byte.
//
// On top of the model it decomposes a template into its header and its
// bands, splits bands into windows small enough for a model to rewrite,
// counts the elements of each band, and checks a template's structure
// (declared references, sizes, required attributes, child order), each
// problem with the element, line and column it is about and a hint.
package jrxml

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/loomkit/loom/internal/text"
)

// Namespace is the JasperReports 6.x report namespace.
const Namespace = "http://jasperreports.sourceforge.net/jasperreports"

// Limits on what Parse reads, so that a hostile template costs little:
// the largest of JasperReports' 97 sample templates is 41 KB with about
// 520 elements nested 12 deep.
const (
	// MaxBytes is the largest template Parse reads (4 MiB).
	MaxBytes = 4 << 20
	// MaxElements is the most elements a template may have.
	MaxElements = 20000
	// MaxDepth is the deepest elements may nest.
	MaxDepth = 100
)

// xsiNamespace is the namespace of xsi:schemaLocation.
const xsiNamespace = "http://www.w3.org/2001/XMLSchema-instance"

// xincludeNamespaces are the namespaces of XInclude elements (libxml2
// reads both).
var xincludeNamespaces = []string{"http://www.w3.org/2001/XInclude", "http://www.w3.org/2003/XInclude"}

// schemaHosts are where a template's xsi:schemaLocation may point: the
// JasperReports schemas, as JasperReports' own templates name them. They
// are never fetched; any other location is refused.
var schemaHosts = []string{"jasperreports.sourceforge.net", "www.jaspersoft.com", "jaspersoft.com"}

// Element is one element of a template: its name, attributes and
// children, and where it lies in the document's source.
type Element struct {
	// Prefix is the namespace prefix as written ("" for none), Name the
	// local name.
	Prefix, Name string
	// Space is the namespace URL the prefix stands for where the element
	// is ("" for none).
	Space string
	// Attrs are the attributes as written: Name.Space holds the prefix,
	// not the namespace URL.
	Attrs []xml.Attr
	// Start and End are the byte offsets of the element's first '<' and
	// just after its last '>' in Document.Source.
	Start, End int
	// ContentStart and ContentEnd bound what lies between the start and
	// end tags (equal for an empty element).
	ContentStart, ContentEnd int
	// Parent is nil for the root.
	Parent   *Element
	Children []*Element
	doc      *Document
}

// Attr returns the value of the attribute with local name name, and
// whether it is there.
func (e *Element) Attr(name string) (string, bool) {
	for _, a := range e.Attrs {
		if a.Name.Local == name {
			return a.Value, true
		}
	}
	return "", false
}

// namespace resolves the element's prefix: from its parent's namespace
// when it declares none and has its parent's prefix, else from the
// nearest declaration.
func (e *Element) namespace() string {
	declares := false
	for _, a := range e.Attrs {
		if a.Name.Space == "xmlns" || a.Name.Space == "" && a.Name.Local == "xmlns" {
			declares = true
			break
		}
	}
	if !declares && e.Parent != nil && e.Parent.Prefix == e.Prefix {
		return e.Parent.Space
	}
	for x := e; x != nil; x = x.Parent {
		for _, a := range x.Attrs {
			if e.Prefix == "" && a.Name.Space == "" && a.Name.Local == "xmlns" || e.Prefix != "" && a.Name.Space == "xmlns" && a.Name.Local == e.Prefix {
				return a.Value
			}
		}
	}
	return ""
}

// Source is the element's text as written in the document.
func (e *Element) Source() []byte { return e.doc.Source[e.Start:e.End] }

// Pos returns the line and column (both from 1, the column in
// characters) where the element starts.
func (e *Element) Pos() (line, col int) { return e.doc.Pos(e.Start) }

// Child returns the first child with local name name, or nil.
func (e *Element) Child(name string) *Element {
	for _, c := range e.Children {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Text is the character data directly inside the element, entities
// decoded and CDATA sections unwrapped; the text of child elements is
// not included.
func (e *Element) Text() string {
	inner := e.doc.Source[e.ContentStart:e.ContentEnd]
	if bytes.IndexByte(inner, '<') < 0 && bytes.IndexByte(inner, '&') < 0 {
		return string(inner)
	}
	var b strings.Builder
	d := xml.NewDecoder(bytes.NewReader(inner))
	d.Strict = false
	depth := 0
	for {
		t, err := d.RawToken()
		if err != nil {
			break
		}
		switch t := t.(type) {
		case xml.StartElement:
			depth++
		case xml.EndElement:
			depth--
		case xml.CharData:
			if depth == 0 {
				b.Write(t)
			}
		}
	}
	return b.String()
}

// Walk calls f for e and each element under it, in document order, and
// does not descend below an element for which f returns false.
func (e *Element) Walk(f func(*Element) bool) {
	if !f(e) {
		return
	}
	for _, c := range e.Children {
		c.Walk(f)
	}
}

// Document is a parsed template: its source, kept as given, and the tree
// of its elements over it.
type Document struct {
	// Source is the template as given; the model only indexes it.
	Source []byte
	// Root is the document element (jasperReport for a template).
	Root *Element
	// lines holds the offset at which each line after the first starts.
	lines []int
}

// Pos returns the line and column, both counted from 1 and the column in
// characters, of byte offset off in the source.
func (d *Document) Pos(off int) (line, col int) {
	i := sort.SearchInts(d.lines, off+1) // lines starting at or before off
	start := 0
	if i > 0 {
		start = d.lines[i-1]
	}
	if off > len(d.Source) {
		off = len(d.Source)
	}
	return i + 1, utf8.RuneCount(d.Source[start:off]) + 1
}

// Parse reads a template. It refuses input that is not well-formed XML
// with a *Problem naming the element at fault and its line: an unclosed
// or mismatched tag, a truncated file, a syntax error. It also refuses,
// the same way, a template that could make a tool read anything but
// itself: a DOCTYPE or any other declaration (entities are declared in
// one), an XInclude element, or an xsi:schemaLocation other than the
// JasperReports schemas; and one past MaxBytes, MaxElements or MaxDepth,
// stopping there.
func Parse(src []byte) (*Document, error) {
	if len(src) > MaxBytes {
		return nil, &Problem{Line: 1, Column: 1, Severity: Error, Check: "limit",
			Message: fmt.Sprintf("the template is %.1f MiB, more than the %d MiB a template may be", float64(len(src))/(1<<20), MaxBytes>>20),
			Hint:    "a report template is a few kilobytes: remove what it does not need"}
	}
	doc := &Document{Source: src}
	for i := 0; ; {
		j := bytes.IndexByte(src[i:], '\n')
		if j < 0 {
			break
		}
		i += j + 1
		doc.lines = append(doc.lines, i)
	}
	d := xml.NewDecoder(bytes.NewReader(src))
	d.Strict = true
	// Offsets must be those of the source: any declared encoding is read
	// as it is (the samples and Loom's own output are UTF-8).
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	var stack []*Element
	selfClosing := false
	elements := 0
	for {
		off := int(d.InputOffset())
		t, err := d.RawToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, doc.syntaxProblem(err, off, stack)
		}
		switch t := t.(type) {
		case xml.Directive:
			return nil, doc.declarationProblem(off, t)
		case xml.StartElement:
			elements++
			if elements > MaxElements {
				return nil, doc.limitProblem(off, t.Name.Local, "the template has more than %d elements", "a report template has a few hundred: split it into subreports", MaxElements)
			}
			if len(stack) >= MaxDepth {
				return nil, doc.limitProblem(off, t.Name.Local, "elements nest more than %d deep here", "flatten the frames and element groups", MaxDepth)
			}
			end := int(d.InputOffset())
			e := &Element{Prefix: t.Name.Space, Name: t.Name.Local, Attrs: t.Attr, Start: off, ContentStart: end, doc: doc}
			if len(stack) == 0 {
				if doc.Root != nil {
					return nil, doc.problemAt(off, e.Name, "a second document element <%s> after <%s>", "a template has one root element, jasperReport", e.Name, doc.Root.Name)
				}
				doc.Root = e
			} else {
				e.Parent = stack[len(stack)-1]
				e.Parent.Children = append(e.Parent.Children, e)
			}
			e.Space = e.namespace()
			if p := doc.external(e); p != nil {
				return nil, p
			}
			stack = append(stack, e)
			selfClosing = end >= 2 && src[end-2] == '/'
		case xml.EndElement:
			if len(stack) == 0 {
				return nil, doc.problemAt(off, t.Name.Local, "</%s> closes nothing", "remove the stray end tag", qname(t.Name.Space, t.Name.Local))
			}
			top := stack[len(stack)-1]
			if selfClosing {
				top.ContentEnd, top.End = top.ContentStart, top.ContentStart
				selfClosing = false
			} else {
				if t.Name.Local != top.Name || t.Name.Space != top.Prefix {
					l, _ := top.Pos()
					return nil, doc.problemAt(off, top.Name, "</%s> closes <%s> opened at line %d",
						"close <"+top.Name+"> before </"+qname(t.Name.Space, t.Name.Local)+">, or remove the stray end tag",
						qname(t.Name.Space, t.Name.Local), qname(top.Prefix, top.Name), l)
				}
				top.ContentEnd, top.End = off, int(d.InputOffset())
			}
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) == 0 && len(bytes.TrimSpace(t)) > 0 {
				return nil, doc.problemAt(off, "", "text outside the document element", "remove it: a template is one jasperReport element")
			}
		}
	}
	if len(stack) > 0 {
		open := stack[len(stack)-1]
		return nil, doc.problemAt(open.Start, open.Name, "<%s> is never closed: the file ends inside it",
			"the file may be truncated; close <"+open.Name+"> and the elements around it", qname(open.Prefix, open.Name))
	}
	if doc.Root == nil {
		return nil, &Problem{Line: 1, Column: 1, Message: "no document element", Hint: "a template is one jasperReport element", Severity: Error, Check: "syntax"}
	}
	return doc, nil
}

// declarationProblem refuses a declaration: <!DOCTYPE …>, <!ENTITY …>
// or any other. Go's decoder ignores them, but other tools (xmllint)
// resolve the entities they declare, which may read local files.
func (d *Document) declarationProblem(off int, dir xml.Directive) *Problem {
	word := strings.TrimLeftFunc(string(dir), unicode.IsSpace)
	if i := strings.IndexFunc(word, func(r rune) bool { return !unicode.IsLetter(r) }); i >= 0 {
		word = word[:i]
	}
	word = text.Clip(strings.ToUpper(word), 20)
	line, col := d.Pos(off)
	return &Problem{Line: line, Column: col, Severity: Error, Check: "external",
		Message: "a template may not declare a DOCTYPE or entities",
		Hint:    "remove the <!" + word + " …> declaration: a template stands alone, and tools must not read other files for it"}
}

// external refuses what in element e could make a tool read something
// else: an XInclude element, or a schema location that is not one of the
// JasperReports schemas.
func (d *Document) external(e *Element) *Problem {
	if slices.Contains(xincludeNamespaces, e.Space) {
		return d.externalProblem(e, "<%s> is an XInclude, which would pull in another file", "remove it: a template stands alone", qname(e.Prefix, e.Name))
	}
	for _, a := range e.Attrs {
		if a.Name.Space == "" || a.Name.Space == "xmlns" || e.lookup(a.Name.Space) != xsiNamespace {
			continue
		}
		switch a.Name.Local {
		case "schemaLocation", "noNamespaceSchemaLocation":
			fields := strings.Fields(a.Value)
			for i, f := range fields {
				if a.Name.Local == "schemaLocation" && i%2 == 0 {
					continue // a namespace, not a location
				}
				if !jasperSchema(f) {
					return d.externalProblem(e, "%s:%s points to %q, which is not a JasperReports schema",
						"remove the attribute, or point it to http://jasperreports.sourceforge.net/xsd/jasperreport.xsd", a.Name.Space, a.Name.Local, text.Clip(f, 80))
				}
			}
		}
	}
	return nil
}

// jasperSchema reports whether loc is the address of a schema on one of
// schemaHosts.
func jasperSchema(loc string) bool {
	rest, ok := strings.CutPrefix(loc, "http://")
	if !ok {
		rest, ok = strings.CutPrefix(loc, "https://")
	}
	if !ok {
		return false
	}
	host, _, _ := strings.Cut(rest, "/")
	return slices.Contains(schemaHosts, host)
}

// lookup is the namespace prefix stands for at e, "" when undeclared.
func (e *Element) lookup(prefix string) string {
	for x := e; x != nil; x = x.Parent {
		for _, a := range x.Attrs {
			if a.Name.Space == "xmlns" && a.Name.Local == prefix {
				return a.Value
			}
		}
	}
	return ""
}

func (d *Document) externalProblem(e *Element, format, hint string, args ...any) *Problem {
	line, col := d.Pos(e.Start)
	return &Problem{Element: e.Name, Line: line, Column: col, Severity: Error, Check: "external", Message: fmt.Sprintf(format, args...), Hint: hint}
}

func (d *Document) limitProblem(off int, elem, format, hint string, args ...any) *Problem {
	p := d.problemAt(off, elem, format, hint, args...)
	p.Check = "limit"
	return p
}

// syntaxProblem turns a decoder error at offset off, with stack open,
// into a Problem naming the element it is in or at.
func (d *Document) syntaxProblem(err error, off int, stack []*Element) *Problem {
	name := ""
	if off < len(d.Source) && d.Source[off] == '<' {
		rest := d.Source[off+1:]
		n := bytes.IndexAny(rest, " \t\r\n/>")
		if n < 0 {
			n = len(rest)
		}
		name = string(rest[:n])
	}
	if (name == "" || strings.HasPrefix(name, "/") || strings.HasPrefix(name, "!") || strings.HasPrefix(name, "?")) && len(stack) > 0 {
		name = stack[len(stack)-1].Name
	}
	msg := err.Error()
	var se *xml.SyntaxError
	if errors.As(err, &se) {
		msg = se.Msg
	}
	hint := "fix the XML syntax at this point"
	if strings.Contains(msg, "unexpected EOF") {
		hint = "the file ends in the middle of a tag: it may be truncated"
		if len(stack) > 0 {
			name = stack[len(stack)-1].Name
		}
	}
	// the position is where the token at fault starts (an unterminated
	// CDATA section, say), not where the decoder gave up
	return d.problemAt(off, name, "%s", hint, msg)
}

// problemAt is an error-level Problem at byte offset off.
func (d *Document) problemAt(off int, elem, format, hint string, args ...any) *Problem {
	line, col := d.Pos(off)
	return &Problem{Element: elem, Line: line, Column: col, Message: fmt.Sprintf(format, args...), Hint: hint, Severity: Error, Check: "syntax"}
}

func qname(prefix, local string) string {
	if prefix == "" {
		return local
	}
	return prefix + ":" + local
}
