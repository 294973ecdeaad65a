package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/loomkit/loom/apps/report"
	"github.com/loomkit/loom/apps/report/jrxml"
	"github.com/loomkit/loom/apps/report/render"
	"github.com/loomkit/loom/apps/report/xsd"
)

// reportAbout says what `loom report` does, in its help.
const reportAbout = `loom report check [--xsd FILE]... [--out DIR] [--json] PATH...
For each template (a file, or the .jrxml files under a directory): parse it,
take it apart into header and bands and check that it goes back together
byte for byte, and run the structural checks (declared $F{} $P{} $V{},
query, page and column sizes, band heights, elements inside their band,
required attributes and values, child order). With schemas (--xsd, or
LOOM_JRXML_XSD: files separated by ':') it also validates with xmllint
(Debian package libxml2-utils); Loom does not ship the JasperReports
schemas. With --out it renders each template with 5 rows of sample values
into DIR: NAME-1.png… and NAME.pdf. Each problem is printed as
FILE:LINE:COLUMN: severity <element> message (hint).

With --json the last line is one object: {"files", "parsed", "roundtrip",
"valid", "rendered", "errors": [{"file", "line", "message", …}]};
"rendered" is 0 without --out. It exits 1 when a file cannot be read,
parsed, round-tripped or rendered, 2 for a usage error, and 0 otherwise,
invalid templates included.

loom report render FILE [--data rows.json|rows.csv] [--png DIR] [--pdf FILE]
Renders one template with the rows of a JSON array of objects or a CSV file
with a header line (sample values by field class without --data): PNG
pages FILE-1.png… into --png, a PDF at --pdf. Text is drawn with the
TrueType font LOOM_REPORT_FONT names, else AR PL SungtiL GB (Debian
package fonts-arphic-gbsn00lp), which has Chinese and Latin glyphs.`

// runReport is `loom report check` and `loom report render`.
func runReport(ctx context.Context, args []string, out io.Writer) error {
	switch {
	case len(args) == 0:
		return usageErrorf("report: name what to do: check or render %s", usage)
	case args[0] == "check":
		return reportCheck(ctx, args[1:], out)
	case args[0] == "render":
		return reportRender(args[1:], out)
	case isHelp(args[0]):
		return reportCheck(ctx, args, out)
	}
	return usageErrorf("report: unknown action %q; the actions are check and render %s", args[0], usage)
}

// parseInterleaved parses flags that may come before, between or after
// the positional arguments, and returns those.
func parseInterleaved(c string, fs *flag.FlagSet, args []string, out io.Writer) ([]string, error) {
	var named []string
	for {
		if err := parseFlags(c, fs, args, out); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return named, nil
		}
		named, args = append(named, fs.Arg(0)), fs.Args()[1:]
	}
}

func reportCheck(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("report check", flag.ContinueOnError)
	var schemas []string
	fs.Func("xsd", "validate against the schema `FILE` too (repeat for several; default: LOOM_JRXML_XSD)", func(s string) error {
		schemas = append(schemas, s)
		return nil
	})
	outDir := fs.String("out", "", "render each template into `DIR` (PNG pages and a PDF)")
	dpi := fs.Float64("dpi", 150, "the PNG pages' `DPI`")
	asJSON := fs.Bool("json", false, "end with a JSON summary line")
	named, err := parseInterleaved("report check", fs, args, out)
	if err != nil {
		return err
	}
	if len(named) == 0 {
		return usageErrorf("report check: give template files or directories %s", usage)
	}
	if *dpi <= 0 || *dpi > 600 {
		return usageErrorf("report check: --dpi is between 1 and 600, not %v", *dpi)
	}
	paths, err := report.Files(named)
	if err != nil {
		return &exitError{1, "loom report check: " + err.Error()}
	}
	if len(schemas) == 0 {
		schemas = xsd.SchemasFromEnv()
	}
	c := report.Checker{Out: *outDir, DPI: *dpi}
	if len(schemas) > 0 {
		v, err := xsd.New(schemas...)
		if err != nil {
			return &exitError{1, "loom report check: " + err.Error()}
		}
		defer v.Close()
		c.Schema = v
	}
	if *outDir != "" {
		if c.Raster, err = rasterizerIn(*outDir); err != nil {
			return &exitError{1, "loom report check: " + err.Error()}
		}
	}
	sum := report.Summary{Errors: []report.FileError{}}
	broken := 0
	for _, p := range paths {
		r, err := c.Check(ctx, p)
		if err != nil {
			return &exitError{1, "loom report check: " + err.Error()}
		}
		sum.Add(r)
		if !r.Parsed || !r.RoundTrip || c.Raster != nil && !r.Rendered {
			broken++
		}
		printProblems(out, p, r.Problems)
	}
	if *asJSON {
		if err := json.NewEncoder(out).Encode(sum); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(out, "%d files: %d parsed, %d round-tripped, %d valid, %d rendered, %d errors\n", sum.Files, sum.Parsed, sum.RoundTrip, sum.Valid, sum.Rendered, len(sum.Errors))
	}
	if broken > 0 {
		return &exitError{1, fmt.Sprintf("loom report check: %d of %d files did not parse, round-trip or render", broken, len(paths))}
	}
	return nil
}

