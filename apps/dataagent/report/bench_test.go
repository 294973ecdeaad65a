package report_test

import (
	"testing"

	"github.com/loomkit/loom/apps/dataagent/report"
)

// BenchmarkHTML3Charts renders a report with three charts (bars of two
// series, a line, a pie) and a table into one page.
func BenchmarkHTML3Charts(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		page, err := report.HTML(threeCharts, report.Options{})
		if err != nil || page.Charts != 3 {
			b.Fatalf("charts %d, err %v", page.Charts, err)
		}
		b.SetBytes(int64(len(page.HTML)))
	}
}

// BenchmarkMarkdownTables turns the same report's charts into tables.
func BenchmarkMarkdownTables(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		report.Markdown(threeCharts, report.Options{ChartsAsTables: true})
	}
}
