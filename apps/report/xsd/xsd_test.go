package xsd_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/report/internal/reporttest"
	"github.com/loomkit/loom/apps/report/jrxml"
	"github.com/loomkit/loom/apps/report/xsd"
	"github.com/loomkit/loom/internal/testenv"
)

func needXmllint(t *testing.T) {
	t.Helper()
	testenv.NeedProgram(t, "xmllint", "Debian package libxml2-utils")
}

func parse(t *testing.T, path string) *jrxml.Document {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jrxml.Parse(src)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc
}

// TestSamples validates the demo templates against the report schema
// alone (76 are valid: the rest use component extensions) and against it
// with the components schema (91), and the structural checks find no
// error in any file the report schema accepts.
func TestSamples(t *testing.T) {
	needXmllint(t)
	ctx := context.Background()
	alone, err := xsd.New(reporttest.Schema(t, "jasperreport.xsd"))
	if err != nil {
		t.Fatal(err)
	}
	defer alone.Close()
	both, err := xsd.New(reporttest.Schema(t, "jasperreport.xsd"), reporttest.Schema(t, "components.xsd"))
	if err != nil {
		t.Fatal(err)
	}
	defer both.Close()
	validAlone, validBoth := 0, 0
	for _, path := range reporttest.Samples(t) {
		name := filepath.Base(path)
		doc := parse(t, path)
		ps, err := alone.Validate(ctx, doc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, p := range ps {
			if p.Line == 0 || p.Element == "" || p.Check != "xsd" || p.Severity != jrxml.Error {
				t.Errorf("%s: schema problem without a place: %+v", name, p)
			}
		}
		if len(ps) == 0 {
			validAlone++
			if errs := jrxml.Errors(doc.Check()); len(errs) > 0 {
				t.Errorf("%s is valid, but the structural checks say %v", name, errs)
			}
		}
		ps, err = both.Validate(ctx, doc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(ps) == 0 {
			validBoth++
		}
	}
	if validAlone != 76 || validBoth != 91 {
		t.Errorf("%d valid against the report schema, %d with the components schema; want 76 and 91", validAlone, validBoth)
	}
}

// TestProblems: xmllint's complaints come back with element, line and
// column.
func TestProblems(t *testing.T) {
	needXmllint(t)
	v, err := xsd.New(reporttest.Schema(t, "jasperreport.xsd"))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	const src = `<?xml version="1.0" encoding="UTF-8"?>
<jasperReport xmlns="http://jasperreports.sourceforge.net/jasperreports" name="r">
	<queryString><![CDATA[SELECT a FROM t]]></queryString>
	<field name="a" class="java.lang.String"/>
	<detail>
		<band height="20">
			<staticText>
				<reportElement x="0" y="0" width="100" height="20"/>
				<text><![CDATA[a]]></text>
			</staticText>
		</band>
	</detail>
</jasperReport>
`
	for _, tc := range []struct{ old, new, element string }{
		{"\t<queryString><![CDATA[SELECT a FROM t]]></queryString>\n\t<field name=\"a\" class=\"java.lang.String\"/>", "\t<field name=\"a\" class=\"java.lang.String\"/>\n\t<queryString><![CDATA[SELECT a FROM t]]></queryString>", "queryString"},
		{`<reportElement x`, `<reportElement mode="Solid" x`, "reportElement"},
		{`name="r">`, `name="r" printOrder="Sideways">`, "jasperReport"},
	} {
		damaged := strings.Replace(src, tc.old, tc.new, 1)
		line := strings.Count(damaged[:strings.Index(damaged, "<"+tc.element)], "\n") + 1
		doc, err := jrxml.Parse([]byte(damaged))
		if err != nil {
			t.Fatal(err)
		}
		ps, err := v.Validate(context.Background(), doc)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) != 1 || ps[0].Element != tc.element || ps[0].Line != line || ps[0].Column == 0 || strings.Contains(ps[0].Message, "{") {
			t.Errorf("schema problems %+v, want one on <%s> at line %d", ps, tc.element, line)
		}
		// The structural checks find the same.
		errs := jrxml.Errors(doc.Check())
		if len(errs) != 1 || errs[0].Element != tc.element || errs[0].Line != line {
			t.Errorf("structural errors %+v, want one on <%s> at line %d", errs, tc.element, line)
		}
	}
	doc, err := jrxml.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if ps, err := v.Validate(context.Background(), doc); err != nil || len(ps) > 0 {
		t.Errorf("the undamaged template: %v, %v", ps, err)
	}
}

func TestConfig(t *testing.T) {
	t.Setenv(xsd.EnvSchemas, "/a/one.xsd:/b/two.xsd:")
	if got := xsd.SchemasFromEnv(); len(got) != 2 || got[1] != "/b/two.xsd" {
		t.Errorf("schemas %v", got)
	}
	if _, err := xsd.New(); err == nil {
		t.Error("no error without schemas")
	}
	needXmllint(t)
	if _, err := xsd.New(filepath.Join(t.TempDir(), "missing.xsd")); err == nil || !strings.Contains(err.Error(), "missing.xsd") {
		t.Errorf("error %v for a missing schema", err)
	}
}
