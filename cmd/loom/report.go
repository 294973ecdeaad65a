package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/loomkit/loom/apps/report"
	"github.com/loomkit/loom/apps/report/jrxml"
	"github.com/loomkit/loom/apps/report/layout"
	"github.com/loomkit/loom/apps/report/render"
	"github.com/loomkit/loom/apps/report/skeleton"
	"github.com/loomkit/loom/apps/report/xsd"
	"github.com/loomkit/loom/datasource"
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

loom report render FILE [--data rows.json|rows.csv | --db URL] [--png DIR] [--pdf FILE]
Renders one template with the rows of a JSON array of objects or a CSV file
with a header line, or of the template's own queryString run read-only on
the database --db names (a SQLite file, postgres://… or mysql://…; values
of $P{} in the query are not filled in), or with sample values by field
class: PNG pages FILE-1.png… into --png, a PDF at --pdf. Text is drawn
with the TrueType font LOOM_REPORT_FONT names, else AR PL SungtiL GB
(Debian package fonts-arphic-gbsn00lp), which has Chinese and Latin glyphs.

loom report ocr FILE [--json] [--psm N] [--page N] [--sheet NAME]
Reads the layout of a form: a picture (PNG, JPEG, GIF, TIFF, BMP, WebP)
or a PDF page through the tesseract OCR program with Chinese and English
(Debian packages tesseract-ocr, tesseract-ocr-chi-sim; PDF pages are drawn
by pdftoppm, poppler-utils), or an XLSX sheet from its cells, merged
ranges, column widths and row heights, with no OCR. The kind of file is
told by its content, not its name. It prints the rows of text, the
label/value pairs and the tables; with --json the layout as one JSON
object: {"source", "width", "height", "dpi", "cells", "rows", "columns",
"pairs", "tables", "total_rows"}, sizes in pixels.