// printProblems prints each problem of the file at path as
// FILE:LINE:COLUMN: severity <element> message (hint).
func printProblems(out io.Writer, path string, ps []jrxml.Problem) {
	for _, pr := range ps {
		fmt.Fprintf(out, "%s:%s: %s %s\n", path, pr.Where(), pr.Severity, pr.Describe())
	}
}

// rasterizerIn makes the directory dir and a rasterizer with the
// renderer's font.
func rasterizerIn(dir string) (*render.Rasterizer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return render.NewRasterizer(render.FontPath())
}

func reportRender(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("report render", flag.ContinueOnError)
	data := fs.String("data", "", "the rows: a JSON array of objects or a CSV `FILE` (default: sample values)")
	pngDir := fs.String("png", "", "write the pages as PNG files into `DIR`")
	pdfPath := fs.String("pdf", "", "write a PDF `FILE`")
	dpi := fs.Float64("dpi", 150, "the PNG pages' `DPI`")
	named, err := parseInterleaved("report render", fs, args, out)
	if err != nil {
		return err
	}
	switch {
	case len(named) != 1:
		return usageErrorf("report render: give one template file %s", usage)
	case *pngDir == "" && *pdfPath == "":
		return usageErrorf("report render: give --png DIR, --pdf FILE or both %s", usage)
	case *dpi <= 0 || *dpi > 600:
		return usageErrorf("report render: --dpi is between 1 and 600, not %v", *dpi)
	}
	src, err := os.ReadFile(named[0])
	if err != nil {
		return &exitError{1, "loom report render: " + err.Error()}
	}
	doc, err := jrxml.Parse(src)
	if err != nil {
		return &exitError{1, fmt.Sprintf("loom report render: %s:%v", named[0], err)}
	}
	rows := render.SampleRows(doc, report.SampleRowCount)
	if *data != "" {
		if rows, err = render.ReadRows(*data); err != nil {
			return &exitError{1, "loom report render: " + err.Error()}
		}
	}
	res := render.Layout(doc, rows, nil)
	name := strings.TrimSuffix(filepath.Base(named[0]), filepath.Ext(named[0]))
	if *pngDir != "" {
		r, err := rasterizerIn(*pngDir)
		if err != nil {
			return &exitError{1, "loom report render: " + err.Error()}
		}
		paths, err := r.WritePNGs(res, *dpi, *pngDir, name)
		if err != nil {
			return &exitError{1, "loom report render: " + err.Error()}
		}
		for _, p := range paths {
			fmt.Fprintln(out, p)
		}
	}
	if *pdfPath != "" {
		if err := render.WritePDFFile(*pdfPath, res, render.FontPath()); err != nil {
			return &exitError{1, "loom report render: " + err.Error()}
		}
		fmt.Fprintln(out, *pdfPath)
	}
	fmt.Fprintf(out, "%d rows, %d pages, %d placeholders, %d expressions shown as text\n", len(rows), len(res.Pages), res.Placeholders, res.Unsupported)
	return nil
}
