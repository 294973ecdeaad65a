// Package report is the JasperReports template toolkit behind the report
// designer: it checks templates (parse, byte-for-byte round trip through
// header and bands, structural checks, XSD validation) and sums the
// results over many files, as `loom report check` prints them.
//
// The model and the structural checks are in report/jrxml, schema
// validation through xmllint in report/xsd.
package report

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/loomkit/loom/apps/report/jrxml"
	"github.com/loomkit/loom/apps/report/xsd"
)

// Checker checks template files.
type Checker struct {
	// Schema, when set, validates each template against the schemas it
	// was made with; without it only the structural checks run.
	Schema *xsd.Validator
}

// FileResult is what checking one file found.
type FileResult struct {
	File string `json:"file"`
	// Parsed: the file is well-formed XML; RoundTrip: taken apart into
	// header and bands and put back together it is the same bytes;
	// Valid: no error-level problem.
	Parsed    bool `json:"parsed"`
	RoundTrip bool `json:"roundtrip"`
	Valid     bool `json:"valid"`
	// Bands and Elements count the bands and the elements in them.
	Bands    int `json:"bands"`
	Elements int `json:"elements"`
	// Problems are the errors and warnings, in document order.
	Problems []jrxml.Problem `json:"problems,omitempty"`
}

// Check checks one file: it parses it, round-trips it, runs the
// structural checks and, with a schema, validates it. The error is for a
// file that cannot be read or a validator that cannot run; what is wrong
// with the template is in the result.
func (c Checker) Check(ctx context.Context, path string) (FileResult, error) {
	r := FileResult{File: path}
	src, err := os.ReadFile(path)
	if err != nil {
		return r, fmt.Errorf("check %s: %w", path, err)
	}
	doc, err := jrxml.Parse(src)
	if err != nil {
		p, ok := err.(*jrxml.Problem)
		if !ok {
			return r, fmt.Errorf("check %s: %w", path, err)
		}
		r.Problems = []jrxml.Problem{*p}
		return r, nil
	}
	r.Parsed = true
	dec := doc.Decompose()
	r.RoundTrip = bytes.Equal(dec.Reassemble(), src)
	if !r.RoundTrip {
		r.Problems = append(r.Problems, jrxml.Problem{Element: doc.Root.Name, Line: 1, Column: 1, Severity: jrxml.Error, Check: "roundtrip",
			Message: "taken apart into header and bands and put back together, the template is not the same bytes", Hint: "this is a bug in Loom: report it with the file"})
	}
	r.Bands = len(dec.Bands)
	for _, b := range dec.Bands {
		r.Elements += b.Counts.Total
	}
	r.Problems = append(r.Problems, doc.Check()...)
	if c.Schema != nil {
		ps, err := c.Schema.Validate(ctx, doc)
		if err != nil {
			return r, fmt.Errorf("check %s: %w", path, err)
		}
		r.Problems = append(r.Problems, ps...)
	}
	sort.SliceStable(r.Problems, func(i, j int) bool { return r.Problems[i].Line < r.Problems[j].Line })
	r.Valid = len(jrxml.Errors(r.Problems)) == 0
	return r, nil
}

// Summary sums the results of many files, in the shape `loom report
// check --json` prints.
type Summary struct {
	Files     int `json:"files"`
	Parsed    int `json:"parsed"`
	RoundTrip int `json:"roundtrip"`
	Valid     int `json:"valid"`
	// Rendered counts files rendered to PNG and PDF: 0, as long as the
	// toolkit does not render.
	Rendered int         `json:"rendered"`
	Errors   []FileError `json:"errors"`
}

// FileError is one error-level problem of one file.
type FileError struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column,omitempty"`
	Element string `json:"element,omitempty"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
	Check   string `json:"check"`
}

// Add counts r in the summary.
func (s *Summary) Add(r FileResult) {
	s.Files++
	if r.Parsed {
		s.Parsed++
	}
	if r.RoundTrip {
		s.RoundTrip++
	}
	if r.Valid {
		s.Valid++
	}
	for _, p := range jrxml.Errors(r.Problems) {
		s.Errors = append(s.Errors, FileError{File: r.File, Line: p.Line, Column: p.Column, Element: p.Element, Message: p.Message, Hint: p.Hint, Check: p.Check})
	}
}

// Files lists the templates paths name: a file as it is, a directory's
// .jrxml files (in its subdirectories too), sorted.
func Files(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("list templates: %w", err)
		}
		if !info.IsDir() {
			out = append(out, p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.EqualFold(filepath.Ext(path), ".jrxml") {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("list templates in %s: %w", p, err)
		}
		sort.Strings(found)
		out = append(out, found...)
	}
	return out, nil
}
