package report_test

import (
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/dataagent/report"
)

// Whatever a chart block holds, the page renders, runs nothing and
// either draws the chart or says why not.
func FuzzHTMLChartBlock(f *testing.F) {
	for _, seed := range []string{
		`{"series": [{"type": "bar", "data": [1, 2]}]}`,
		`{"series": [{"type": "pie", "data": [{"name": "a", "value": 0}, {"name": "b", "value": 0}]}]}`,
		`{"series": [{"type": "pie", "data": [{"name": "a", "value": -5}, {"name": "b", "value": 1e308}]}]}`,
		`{"xAxis": {"type": "value"}, "yAxis": {"type": "value"}, "series": [{"type": "bar", "data": [1]}]}`,
		`{"xAxis": [{"type": "category", "data": []}], "series": [{"type": "line", "data": [null, "-", 3]}]}`,
		`{"series": [{"type": "scatter", "data": [[1, 2], [3, 4], [5]]}]}`,
		`{"title": {"text": "\u0000\ufffe<x>"}, "series": [{"type": "line", "data": [1e-300, -1e300]}]}`,
		`{"width": 99999999, "height": -1, "padding": [1e9], "series": [{"type": "bar", "data": [1], "barWidth": "900%"}]}`,
		`{"series": [{"type": "bar", "stack": "s", "data": [1, 2]}, {"type": "line", "stack": "s", "yAxisIndex": 5, "data": [1]}]}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, block string) {
		md := "前文\n\n```echarts\n" + strings.ReplaceAll(block, "```", "") + "\n```\n\n后文\n"
		page, err := report.HTML(md, report.Options{})
		if err != nil {
			t.Fatalf("a chart block made the report fail: %v", err)
		}
		doc := parsePage(t, page.HTML)
		if page.Charts+len(page.Problems) != 1 {
			t.Fatalf("charts %d, problems %q: want the block drawn or noted", page.Charts, page.Problems)
		}
		if len(find(doc, "svg")) != page.Charts {
			t.Errorf("%d svg for %d charts", len(find(doc, "svg")), page.Charts)
		}
		if text := textOf(doc); !strings.Contains(text, "前文") || !strings.Contains(text, "后文") {
			t.Error("the report around the block is lost")
		}
	})
}
