package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode"

	"golang.org/x/text/width"

	"github.com/loomkit/loom/datasource"
)

// exitError is an error that ends the command with its own exit code and
// message (no "loom:" prefix).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// exitStatus returns the exit code and stderr line for err.
func exitStatus(err error) (int, string) {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code, ee.msg
	}
	return 1, "loom: " + err.Error()
}

// runSQL is `loom sql`: one statement through the same guarded path the
// agents' tools use. It exits 0 on success, 2 when the statement is
// refused ("refused: REASON" on stderr), 1 on a database error or timeout.
func runSQL(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("sql", flag.ContinueOnError)
	fs.SetOutput(out)
	db := fs.String("db", os.Getenv("LOOM_SQL_DB"), "the database: a SQLite path, postgres://… or mysql://… (default $LOOM_SQL_DB)")
	asJSON := fs.Bool("json", false, `print {"columns","rows","truncated","ms"} instead of a table`)
	timeout := fs.Duration("timeout", datasource.DefaultTimeout, "the statement's timeout")
	maxRows := fs.Int("max-rows", datasource.DefaultMaxRows, "the most rows to keep; a result with more says truncated")
	if err := fs.Parse(args); err != nil {
		return &exitError{2, err.Error()}
	}
	if *db == "" || fs.NArg() != 1 {
		return &exitError{2, `usage: loom sql --db URL [--json] [--timeout 30s] [--max-rows N] "STATEMENT"`}
	}
	if *timeout <= 0 || *maxRows <= 0 {
		return &exitError{2, "loom sql: --timeout and --max-rows must be positive"}
	}
	src, err := datasource.Open(ctx, *db, datasource.Limits{Timeout: *timeout, MaxRows: *maxRows})
	if err != nil {
		return &exitError{1, err.Error()}
	}
	defer src.Close()
	res, err := src.Query(ctx, fs.Arg(0))
	var refused *datasource.RefusedError
	switch {
	case errors.As(err, &refused):
		return &exitError{2, "refused: " + refused.Reason}
	case err != nil:
		return &exitError{1, err.Error()}
	}
	if *asJSON {
		return json.NewEncoder(out).Encode(struct {
			Columns   []string `json:"columns"`
			Rows      [][]any  `json:"rows"`
			Truncated bool     `json:"truncated"`
			MS        float64  `json:"ms"`
		}{res.Columns, res.Rows, res.Truncated, res.MS})
	}
	printTable(out, res)
	return nil
}

// printTable prints a result as aligned columns, then a line with the row
// count and time. Columns are aligned by display width, so a cell with
// Chinese, Japanese or Korean text (two terminal columns a character)
// lines up with the others.
func printTable(out io.Writer, res *datasource.Result) {
	lines := make([][]string, 0, len(res.Rows)+2)
	lines = append(lines, res.Columns)
	under := make([]string, len(res.Columns))
	for i, c := range res.Columns {
		under[i] = strings.Repeat("-", max(displayWidth(c), 1))
	}
	lines = append(lines, under)
	for _, row := range res.Rows {
		cells := make([]string, len(row))
		for i, v := range row {
			cells[i] = cellText(v)
		}
		lines = append(lines, cells)
	}
	widths := make([]int, len(res.Columns))
	for _, l := range lines {
		for i, c := range l {
			widths[i] = max(widths[i], displayWidth(c))
		}
	}
	var b strings.Builder
	for _, l := range lines {
		b.Reset()
		for i, c := range l {
			b.WriteString(c)
			if i < len(l)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-displayWidth(c)+2))
			}
		}
		fmt.Fprintln(out, b.String())
	}
	n := fmt.Sprintf("%d rows", len(res.Rows))
	if len(res.Rows) == 1 {
		n = "1 row"
	}
	if res.Truncated {
		n += ", truncated"
	}
	fmt.Fprintf(out, "(%s, %s)\n", n, time.Duration(res.MS*float64(time.Millisecond)).Round(100*time.Microsecond))
}

// displayWidth is how many terminal columns s takes: two for a wide or
// fullwidth character (Chinese, Japanese, Korean, fullwidth forms), none
// for a combining mark or a format character, one for the others.
func displayWidth(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		case width.LookupRune(r).Kind() == width.EastAsianWide, width.LookupRune(r).Kind() == width.EastAsianFullwidth:
			n += 2
		default:
			n++
		}
	}
	return n
}

// cellText shows a value in a table cell: NULL for null, tabs and line
// breaks as spaces.
func cellText(v any) string {
	if v == nil {
		return "NULL"
	}
	return strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(fmt.Sprint(v))
}
