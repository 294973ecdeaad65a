package jrxml_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/report/internal/reporttest"
	"github.com/loomkit/loom/apps/report/jrxml"
)

// root is Base's root start tag, which hostile variants replace.
const root = `<jasperReport xmlns="http://jasperreports.sourceforge.net/jasperreports" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://jasperreports.sourceforge.net/jasperreports http://jasperreports.sourceforge.net/xsd/jasperreport.xsd" name="Orders"`

// TestRefusesExternal: a template that declares a DOCTYPE or entities,
// includes another file or names a schema elsewhere is refused by Parse,
// with the line of what is at fault, before any tool sees it.
func TestRefusesExternal(t *testing.T) {
	if !strings.Contains(Base, root) {
		t.Fatal("Base's root changed: update root")
	}
	decl := `<?xml version="1.0" encoding="UTF-8"?>` + "\n"
	body := Base[strings.Index(Base, "<jasperReport"):]
	for _, tc := range []struct {
		name, src string
		line      int
	}{
		{"parameter entity reading a file", decl + `<!DOCTYPE jasperReport [ <!ENTITY % p SYSTEM "file:///proc/self/environ"> %p; ]>` + "\n" + body, 2},
		{"external DOCTYPE", decl + `<!DOCTYPE jasperReport SYSTEM "file:///etc/passwd">` + "\n" + body, 2},
		{"billion laughs", decl + "<!DOCTYPE lolz [\n <!ENTITY lol \"lol\">\n <!ENTITY lol2 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">\n]>\n" + strings.Replace(body, "Orders 订单", "&lol2;", 1), 2},
		{"DOCTYPE over lines", decl + "\n<!DOCTYPE\njasperReport>\n" + body, 3},
		{"entity after the root", Base + `<!ENTITY x SYSTEM "file:///etc/hostname">`, strings.Count(Base, "\n") + 1},
		{"XInclude", strings.Replace(Base, "<title>", `<title><xi:include xmlns:xi="http://www.w3.org/2001/XInclude" href="file:///etc/passwd" parse="text"/>`, 1), strings.Count(Base[:strings.Index(Base, "<title>")], "\n") + 1},
		{"XInclude, 2003 namespace, default prefix", strings.Replace(Base, "<title>", "<title>\n<include xmlns=\"http://www.w3.org/2003/XInclude\" href=\"/etc/passwd\"/>", 1), strings.Count(Base[:strings.Index(Base, "<title>")], "\n") + 2},
		{"schemaLocation to a file", strings.Replace(Base, "http://jasperreports.sourceforge.net/xsd/jasperreport.xsd", "file:///etc/passwd", 1), 2},
		{"schemaLocation to another host", strings.Replace(Base, "http://jasperreports.sourceforge.net/xsd/jasperreport.xsd", "http://169.254.169.254/latest/meta-data", 1), 2},
		{"host as a prefix of another", strings.Replace(Base, "http://jasperreports.sourceforge.net/xsd/", "http://jasperreports.sourceforge.net.evil.example/", 1), 2},
		{"noNamespaceSchemaLocation", strings.Replace(Base, root, root+` xsi:noNamespaceSchemaLocation="/etc/shadow"`, 1), 2},
		{"another prefix for xsi", strings.Replace(Base, root, root+` xmlns:i="http://www.w3.org/2001/XMLSchema-instance" i:noNamespaceSchemaLocation="file:///etc/passwd"`, 1), 2},
		{"schemaLocation on an inner element", strings.Replace(Base, "<title>", `<title xsi:schemaLocation="urn:x file:///etc/passwd">`, 1), strings.Count(Base[:strings.Index(Base, "<title>")], "\n") + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := jrxml.Parse([]byte(tc.src))
			var p *jrxml.Problem
			if !errors.As(err, &p) {
				t.Fatalf("not refused with a problem: %v", err)
			}
			if p.Check != "external" || p.Severity != jrxml.Error || p.Line != tc.line {
				t.Errorf("problem %+v, want an external error at line %d", p, tc.line)
			}
			if strings.Contains(p.Error(), "passwd") && !strings.Contains(tc.name, "chemaLocation") && !strings.Contains(tc.name, "xsi") {
				t.Errorf("the problem repeats the path: %v", p)
			}
		})
	}
	// JasperReports' own schema locations, on the jasperreports and
	// jaspersoft hosts, are kept: they are never fetched.
	for _, loc := range []string{
		"http://jasperreports.sourceforge.net/jasperreports http://jasperreports.sourceforge.net/xsd/jasperreport.xsd",
		"http://jasperreports.sourceforge.net/jasperreports https://jasperreports.sourceforge.net/xsd/jasperreport.xsd http://www.jaspersoft.com/cvcomponent http://www.jaspersoft.com/cvcomponent/component.xsd",
	} {
		src := strings.Replace(Base, `xsi:schemaLocation="http://jasperreports.sourceforge.net/jasperreports http://jasperreports.sourceforge.net/xsd/jasperreport.xsd"`, `xsi:schemaLocation="`+loc+`"`, 1)
		if _, err := jrxml.Parse([]byte(src)); err != nil {
			t.Errorf("schemaLocation %q refused: %v", loc, err)
		}
	}
}

