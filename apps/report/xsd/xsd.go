// Package xsd validates report templates against XML schemas with
// xmllint (Debian's libxml2-utils), the schemas named by configuration:
// Loom does not ship the JasperReports schemas. Each schema error comes
// back as a jrxml.Problem with the element, line and column.
package xsd

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/loomkit/loom/apps/report/jrxml"
)

// EnvSchemas is the environment variable that lists schema files,
// separated as PATH is (':' on Unix).
const EnvSchemas = "LOOM_JRXML_XSD"

// SchemasFromEnv are the schema files LOOM_JRXML_XSD names.
func SchemasFromEnv() []string {
	var out []string
	for _, p := range filepath.SplitList(os.Getenv(EnvSchemas)) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// ErrNoXmllint is returned when the xmllint program is not installed.
var ErrNoXmllint = errors.New("xmllint is not installed (Debian package libxml2-utils)")

// Validator validates templates against a set of schemas. With several
// schemas (the report schema and the components schema, say) a document
// is valid when it is valid against all of them together: each schema
// is imported for its target namespace into one wrapper schema.
type Validator struct {
	schema  string // the schema xmllint is given
	cleanup func()
}

// New prepares validation against the schema files, checking that each
// can be read and that xmllint is installed. Close removes what it wrote.
func New(schemas ...string) (*Validator, error) {
	if len(schemas) == 0 {
		return nil, errors.New("xsd: no schema files given")
	}
	if _, err := exec.LookPath("xmllint"); err != nil {
		return nil, ErrNoXmllint
	}
	type imp struct{ ns, path string }
	var imps []imp
	for _, s := range schemas {
		abs, err := filepath.Abs(s)
		if err != nil {
			return nil, fmt.Errorf("xsd: schema %s: %w", s, err)
		}
		ns, err := targetNamespace(abs)
		if err != nil {
			return nil, err
		}
		imps = append(imps, imp{ns, abs})
	}
	if len(imps) == 1 {
		return &Validator{schema: imps[0].path, cleanup: func() {}}, nil
	}
	dir, err := os.MkdirTemp("", "loom-xsd-")
	if err != nil {
		return nil, fmt.Errorf("xsd: wrapper schema: %w", err)
	}
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">` + "\n")
	for _, i := range imps {
		fmt.Fprintf(&b, "  <xs:import namespace=\"%s\" schemaLocation=\"%s\"/>\n", xmlEscape(i.ns), xmlEscape("file://"+filepath.ToSlash(i.path)))
	}
	b.WriteString("</xs:schema>\n")
	wrapper := filepath.Join(dir, "all.xsd")
	if err := os.WriteFile(wrapper, b.Bytes(), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("xsd: wrapper schema: %w", err)
	}
	return &Validator{schema: wrapper, cleanup: func() { os.RemoveAll(dir) }}, nil
}

// Close removes the wrapper schema, if New wrote one.
func (v *Validator) Close() error {
	v.cleanup()
	return nil
}

func xmlEscape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// targetNamespace reads the targetNamespace of the schema at path.
func targetNamespace(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("xsd: schema: %w", err)
	}
	defer f.Close()
	d := xml.NewDecoder(f)
	for {
		t, err := d.Token()
		if err != nil {
			return "", fmt.Errorf("xsd: schema %s: no schema element: %w", path, err)
		}
		if s, ok := t.(xml.StartElement); ok {
			if s.Name.Local != "schema" {
				return "", fmt.Errorf("xsd: %s is not a schema: its root is <%s>", path, s.Name.Local)
			}
			for _, a := range s.Attr {
				if a.Name.Local == "targetNamespace" {
					return a.Value, nil
				}
			}
			return "", nil
		}
	}
}

// errorLine matches xmllint's schema errors:
// "-:12: element band: Schemas validity error : Element '{ns}band': …".
var errorLine = regexp.MustCompile(`^[^:]*:(\d+): element ([^:]+): Schemas (?:validity|parser) error : (.*)$`)

// nsName shortens "{namespace}name" in xmllint's messages to "name".
var nsName = regexp.MustCompile(`\{[^}]*\}`)

// Validate validates the template doc. It returns the schema's
// complaints as problems (none when it is valid); the error is for
// xmllint failing to run at all.
func (v *Validator) Validate(ctx context.Context, doc *jrxml.Document) ([]jrxml.Problem, error) {
	cmd := exec.CommandContext(ctx, "xmllint", "--noout", "--nonet", "--schema", v.schema, "-")
	cmd.Stdin = bytes.NewReader(doc.Source)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return nil, fmt.Errorf("xsd: run xmllint: %w", err)
	}
	var out []jrxml.Problem
	for _, l := range strings.Split(stderr.String(), "\n") {
		m := errorLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		line, _ := strconv.Atoi(m[1])
		p := jrxml.Problem{Element: m[2], Line: line, Message: nsName.ReplaceAllString(m[3], ""), Severity: jrxml.Error, Check: "xsd",
			Hint: "the schema does not allow this: see the element's definition in the schema"}
		if strings.Contains(m[3], "This element is not expected") {
			p.Hint = "move or remove the element: the schema expects another here"
		}
		p.Column = column(doc, line, m[2])
		out = append(out, p)
	}
	if err != nil && len(out) == 0 {
		// xmllint refused without a line we understand: a broken schema
		return nil, fmt.Errorf("xsd: xmllint with %s: %s", v.schema, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// column finds the column of the element called name that starts on
// line, 0 when there is none.
func column(doc *jrxml.Document, line int, name string) int {
	col := 0
	doc.Root.Walk(func(e *jrxml.Element) bool {
		if col > 0 {
			return false
		}
		if l, c := e.Pos(); l == line && e.Name == name {
			col = c
		}
		return true
	})
	return col
}
