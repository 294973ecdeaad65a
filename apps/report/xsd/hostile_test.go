package xsd_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/report/internal/reporttest"
	"github.com/loomkit/loom/apps/report/jrxml"
	"github.com/loomkit/loom/apps/report/xsd"
)

// plain is a valid template, with a comment that hostile variants fill.
const plain = `<?xml version="1.0" encoding="UTF-8"?>
<jasperReport xmlns="http://jasperreports.sourceforge.net/jasperreports" name="r">
	<detail>
		<band height="20"><!-- HERE --></band>
	</detail>
</jasperReport>
`

// TestNoFileRead: a template that would make xmllint read a file is
// refused before xmllint runs, even when the document handed to
// Validate did not come from jrxml.Parse; and nothing xmllint prints
// reaches the problems as it is.
func TestNoFileRead(t *testing.T) {
	needXmllint(t)
	canary := "LOOM_CANARY_" + fmt.Sprint(os.Getpid())
	path := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(path, []byte("SECRET="+canary+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := xsd.New(reporttest.Schema(t, "jasperreport.xsd"), reporttest.Schema(t, "components.xsd"))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	doc, err := jrxml.Parse([]byte(plain))
	if err != nil {
		t.Fatal(err)
	}
	body := plain[strings.Index(plain, "<jasperReport"):]
	for _, tc := range []struct{ name, src string }{
		{"parameter entity", `<?xml version="1.0"?>` + "\n" + `<!DOCTYPE jasperReport [ <!ENTITY % p SYSTEM "file://` + path + `"> %p; ]>` + "\n" + body},
		{"general entity", `<?xml version="1.0"?>` + "\n" + `<!DOCTYPE jasperReport [ <!ENTITY x SYSTEM "file://` + path + `"> ]>` + "\n" + strings.Replace(body, "<!-- HERE -->", "&x;", 1)},
		{"XInclude", strings.Replace(plain, "<!-- HERE -->", `<xi:include xmlns:xi="http://www.w3.org/2001/XInclude" href="file://`+path+`" parse="text"/>`, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile := *doc
			hostile.Source = []byte(tc.src) // as if built without Parse
			ps, err := v.Validate(context.Background(), &hostile)
			if err != nil {
				t.Fatal(err)
			}
			if len(ps) != 1 || ps[0].Check != "external" {
				t.Errorf("problems %+v, want the declaration refused", ps)
			}
			if text := fmt.Sprint(ps); strings.Contains(text, canary) || strings.Contains(text, "SECRET") {
				t.Errorf("the file's content reached the problems: %s", text)
			}
		})
	}
	// a template Parse accepts but xmllint cannot read: the problem is
	// Loom's, with the line, and none of what xmllint echoed of it
	src := strings.Replace(strings.Replace(plain, "UTF-8", "ISO-2022-JP", 1), "<!-- HERE -->", "<!-- "+canary+" \u00e9 -->", 1)
	doc, err = jrxml.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := v.Validate(context.Background(), doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || ps[0].Line != 4 || ps[0].Check != "xsd" || !strings.Contains(ps[0].Message, "could not read the template at line 4") || strings.Contains(fmt.Sprint(ps), canary) {
		t.Errorf("problems %+v, want one of Loom's at line 4", ps)
	}
}

// TestNoLeftovers: the wrapper schema's temporary folder is gone after
// each validation, valid or not.
func TestNoLeftovers(t *testing.T) {
	needXmllint(t)
	v, err := xsd.New(reporttest.Schema(t, "jasperreport.xsd"), reporttest.Schema(t, "components.xsd"))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	for _, src := range []string{plain, strings.Replace(plain, `name="r"`, `name="r" printOrder="Sideways"`, 1)} {
		doc, err := jrxml.Parse([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.Validate(context.Background(), doc); err != nil {
			t.Fatal(err)
		}
	}
	left, err := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("loom-xsd-%d-*", os.Getpid())))
	if err != nil || len(left) > 0 {
		t.Errorf("left behind: %v %v", left, err)
	}
}

// TestBrokenSchema: schemas that do not compile are refused by New.
func TestBrokenSchema(t *testing.T) {
	needXmllint(t)
	path := filepath.Join(t.TempDir(), "bad.xsd")
	if err := os.WriteFile(path, []byte(`<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"><xs:element name="a" type="nope"/></xs:schema>`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := xsd.New(path); err == nil || !strings.Contains(err.Error(), "do not compile") {
		t.Errorf("error %v for a schema that does not compile", err)
	}
}