// TestSamplesPass: none of JasperReports' own templates is refused by
// Parse's limits or declarations, nor hits the size caps of Check.
func TestSamplesPass(t *testing.T) {
	for _, path := range reporttest.Samples(t) {
		doc, err := jrxml.Parse(readSample(t, path))
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		for _, p := range doc.Check() {
			if strings.Contains(p.Message, "out of range") || strings.Contains(p.Message, "larger than any page") {
				t.Errorf("%s: %v", path, p)
			}
		}
	}
}

// allocated is how many bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestParseLimits: a template past the byte, element or depth limits is
// refused, and refusing it costs little memory.
func TestParseLimits(t *testing.T) {
	many := func(n int) string {
		var b strings.Builder
		b.WriteString(root + "><detail><band height=\"20\">")
		for range n {
			b.WriteString("<line><reportElement x=\"0\" y=\"0\" width=\"1\" height=\"1\"/></line>")
		}
		b.WriteString("</band></detail></jasperReport>")
		return b.String()
	}
	deep := root + ">" + strings.Repeat("<frame>", 500) + strings.Repeat("</frame>", 500) + "</jasperReport>"
	for _, tc := range []struct {
		name, src, want string
		line            int
	}{
		{"too many elements", many(50000), fmt.Sprintf("more than %d elements", jrxml.MaxElements), 1},
		{"too deep", deep, fmt.Sprintf("more than %d deep", jrxml.MaxDepth), 1},
		{"too large", root + ">" + strings.Repeat("<!-- padding -->\n", jrxml.MaxBytes/17+1) + "</jasperReport>", "MiB a template may be", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			n := allocated(func() { _, err = jrxml.Parse([]byte(tc.src)) })
			var p *jrxml.Problem
			if !errors.As(err, &p) || p.Check != "limit" || !strings.Contains(p.Message, tc.want) || p.Line != tc.line {
				t.Fatalf("got %v, want a limit problem saying %q at line %d", err, tc.want, tc.line)
			}
			// the source itself is copied once by the conversion above
			if limit := uint64(len(tc.src)) + 32<<20; n > limit {
				t.Errorf("refusing it allocated %d MiB, more than %d MiB", n>>20, limit>>20)
			}
		})
	}
	// just under the limits is read
	if _, err := jrxml.Parse([]byte(many(jrxml.MaxElements/2 - 10))); err != nil {
		t.Errorf("%d elements: %v", jrxml.MaxElements-20, err)
	}
}

// TestSizeCaps: pages, bands, elements and fonts past the caps are
// errors of the structural checks, with or without pagination.
func TestSizeCaps(t *testing.T) {
	for _, tc := range []struct {
		name, old, new, check string
	}{
		{"page width", `pageWidth="595"`, `pageWidth="200000"`, "page"},
		{"page height", `pageHeight="842"`, `pageHeight="200000"`, "page"},
		{"negative margin", `leftMargin="20"`, `leftMargin="-50000"`, "page"},
		{"column count", `name="Orders"`, `name="Orders" columnCount="999999999999"`, "page"},
		{"band without pagination", `name="Orders"`, `name="Orders" isIgnorePagination="true"><!-- --`, ""},
		{"element width", `<reportElement x="0" y="0" width="555" height="30"/>`, `<reportElement x="0" y="0" width="900000" height="30"/>`, "bounds"},
		{"element offset", `<reportElement x="0" y="0" width="555" height="30"/>`, `<reportElement x="-900000" y="0" width="555" height="30"/>`, "bounds"},
		{"font size", `<font size="18" isBold="true"/>`, `<font size="100000" isBold="true"/>`, "value"},
		{"font size NaN", `<font size="18" isBold="true"/>`, `<font size="NaN" isBold="true"/>`, "value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(Base, tc.old, tc.new, 1)
			if tc.name == "band without pagination" {
				src = strings.Replace(strings.Replace(Base, `name="Orders"`, `name="Orders" isIgnorePagination="true"`, 1), `<band height="40">`, `<band height="100000">`, 1)
				tc.check = "band"
			}
			if src == Base {
				t.Fatal("the test's replacement did not apply")
			}
			doc, err := jrxml.Parse([]byte(src))
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, p := range jrxml.Errors(doc.Check()) {
				found = found || p.Check == tc.check
			}
			if !found {
				t.Errorf("no %s error in %v", tc.check, doc.Check())
			}
		})
	}
	doc, err := jrxml.Parse([]byte(Base))
	if err != nil {
		t.Fatal(err)
	}
	if errs := jrxml.Errors(doc.Check()); len(errs) > 0 {
		t.Errorf("Base has errors: %v", errs)
	}
}