loom report skeleton FILE [--psm N] [--page N] [--sheet NAME] [--out FILE]
Reads the layout of a form as loom report ocr does and prints a JRXML
template built from it: the labels as static text where they were, a
field $F{field_1}, $F{field_2}… where each value was, a table's header as
the column header and its rows as the detail band. No model is involved;
the fields are declared with their label as description.`

// runReport is `loom report check`, `render`, `ocr` and `skeleton`.
func runReport(ctx context.Context, args []string, out io.Writer) error {
	switch {
	case len(args) == 0:
		return usageErrorf("report: name what to do: check, render, ocr or skeleton %s", usage)
	case args[0] == "check":
		return reportCheck(ctx, args[1:], out)
	case args[0] == "render":
		return reportRender(ctx, args[1:], out)
	case args[0] == "ocr":
		return reportOCR(ctx, args[1:], out)
	case args[0] == "skeleton":
		return reportSkeleton(ctx, args[1:], out)
	case isHelp(args[0]):
		return reportCheck(ctx, args, out)
	}
	return usageErrorf("report: unknown action %q; the actions are check, render, ocr and skeleton %s", args[0], usage)
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
		if c.Raster, err = rasterizerIn(*outDir, reportFont()); err != nil {
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

// reportFont is the TrueType font templates are drawn with:
// LOOM_REPORT_FONT, else the renderer's default.
func reportFont() string {
	return cmp.Or(os.Getenv("LOOM_REPORT_FONT"), render.DefaultFont)
}

// rasterizerIn makes the directory dir and a rasterizer with the font at
// the path font.
func rasterizerIn(dir, font string) (*render.Rasterizer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return render.NewRasterizer(font)
}

func reportRender(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("report render", flag.ContinueOnError)
	data := fs.String("data", "", "the rows: a JSON array of objects or a CSV `FILE` (default: sample values)")
	db := fs.String("db", "", "run the template's queryString read-only on the database at `URL` for the rows")
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
	case *data != "" && *db != "":
		return usageErrorf("report render: give --data or --db, not both %s", usage)
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
	switch {
	case *data != "":
		if rows, err = render.ReadRows(*data); err != nil {
			return &exitError{1, "loom report render: " + err.Error()}
		}
	case *db != "":
		if rows, err = queryRows(ctx, doc, *db); err != nil {
			return &exitError{1, "loom report render: " + err.Error()}
		}
	}
	res := render.Layout(doc, rows, nil)
	name := strings.TrimSuffix(filepath.Base(named[0]), filepath.Ext(named[0]))
	font := reportFont()
	if *pngDir != "" {
		r, err := rasterizerIn(*pngDir, font)
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
		if err := render.WritePDFFile(*pdfPath, res, font); err != nil {
			return &exitError{1, "loom report render: " + err.Error()}
		}
		fmt.Fprintln(out, *pdfPath)
	}
	fmt.Fprintf(out, "%d rows, %d pages, %d placeholders, %d expressions shown as text\n", len(rows), len(res.Pages), res.Placeholders, res.Unsupported)
	return nil
}

// queryRows runs the template's queryString read-only on the database at
// rawURL and returns its rows, each value under its column's name and
// under the name of a field declared with that name in other case.
func queryRows(ctx context.Context, doc *jrxml.Document, rawURL string) ([]render.Row, error) {
	q := doc.Root.Child("queryString")
	if q == nil || strings.TrimSpace(q.Text()) == "" {
		return nil, fmt.Errorf("the template has no queryString to run on the database")
	}
	if lang, ok := q.Attr("language"); ok && !strings.EqualFold(lang, "sql") {
		return nil, fmt.Errorf("the template's query is in %s, not SQL", lang)
	}
	stmt := strings.TrimSpace(q.Text())
	if strings.Contains(stmt, "$P{") || strings.Contains(stmt, "$P!{") {
		return nil, fmt.Errorf("the template's query uses parameters ($P{}), which loom report render does not fill in: %.80s", stmt)
	}
	src, err := datasource.Open(ctx, rawURL, datasource.Limits{})
	if err != nil {
		return nil, fmt.Errorf("opening the database: %w", err)
	}
	defer src.Close()
	res, err := src.Query(ctx, stmt)
	if err != nil {
		return nil, fmt.Errorf("running the template's query: %w", err)
	}
	fields := map[string]string{} // lower-case name → declared name
	for _, c := range doc.Root.Children {
		if c.Name == "field" {
			if n, ok := c.Attr("name"); ok {
				fields[strings.ToLower(n)] = n
			}
		}
	}
	rows := make([]render.Row, 0, len(res.Rows))
	for _, r := range res.Rows {
		row := render.Row{}
		for i, col := range res.Columns {
			if i >= len(r) {
				break
			}
			row[col] = r[i]
			if f, ok := fields[strings.ToLower(col)]; ok {
				if _, set := row[f]; !set {
					row[f] = r[i]
				}
			}
		}
		rows = append(rows, row)
	}
	if res.Truncated {
		slog.Warn("the query had more rows than are rendered", "rows", len(rows))
	}
	return rows, nil
}

// layoutFlags are the flags of ocr and skeleton that say how to read the
// form.
func layoutFlags(fs *flag.FlagSet) *layout.Options {
	var o layout.Options
	fs.IntVar(&o.PSM, "psm", 0, "tesseract's page segmentation `MODE` (default 6, one block of text)")
	fs.IntVar(&o.Page, "page", 0, "the PDF page to read, from 1 (default 1)")
	fs.StringVar(&o.Sheet, "sheet", "", "the spreadsheet's sheet `NAME` (default: the active sheet)")
	return &o
}

// readLayout reads the layout of the one file named.
func readLayout(ctx context.Context, c string, named []string, opts *layout.Options) (*layout.Layout, error) {
	if len(named) != 1 {
		return nil, usageErrorf("report %s: give one picture, PDF or XLSX file %s", c, usage)
	}
	if opts.PSM < 0 || opts.PSM > 13 {
		return nil, usageErrorf("report %s: --psm is between 0 and 13, not %d", c, opts.PSM)
	}
	if opts.Page < 0 {
		return nil, usageErrorf("report %s: --page counts from 1, not %d", c, opts.Page)
	}
	data, err := os.ReadFile(named[0])
	if err != nil {
		return nil, &exitError{1, fmt.Sprintf("loom report %s: %v", c, err)}
	}
	l, err := layout.Read(ctx, data, *opts)
	if err != nil {
		return nil, &exitError{1, fmt.Sprintf("loom report %s: %s: %v", c, named[0], err)}
	}
	return l, nil
}

func reportOCR(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("report ocr", flag.ContinueOnError)
	opts := layoutFlags(fs)
	asJSON := fs.Bool("json", false, "print the layout as one JSON object")
	named, err := parseInterleaved("report ocr", fs, args, out)
	if err != nil {
		return err
	}
	l, err := readLayout(ctx, "ocr", named, opts)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(out).Encode(l)
	}
	fmt.Fprintf(out, "%s %dx%d px, %d rows, %d columns, %d pairs, %d tables\n", l.Source, l.Width, l.Height, l.TotalRows, len(l.Columns), len(l.Pairs), len(l.Tables))
	for i, r := range l.Rows {
		texts := make([]string, len(r.Cells))
		for k, c := range r.Cells {
			texts[k] = l.Cells[c].Text
		}
		fmt.Fprintf(out, "row %d (y %d): %s\n", i+1, r.Y, strings.Join(texts, " | "))
	}
	for _, p := range l.Pairs {
		fmt.Fprintf(out, "pair: %s = %s\n", p.Label, p.Text)
	}
	for i, t := range l.Tables {
		fmt.Fprintf(out, "table %d: rows %d-%d, %d columns: %s\n", i+1, t.FirstRow+1, t.LastRow+1, len(t.Columns), strings.Join(t.Header, " | "))
	}
	return nil
}

func reportSkeleton(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("report skeleton", flag.ContinueOnError)
	opts := layoutFlags(fs)
	outPath := fs.String("out", "", "write the template to `FILE` instead of printing it")
	named, err := parseInterleaved("report skeleton", fs, args, out)
	if err != nil {
		return err
	}
	l, err := readLayout(ctx, "skeleton", named, opts)
	if err != nil {
		return err
	}
	sk, err := skeleton.Build(l)
	if err != nil {
		return &exitError{1, fmt.Sprintf("loom report skeleton: %s: %v", named[0], err)}
	}
	if *outPath != "" {
		if err := os.WriteFile(*outPath, sk.JRXML, 0o644); err != nil {
			return &exitError{1, "loom report skeleton: " + err.Error()}
		}
		fmt.Fprintf(out, "%s: %d fields\n", *outPath, len(sk.Fields))
		return nil
	}
	_, err = out.Write(sk.JRXML)
	return err
}
