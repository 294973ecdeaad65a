package jrxml_test

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/loomkit/loom/apps/report/internal/reporttest"
	"github.com/loomkit/loom/apps/report/jrxml"
)

// elementCount counts the elements of src with the standard decoder, as
// an independent measure of what the model indexed.
func elementCount(t testing.TB, src string) int {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(src))
	n := 0
	for {
		tok, err := d.Token()
		if err != nil {
			break
		}
		if _, ok := tok.(xml.StartElement); ok {
			n++
		}
	}
	return n
}

func readSample(t testing.TB, path string) []byte {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// TestSamples parses every demo template, takes it apart into header and
// bands and puts it back together byte for byte; the windows and counts
// of every band are checked against the band's own text.
func TestSamples(t *testing.T) {
	paths := reporttest.Samples(t)
	if len(paths) != 97 {
		t.Errorf("%d samples, want 97", len(paths))
	}
	kinds := map[string]int{}
	for _, path := range paths {
		name := filepath.Base(path)
		src := readSample(t, path)
		doc, err := jrxml.Parse(src)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if doc.Root.Name != "jasperReport" {
			t.Errorf("%s: root %s", name, doc.Root.Name)
		}
		all := 0
		doc.Root.Walk(func(*jrxml.Element) bool { all++; return true })
		if want := elementCount(t, string(src)); all != want {
			t.Errorf("%s: model has %d elements, the decoder sees %d", name, all, want)
		}
		dec := doc.Decompose()
		if got := dec.Reassemble(); !bytes.Equal(got, src) {
			t.Errorf("%s: reassembled text differs from the source (%d bytes, want %d)", name, len(got), len(src))
		}
		if len(dec.Bands) == 0 && !bytes.Contains(src, []byte("<part")) {
			t.Errorf("%s: no bands (and no book parts)", name)
		}
		if strings.Contains(dec.Header, "<band") && !strings.Contains(dec.Header, "<!--") && !strings.Contains(dec.Header, "CDATA") {
			t.Errorf("%s: a band in the header", name)
		}
		for _, b := range dec.Bands {
			kinds[b.Kind]++
			text := b.Text()
			if !strings.HasPrefix(text, "<band") || !strings.HasSuffix(text, ">") {
				t.Errorf("%s %s: band text %.40q…", name, b.Label(), text)
			}
			if want := elementCount(t, text) - 1; b.Counts.Total != want {
				t.Errorf("%s %s: counted %d elements, want %d", name, b.Label(), b.Counts.Total, want)
			}
			for i, w := range b.Windows {
				if n := utf8.RuneCountInString(w); n > jrxml.MaxWindow {
					t.Errorf("%s %s: window %d has %d characters", name, b.Label(), i, n)
				}
				if i > 0 && !strings.HasPrefix(w, "<") {
					t.Errorf("%s %s: window %d does not start on an element: %.30q", name, b.Label(), i, w)
				}
			}
			if (b.Kind == "groupHeader" || b.Kind == "groupFooter") && b.Group == "" {
				t.Errorf("%s %s: no group name", name, b.Label())
			}
		}
	}
	for _, k := range jrxml.BandKinds() {
		if kinds[k] == 0 && k != "noData" { // no demo has a noData band; TestWindows has one
			t.Errorf("no sample has a %s band", k)
		}
	}
	t.Logf("bands by kind over the samples: %v", kinds)
}

// bigTemplate is a template with a detail band of n text fields, a
// group, and comments and CDATA the model must keep.
func bigTemplate(n int) []byte {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<!-- a comment before the root -->
<jasperReport xmlns="http://jasperreports.sourceforge.net/jasperreports" xmlns:x="urn:other" name="big" pageWidth="595" pageHeight="842" columnWidth="555" leftMargin="20" rightMargin="20" topMargin="20" bottomMargin="20">
	<x:unknown keep="me"><![CDATA[kept <as> is]]></x:unknown>
	<queryString><![CDATA[SELECT id, name FROM t]]></queryString>
	<field name="id" class="java.lang.Integer"/>
	<field name="name" class="java.lang.String"/>
	<group name="byId">
		<groupExpression><![CDATA[$F{id}]]></groupExpression>
		<groupHeader><band height="20"><staticText><reportElement x="0" y="0" width="100" height="20"/><text><![CDATA[组 &amp; group]]></text></staticText></band></groupHeader>
	</group>
	<detail>
		<band height="800">
`)
	for i := range n {
		fmt.Fprintf(&b, "\t\t\t<textField><reportElement x=\"0\" y=\"%d\" width=\"200\" height=\"10\"/><textFieldExpression><![CDATA[$F{name} + \" %d\"]]></textFieldExpression></textField>\n", i%80*10, i)
	}
	b.WriteString("\t\t</band>\n\t</detail>\n\t<noData><band height=\"10\"/></noData>\n</jasperReport>\n<!-- after -->\n")
	return []byte(b.String())
}

// TestWindows cuts a large band on element boundaries and puts an edited
// window back.
func TestWindows(t *testing.T) {
	src := bigTemplate(400)
	doc, err := jrxml.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	dec := doc.Decompose()
	if len(dec.Bands) != 3 || dec.Bands[0].Kind != "groupHeader" || dec.Bands[0].Group != "byId" || dec.Bands[1].Kind != "detail" {
		t.Fatalf("bands %+v", dec.Bands)
	}
	if !strings.Contains(dec.Header, "<field name=\"name\"") || !strings.Contains(dec.Header, "x:unknown") {
		t.Errorf("header lacks the declarations: %q", dec.Header)
	}
	detail := dec.Bands[1]
	if len(detail.Windows) < 10 {
		t.Fatalf("%d windows for a %d-character band", len(detail.Windows), len(detail.Text()))
	}
	for i, w := range detail.Windows[1:] {
		if !strings.HasPrefix(w, "<textField>") && w != "</band>" {
			t.Errorf("window %d starts %.20q", i+1, w)
		}
	}
	if detail.Counts.Total != 1200 || detail.Counts.ByName["textField"] != 400 {
		t.Errorf("counts %d, %d text fields", detail.Counts.Total, detail.Counts.ByName["textField"])
	}
	if !bytes.Equal(dec.Reassemble(), src) {
		t.Fatal("not reassembled byte for byte")
	}
	// An edit of one window reassembles into a template with the edit.
	detail.Windows[3] = strings.Replace(detail.Windows[3], `width="200"`, `width="150"`, 1)
	dec.Bands[1] = detail
	edited, err := jrxml.Parse(dec.Reassemble())
	if err != nil {
		t.Fatal(err)
	}
	after := edited.Bands()[1].Counts
	if c := jrxml.CountChange(detail.Counts, after); c != 0 {
		t.Errorf("count change %v after moving an element", c)
	}
	if bytes.Count(edited.Source, []byte(`width="150"`)) != 1 {
		t.Error("the edit is not in the reassembled template")
	}
	// Dropping a fifth of the fields is a 20% change.
	less := detail.Counts
	less.Total -= 240
	if c := jrxml.CountChange(detail.Counts, less); c != 0.2 {
		t.Errorf("count change %v, want 0.2", c)
	}
	if nd := dec.Bands[2]; nd.Kind != "noData" || nd.Lead != "\n\t</detail>\n\t<noData>" || nd.Counts.Total != 0 {
		t.Errorf("noData band %+v", nd)
	}
}

// TestElementModel reads attributes, text and positions.
func TestElementModel(t *testing.T) {
	doc, err := jrxml.Parse(bigTemplate(3))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := doc.Root.Attr("pageWidth"); v != "595" {
		t.Errorf("pageWidth %q", v)
	}
	u := doc.Root.Child("unknown")
	if u == nil || u.Prefix != "x" || u.Text() != "kept <as> is" {
		t.Fatalf("unknown element %+v", u)
	}
	if l, c := u.Pos(); l != 4 || c != 2 {
		t.Errorf("unknown element at %d:%d, want 4:2", l, c)
	}
	var st *jrxml.Element
	doc.Root.Walk(func(e *jrxml.Element) bool {
		if e.Name == "text" {
			st = e
		}
		return st == nil
	})
	if st == nil || st.Text() != "组 &amp; group" {
		t.Errorf("CDATA text %q", st.Text())
	}
	if l, c := doc.Pos(bytes.Index(doc.Source, []byte("<text>"))); l != 10 || c != 98 {
		t.Errorf("<text> at %d:%d", l, c)
	}
}

// TestMalformed refuses input that is not well-formed with the element
// and its line.
func TestMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, src, element string
		line               int
	}{
		{"unclosed", "<jasperReport name=\"r\">\n<title>\n<band height=\"10\">\n</title>\n</jasperReport>", "band", 4},
		{"truncated", "<jasperReport name=\"r\">\n<title>\n<band height=\"10\">\n<staticText><reportEl", "staticText", 4},
		{"end of file", "<jasperReport name=\"r\">\n<title>\n", "title", 2},
		{"two roots", "<jasperReport name=\"r\"/>\n<jasperReport name=\"s\"/>", "jasperReport", 2},
		{"empty", "", "", 1},
	} {
		_, err := jrxml.Parse([]byte(tc.src))
		p, ok := err.(*jrxml.Problem)
		if !ok {
			t.Errorf("%s: error %v", tc.name, err)
			continue
		}
		if p.Element != tc.element || p.Line != tc.line {
			t.Errorf("%s: %v, want <%s> at line %d", tc.name, p, tc.element, tc.line)
		}
	}
}

func largest(b *testing.B) []byte {
	var big []byte
	for _, p := range reporttest.Samples(b) {
		if src := readSample(b, p); len(src) > len(big) {
			big = src
		}
	}
	return big
}

// BenchmarkParseLarge parses the largest sample and a 70 KB template.
func BenchmarkParseLarge(b *testing.B) {
	for _, in := range []struct {
		name string
		src  []byte
	}{{"largest-sample", largest(b)}, {"70KB", bigTemplate(470)}} {
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(in.src)))
			for b.Loop() {
				if _, err := jrxml.Parse(in.src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRoundTrip parses, decomposes and reassembles the largest
// sample.
func BenchmarkRoundTrip(b *testing.B) {
	src := largest(b)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		doc, err := jrxml.Parse(src)
		if err != nil {
			b.Fatal(err)
		}
		if len(doc.Decompose().Reassemble()) != len(src) {
			b.Fatal("length differs")
		}
	}
}
