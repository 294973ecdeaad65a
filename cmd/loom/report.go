package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/loomkit/loom/apps/report"
	"github.com/loomkit/loom/apps/report/xsd"
)

// reportAbout says what `loom report check` does, in its help.
const reportAbout = `For each template (a file, or the .jrxml files under a directory): parse it,
take it apart into header and bands and check that it goes back together
byte for byte, and run the structural checks (declared $F{} $P{} $V{},
query, page and column sizes, band heights, elements inside their band,
required attributes and values, child order). With schemas (--xsd, or
LOOM_JRXML_XSD: files separated by ':') it also validates with xmllint
(Debian package libxml2-utils); Loom does not ship the JasperReports
schemas. Each problem is printed as FILE:LINE:COLUMN: severity <element>
message (hint).

With --json the last line is one object: {"files", "parsed", "roundtrip",
"valid", "rendered", "errors": [{"file", "line", "message", …}]}. Rendering
does not exist yet, so "rendered" is 0.

It exits 1 when a file cannot be read or parsed or does not round-trip,
2 for a usage error, and 0 otherwise, invalid templates included.`

// runReport is `loom report`: for now `loom report check`.
func runReport(ctx context.Context, args []string, out io.Writer) error {
	switch {
	case len(args) == 0:
		return usageErrorf("report: name what to do: check %s", usage)
	case args[0] == "check":
		args = args[1:]
	case !isHelp(args[0]):
		return usageErrorf("report: unknown action %q; there is one: check %s", args[0], usage)
	}
	fs := flag.NewFlagSet("report check", flag.ContinueOnError)
	var schemas []string
	fs.Func("xsd", "validate against the schema `FILE` too (repeat for several; default: LOOM_JRXML_XSD)", func(s string) error {
		schemas = append(schemas, s)
		return nil
	})
	asJSON := fs.Bool("json", false, "end with a JSON summary line")
	// Flags may come before, between or after the paths.
	var named []string
	for {
		if err := parseFlags("report check", fs, args, out); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		named, args = append(named, fs.Arg(0)), fs.Args()[1:]
	}
	if len(named) == 0 {
		return usageErrorf("report check: give template files or directories %s", usage)
	}
	paths, err := report.Files(named)
	if err != nil {
		return &exitError{1, "loom report check: " + err.Error()}
	}
	if len(schemas) == 0 {
		schemas = xsd.SchemasFromEnv()
	}
	var c report.Checker
	if len(schemas) > 0 {
		v, err := xsd.New(schemas...)
		if err != nil {
			return &exitError{1, "loom report check: " + err.Error()}
		}
		defer v.Close()
		c.Schema = v
	}
	sum := report.Summary{Errors: []report.FileError{}}
	broken := 0
	for _, p := range paths {
		r, err := c.Check(ctx, p)
		if err != nil {
			return &exitError{1, "loom report check: " + err.Error()}
		}
		sum.Add(r)
		if !r.Parsed || !r.RoundTrip {
			broken++
		}
		for _, pr := range r.Problems {
			fmt.Fprintf(out, "%s:%s: %s %s\n", p, pr.Where(), pr.Severity, pr.Describe())
		}
	}
	if *asJSON {
		if err := json.NewEncoder(out).Encode(sum); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(out, "%d files: %d parsed, %d round-tripped, %d valid, %d errors\n", sum.Files, sum.Parsed, sum.RoundTrip, sum.Valid, len(sum.Errors))
	}
	if broken > 0 {
		return &exitError{1, fmt.Sprintf("loom report check: %d of %d files did not parse or round-trip", broken, len(paths))}
	}
	return nil
}
