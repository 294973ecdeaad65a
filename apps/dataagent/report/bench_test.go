package report_test

import (
	"path/filepath"
	"testing"

	"github.com/loomkit/loom/apps/dataagent/report"
)

// BenchmarkHTML3Charts renders a report with three charts (bars of two
// series, a line, a pie) and a table into one page: measuring Chinese
// text with the Chinese font when there is one, and with the library's
// default font.
func BenchmarkHTML3Charts(b *testing.B) {
	for _, bc := range []struct{ name, font string }{
		{"chinese-font", ""},
		{"default-font", filepath.Join(b.TempDir(), "none.ttf")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				page, err := report.HTML(threeCharts, report.Options{MeasureFont: bc.font})
				if err != nil || page.Charts != 3 {
					b.Fatalf("charts %d, err %v", page.Charts, err)
				}
				b.SetBytes(int64(len(page.HTML)))
			}
		})
	}
}

// BenchmarkMarkdownTables turns the same report's charts into tables.
func BenchmarkMarkdownTables(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		report.Markdown(threeCharts, report.Options{ChartsAsTables: true})
	}
}
