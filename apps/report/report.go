// Package report is the JasperReports template toolkit behind the report
// designer: it checks templates (parse, byte-for-byte round trip through
// header and bands, structural checks, XSD validation, rendering) and
// sums the results over many files, as `loom report check` prints them.
//
// The model and the structural checks are in report/jrxml, schema
// validation through xmllint in report/xsd, layout and drawing in
// report/render.
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
	"github.com/loomkit/loom/apps/report/render"
	"github.com/loomkit/loom/apps/report/xsd"
)

// Checker checks template files.
type Checker struct {
	// Schema, when set, validates each template against the schemas it
	// was made with; without it only the structural checks run.
	Schema *xsd.Validator
	// Raster, when set, renders each template with sample rows into Out:
	// NAME-1.png… at DPI and NAME.pdf, NAME the file's name without its
	// extension.
	Raster *render.Rasterizer
	Out    string
	DPI    float64
}

// SampleRowCount is how many rows of sample values a template is
// rendered with when it is checked.
const SampleRowCount = 5

// fileResult is what checking one file found.
type fileResult struct {
	File string `json:"file"`
	// Parsed: the file is well-formed XML; RoundTrip: taken apart into
	// header and bands and put back together it is the same bytes;
	// Valid: no error-level problem.
	Parsed    bool `json:"parsed"`
	RoundTrip bool `json:"roundtrip"`
	Valid     bool `json:"valid"`
	// Rendered: drawn as PNG pages and a PDF, Pages of them.
	Rendered bool `json:"rendered"`
	Pages    int  `json:"pages,omitempty"`
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
func (c Checker) Check(ctx context.Context, path string) (fileResult, error) {
	r := fileResult{File: path}
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
	if c.Raster != nil {
		pages, err := c.render(doc, path)
		if err != nil {
			r.Problems = append(r.Problems, jrxml.Problem{Element: doc.Root.Name, Line: 1, Column: 1, Severity: jrxml.Error, Check: "render",
				Message: err.Error(), Hint: "the output directory must be writable, and the font installed"})
		}
		r.Rendered, r.Pages = err == nil, pages
	}
	return r, nil
}

// render draws doc, from the file at path, with sample rows into c.Out,
// and returns its page count.
func (c Checker) render(doc *jrxml.Document, path string) (int, error) {
	res := render.Layout(doc, render.SampleRows(doc, SampleRowCount), nil)
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	if _, err := c.Raster.WritePNGs(res, c.DPI, c.Out, name); err != nil {
		return 0, err
	}
	if err := render.WritePDFFile(filepath.Join(c.Out, name+".pdf"), res, c.Raster.Font()); err != nil {
		return 0, err
	}
	return len(res.Pages), nil
}

// Summary sums the results of many files, in the shape `loom report
// check --json` prints.
type Summary struct {
	Files     int `json:"files"`
	Parsed    int `json:"parsed"`
	RoundTrip int `json:"roundtrip"`
	Valid     int `json:"valid"`
	// Rendered counts files rendered to PNG and PDF (0 without an
	// output directory).
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
func (s *Summary) Add(r fileResult) {
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
	if r.Rendered {
		s.Rendered++
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
