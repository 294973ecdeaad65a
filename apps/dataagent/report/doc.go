// Package report renders the data analyst's final report: Markdown with
// chart blocks, as one self-contained HTML page or as Markdown to
// download.
//
// A chart block is a fenced code block whose language is echarts (or
// echart, or chart) holding an ECharts option as JSON — title.text,
// xAxis {type, data}, yAxis, legend, and series of type bar, line, pie or
// scatter with their data (numbers, null for a gap, or {"name", "value"}
// for a pie's slices):
//
//	```echarts
//	{"title": {"text": "各地区销售额"},
//	 "xAxis": {"type": "category", "data": ["华东", "华北"]},
//	 "yAxis": {"type": "value"},
//	 "series": [{"name": "销售额", "type": "bar", "data": [120, 200]}]}
//	```
//
// HTML draws each chart on the server as inline SVG (with
// github.com/go-analyze/charts), renders the Markdown with goldmark
// (tables, strikethrough, task lists; raw HTML left out), and wraps it in
// a page with inline CSS and a content security policy that allows no
// scripts and no network: the page works offline and downloads as one
// file. Text in charts is SVG text, escaped, drawn by the browser in the
// page's fonts, so Chinese labels read as written; for the layout it is
// measured with a Chinese TrueType font when one is installed (Debian's
// fonts-arphic-gbsn00lp, or Options.MeasureFont), else Chinese labels
// are measured narrow and may overlap. Comments and trailing commas in a
// block's JSON are forgiven. A chart block that cannot be drawn (bad
// JSON, no series, an unsupported type, no numbers) becomes a visible note,
// "图表无法绘制：…" or "Chart could not be drawn: …" by Options.Locale,
// with the block's source beside it; it never loses the report.
//
// Markdown returns the report as written, chart blocks kept as JSON (an
// ECharts-aware viewer draws them), or with Options.ChartsAsTables each
// top-level chart replaced by a table of its data for plain Markdown
// viewers; a block that cannot be drawn keeps its source after the note.
//
// FromResult chooses a chart for a SQL result (a datasource.Result):
// bars or a line over a category column, a pie for a two-column share,
// or none for an empty result, a single row or no numeric column.
// Chart.Block is the chart as a block to put in the report's Markdown.
//
// Renderer holds Options and offers the three calls an agent's report
// step needs (HTML and Markdown with a locale, Chart for a result). By
// hand it reads like this:
//
//	md := "# 月度销售\n\n" + summary + "\n\n"
//	if c, ok := report.FromResult(res, "月度销售额"); ok {
//		md += c.Block()
//	}
//	page, err := report.HTML(md, report.Options{Locale: "zh"})
//	if err != nil {
//		return fmt.Errorf("rendering report: %w", err)
//	}
//	// serve page.HTML as text/html; charset=utf-8, with
//	// Content-Disposition: attachment; filename="report.html" for a download;
//	// page.Problems lists the chart blocks shown as notes.
//
// Images in the Markdown are shown only when carried inline as data
// URIs (data:image/png;base64,…), as plots from the Python sandbox can
// be; links to other documents show their address as text.
package report
