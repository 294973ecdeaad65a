// Package xsd validates report templates against XML schemas with
// xmllint (Debian's libxml2-utils), the schemas named by configuration:
// Loom does not ship the JasperReports schemas. Each schema error comes
// back as a jrxml.Problem with the element, line and column. xmllint
// runs on a leash (internal/leash): time, CPU and memory limits, no
// network, no catalogs, and only templates jrxml.Parse accepts, which
// cannot make it read any other file.
package xsd

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/loomkit/loom/apps/report/jrxml"
	"github.com/loomkit/loom/internal/leash"
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

// Limits of one xmllint run: validating the largest sample takes
// 8 MB and 20 ms.
var limits = leash.Limits{Wall: 20 * time.Second, CPU: 10 * time.Second, Memory: 512 << 20, Output: 64 << 10}

// Validator validates templates against a set of schemas. With several
// schemas (the report schema and the components schema, say) a document
// is valid when it is valid against all of them together: each schema
// is imported for its target namespace into one wrapper schema, written
// for each validation into a temporary folder removed after it.
type Validator struct {
	schemas []string // absolute paths
	wrapper []byte   // the wrapper schema, nil for one schema
	log     *slog.Logger
}

// New prepares validation against the schema files, checking that each
// can be read, that xmllint is installed and that the schemas compile.
func New(schemas ...string) (*Validator, error) {
	if len(schemas) == 0 {
		return nil, errors.New("xsd: no schema files given")
	}
	if _, err := exec.LookPath("xmllint"); err != nil {
		return nil, ErrNoXmllint
	}
	v := &Validator{log: slog.Default()}
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">` + "\n")
	for _, s := range schemas {
		abs, err := filepath.Abs(s)
		if err != nil {
			return nil, fmt.Errorf("xsd: schema %s: %w", s, err)
		}
		ns, err := targetNamespace(abs)
		if err != nil {
			return nil, err
		}
		v.schemas = append(v.schemas, abs)
		u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
		fmt.Fprintf(&b, "  <xs:import namespace=\"%s\" schemaLocation=\"%s\"/>\n", xmlEscape(ns), xmlEscape(u.String()))
	}
	b.WriteString("</xs:schema>\n")
	if len(v.schemas) > 1 {
		v.wrapper = b.Bytes()
	}
	// a document no schema declares: xmllint says so (exit status 3),
	// or that the schemas do not compile (5)
	res, err := v.run(context.Background(), []byte("<loom-schema-check/>"))
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 3 {
		return nil, fmt.Errorf("xsd: the schemas %s do not compile (xmllint exit status %d): %s", strings.Join(v.schemas, ", "), res.ExitCode, firstLines(res.Stderr, 3))
	}
	return v, nil
}

// Close releases the validator. It holds no files between validations,
// so there is nothing to remove; Close is there for callers that close
// what they open.
func (v *Validator) Close() error { return nil }

// run runs xmllint on src under limits: no network, no catalogs, no
// environment of the server's, and the schemas its only other files.
func (v *Validator) run(ctx context.Context, src []byte) (*leash.Result, error) {
	schema := v.schemas[0]
	if v.wrapper != nil {
		dir, err := leash.TempDir("xsd")
		if err != nil {
			return nil, fmt.Errorf("xsd: %w", err)
		}
		defer os.RemoveAll(dir)
		schema = filepath.Join(dir, "all.xsd")
		if err := os.WriteFile(schema, v.wrapper, 0o600); err != nil {
			return nil, fmt.Errorf("xsd: writing the wrapper schema: %w", err)
		}
	}
	res, err := leash.Run(ctx, limits, leash.Cmd{
		Name:  "xmllint",
		Args:  []string{"--noout", "--nonet", "--nocatalogs", "--schema", schema, "-"},
		Stdin: bytes.NewReader(src),
		Env:   []string{"XML_CATALOG_FILES="},
	})
	if err != nil {
		return nil, fmt.Errorf("xsd: %w", err)
	}
	return res, nil
}

// firstLines is up to n lines of b, for a log or an operator's error.
func firstLines(b []byte, n int) string {
	lines := strings.SplitN(strings.TrimSpace(string(b)), "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "; ")
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

// errorLine matches xmllint's schema errors about the template (read
// from standard input, "-"):
// "-:12: element band: Schemas validity error : Element '{ns}band': …".
var errorLine = regexp.MustCompile(`^-:(\d+): element ([^:\s]+): Schemas validity error : (.*)$`)

// parserLine matches xmllint's complaints about reading the template:
// "-:3: parser error : …", "-:3: namespace error : …".
var parserLine = regexp.MustCompile(`^-:(\d+): [a-zA-Z ]*error`)

// nsName shortens "{namespace}name" in xmllint's messages to "name".
var nsName = regexp.MustCompile(`\{[^}]*\}`)

// Validate validates the template doc. It returns the schema's
// complaints as problems (none when it is valid); the error is for
// xmllint failing to run at all, or running past its limits.
//
// xmllint sees only what jrxml.Parse accepts, so no template makes it
// read another file; and what it prints never reaches the problems as
// it is: a schema error becomes a problem with the element, line, column
// and the schema's message, anything else a problem in Loom's words.
func (v *Validator) Validate(ctx context.Context, doc *jrxml.Document) ([]jrxml.Problem, error) {
	// the document may not have come from Parse: read it again
	if _, err := jrxml.Parse(doc.Source); err != nil {
		var p *jrxml.Problem
		if errors.As(err, &p) {
			return []jrxml.Problem{*p}, nil
		}
		return nil, fmt.Errorf("xsd: %w", err)
	}
	res, err := v.run(ctx, doc.Source)
	if err != nil {
		return nil, err
	}
	var out []jrxml.Problem
	unread := 0 // the first line xmllint could not read, 0 for none
	for _, l := range strings.Split(string(res.Stderr), "\n") {
		if m := errorLine.FindStringSubmatch(l); m != nil {
			line, _ := strconv.Atoi(m[1])
			p := jrxml.Problem{Element: m[2], Line: line, Message: nsName.ReplaceAllString(m[3], ""), Severity: jrxml.Error, Check: "xsd",
				Hint: "the schema does not allow this: see the element's definition in the schema"}
			if strings.Contains(m[3], "This element is not expected") {
				p.Hint = "move or remove the element: the schema expects another here"
			}
			p.Column = column(doc, line, m[2])
			out = append(out, p)
		} else if m := parserLine.FindStringSubmatch(l); m != nil && unread == 0 {
			unread, _ = strconv.Atoi(m[1])
		}
	}
	if res.ExitCode == 0 || len(out) > 0 {
		return out, nil
	}
	// xmllint refused without a schema error: say so in Loom's words,
	// and keep its own for the server's log
	v.log.Warn("xsd: xmllint refused a template without a schema error", "exit", res.ExitCode, "line", unread, "stderr", firstLines(res.Stderr, 3))
	if unread == 0 {
		unread = 1
	}
	return []jrxml.Problem{{Element: doc.Root.Name, Line: unread, Severity: jrxml.Error, Check: "xsd",
		Message: fmt.Sprintf("the schema validator could not read the template at line %d", unread),
		Hint:    "check the XML at this line: its encoding declaration and characters"}}, nil
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
