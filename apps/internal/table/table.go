// Package table writes a query's result as a Markdown table, as the SQL
// explorer and the analyst show it.
package table

import (
	"fmt"
	"strings"
)

// Shown is how many rows Markdown shows.
const Shown = 20

// Markdown writes columns and rows as a Markdown table: the first Shown
// rows, then how many there are ("(20 of 200+ rows shown)" when
// truncated says the query had more), or "(no rows)"; in Chinese when zh.
func Markdown(columns []string, rows [][]any, truncated, zh bool) string {
	if len(columns) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("| " + strings.Join(escape(columns), " | ") + " |\n|")
	b.WriteString(strings.Repeat("---|", len(columns)))
	for _, row := range rows[:min(len(rows), Shown)] {
		cells := make([]string, len(row))
		for i, v := range row {
			cells[i] = Cell(v)
		}
		b.WriteString("\n| " + strings.Join(escape(cells), " | ") + " |")
	}
	switch {
	case len(rows) > Shown || truncated:
		more := ""
		if truncated {
			more = "+"
		}
		if zh {
			fmt.Fprintf(&b, "\n\n（显示 %d 行，共 %d%s 行）", min(len(rows), Shown), len(rows), more)
		} else {
			fmt.Fprintf(&b, "\n\n(%d of %d%s rows shown)", min(len(rows), Shown), len(rows), more)
		}
	case len(rows) == 0:
		if zh {
			b.WriteString("\n\n（无结果）")
		} else {
			b.WriteString("\n\n(no rows)")
		}
	}
	return b.String()
}

// escape makes values safe in Markdown table cells: a pipe does not end
// the cell, a line break does not end the row, and a value that looks
// like HTML ("Widget <Pro>") is shown as written instead of being taken
// for markup and left out.
func escape(cells []string) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = cellEscaper.Replace(c)
	}
	return out
}

var cellEscaper = strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ", "<", `\<`)

// Cell shows a value in a table cell: null is NULL, a float without its
// trailing zeros (at most six decimals).
func Cell(v any) string {
	if v == nil {
		return "NULL"
	}
	if f, ok := v.(float64); ok {
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.6f", f), "0"), ".")
	}
	return fmt.Sprint(v)
}
