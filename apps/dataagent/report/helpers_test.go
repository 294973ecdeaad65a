package report_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// parsePage parses a page as a browser would and checks what every page
// must be: a <title>, no script, no event handler, nothing loaded or
// linked from elsewhere, and each SVG well-formed XML on its own.
func parsePage(t *testing.T, page []byte) *html.Node {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatalf("page does not parse: %v", err)
	}
	if len(find(doc, "title")) != 1 {
		t.Errorf("page has %d <title> elements, want 1", len(find(doc, "title")))
	}
	walk(doc, func(n *html.Node) {
		if n.Type != html.ElementNode {
			return
		}
		switch n.Data {
		case "script", "iframe", "object", "embed", "link", "base", "foreignObject", "foreignobject":
			t.Errorf("page has a <%s> element", n.Data)
		}
		for _, a := range n.Attr {
			key, val := strings.ToLower(a.Key), strings.ToLower(strings.TrimSpace(a.Val))
			if strings.HasPrefix(key, "on") {
				t.Errorf("<%s> has an event handler %s=%q", n.Data, a.Key, a.Val)
			}
			if key == "src" || key == "href" || key == "xlink:href" || key == "action" {
				if strings.HasPrefix(val, "http:") || strings.HasPrefix(val, "https:") || strings.HasPrefix(val, "//") || strings.HasPrefix(val, "javascript:") {
					t.Errorf("<%s> %s=%q points outside the page", n.Data, a.Key, a.Val)
				}
			}
		}
	})
	for i, svg := range svgSources(page) {
		dec := xml.NewDecoder(bytes.NewReader(svg))
		for {
			_, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Errorf("svg %d is not well-formed XML: %v", i, err)
				break
			}
		}
	}
	return doc
}

// svgSources are the <svg>…</svg> parts of a page as written.
func svgSources(page []byte) [][]byte {
	var out [][]byte
	for {
		i := bytes.Index(page, []byte("<svg"))
		if i < 0 {
			return out
		}
		j := bytes.Index(page[i:], []byte("</svg>"))
		if j < 0 {
			return append(out, page[i:])
		}
		out = append(out, page[i:i+j+len("</svg>")])
		page = page[i+j+len("</svg>"):]
	}
}

func walk(n *html.Node, f func(*html.Node)) {
	f(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, f)
	}
}

// find returns the elements named tag under n.
func find(n *html.Node, tag string) []*html.Node {
	var out []*html.Node
	walk(n, func(x *html.Node) {
		if x.Type == html.ElementNode && x.Data == tag {
			out = append(out, x)
		}
	})
	return out
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// textOf is the text under n.
func textOf(n *html.Node) string {
	var b strings.Builder
	walk(n, func(x *html.Node) {
		if x.Type == html.TextNode {
			b.WriteString(x.Data)
		}
	})
	return b.String()
}

// texts are the texts of the <text> elements of an svg.
func texts(svg *html.Node) []string {
	var out []string
	for _, t := range find(svg, "text") {
		out = append(out, textOf(t))
	}
	return out
}

// bars counts an svg's filled shapes drawn without a stroke in a series
// colour: the bars of a bar chart (the background is white, legend marks
// are stroked).
func bars(svg *html.Node) int {
	n := 0
	for _, p := range find(svg, "path") {
		style := attr(p, "style")
		if strings.HasPrefix(style, "stroke:none;fill:rgb(") {
			n++
		}
	}
	return n
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
