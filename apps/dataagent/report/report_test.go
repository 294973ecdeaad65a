package report_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/dataagent/report"
	"github.com/loomkit/loom/datasource"
	"github.com/loomkit/loom/internal/testenv"
	"golang.org/x/net/html"
)

const threeCharts = "# 各地区销售分析\n\n" +
	"华北的销售额最高。\n\n" +
	"| 地区 | 销售额 |\n|---|---:|\n| 华东 | 120 |\n| 华北 | 200 |\n\n" +
	"```echarts\n" +
	`{"title": {"text": "各地区销售额"},
 "legend": {"data": ["销售额", "利润"]},
 "xAxis": {"type": "category", "data": ["华东", "华北", "华南", "西部"]},
 "yAxis": {"type": "value"},
 "series": [{"name": "销售额", "type": "bar", "data": [120, 200, 150, 80]},
            {"name": "利润", "type": "bar", "data": [20, 40, 30, -10]}]}` +
	"\n```\n\n## 趋势\n\n" +
	"```chart\n" +
	`{"title": {"text": "月度销售额"},
 "xAxis": {"type": "category", "data": ["1月", "2月", "3月", "4月", "5月"]},
 "yAxis": {"type": "value"},
 "series": [{"name": "销售额", "type": "line", "data": [10, 12, null, 18, 21]}]}` +
	"\n```\n\n## 构成\n\n" +
	"```echarts\n" +
	`{"title": {"text": "支付方式占比"},
 "series": [{"name": "占比", "type": "pie", "data": [{"name": "微信", "value": 45}, {"name": "支付宝", "value": 35}, {"name": "银行卡", "value": 20}]}]}` +
	"\n```\n\n结论：华北领先。\n"

func TestHTMLDrawsEachChart(t *testing.T) {
	page, err := report.HTML(threeCharts, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	doc := parsePage(t, page.HTML)
	if page.Charts != 3 || len(page.Problems) != 0 {
		t.Fatalf("Charts = %d, Problems = %q; want 3 and none", page.Charts, page.Problems)
	}
	svgs := find(doc, "svg")
	if len(svgs) != 3 {
		t.Fatalf("page has %d <svg>, want 3", len(svgs))
	}
	// Two series of four values: eight bars.
	if n := bars(svgs[0]); n != 8 {
		t.Errorf("bar chart has %d bars, want 8", n)
	}
	for i, want := range []string{"各地区销售额", "月度销售额", "支付方式占比"} {
		if got := texts(svgs[i]); !contains(got, want) {
			t.Errorf("chart %d texts %q lack its title %q", i, got, want)
		}
	}
	for _, label := range []string{"华东", "华北", "华南", "西部", "销售额", "利润"} {
		if !contains(texts(svgs[0]), label) {
			t.Errorf("bar chart lacks the label %q", label)
		}
	}
	// The pie labels each slice with its name and share.
	pie := strings.Join(texts(svgs[2]), "|")
	for _, want := range []string{"微信", "支付宝", "银行卡", "45%"} {
		if !strings.Contains(pie, want) {
			t.Errorf("pie texts %q lack %q", pie, want)
		}
	}
	// The Markdown around the charts: title, headings, the table.
	if got := textOf(find(doc, "title")[0]); got != "各地区销售分析" {
		t.Errorf("page title = %q, want the first heading", got)
	}
	if len(find(doc, "h2")) != 2 || len(find(doc, "table")) != 1 || len(find(doc, "th")) != 2 {
		t.Errorf("page has %d h2, %d table, %d th; want 2, 1, 2", len(find(doc, "h2")), len(find(doc, "table")), len(find(doc, "th")))
	}
	if !strings.Contains(textOf(doc), "结论：华北领先。") {
		t.Error("the text after the charts is missing")
	}
	if attr(find(doc, "html")[0], "lang") != "zh-CN" {
		t.Errorf("lang = %q, want zh-CN", attr(find(doc, "html")[0], "lang"))
	}
	if len(find(doc, "style")) == 0 {
		t.Error("page has no inline style")
	}
}

func TestHTMLHostileMarkdown(t *testing.T) {
	hostileTitle := `</text><script>alert("t")</script><text>`
	hostileLabel := `<img src=x onerror=alert(1)>`
	chart := report.Chart{
		Title:  report.Title{Text: hostileTitle},
		XAxis:  &report.Axis{Type: "category", Data: []string{hostileLabel, "甲&乙"}},
		YAxis:  &report.Axis{Type: "value"},
		Series: []report.Series{{Name: `"><script>alert(2)</script>`, Type: "bar", Data: []report.Datum{{Value: 1}, {Value: 2}}}},
	}
	md := "# <script>alert(0)</script>报告\n\n" +
		"<script>alert(3)</script>\n\n" +
		"<div onclick=\"alert(4)\">x</div>\n\n" +
		"inline <img src=\"https://evil.example/x.png\" onerror=\"alert(5)\"> html\n\n" +
		"[click](javascript:alert(6)) [docs](https://example.com/docs) [up](#top) <https://example.com/auto>\n\n" +
		"![remote](https://evil.example/y.png) ![plot](data:image/png;base64,iVBORw0KGgo=)\n\n" +
		chart.Block() +
		"\n```echarts\n{\"title\": {\"text\": \"<script>alert(7)</script>\"}, \"series\": 5}\n```\n"
	page, err := report.HTML(md, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	doc := parsePage(t, page.HTML) // no script, handler or outside URL
	if strings.Contains(strings.ToLower(string(page.HTML)), "<script") {
		t.Error("page contains <script")
	}
	svgs := find(doc, "svg")
	if len(svgs) != 1 || page.Charts != 1 {
		t.Fatalf("page has %d svg, Charts = %d; want 1", len(svgs), page.Charts)
	}
	got := texts(svgs[0])
	for _, want := range []string{hostileTitle, hostileLabel, "甲&乙"} {
		if !contains(got, want) {
			t.Errorf("chart texts %q lack %q as text", got, want)
		}
	}
	if len(page.Problems) != 1 {
		t.Errorf("Problems = %q, want the one bad block", page.Problems)
	}
	text := textOf(doc)
	for _, want := range []string{"(https://example.com/docs)", "https://example.com/auto", "[图片: remote]"} {
		if !strings.Contains(text, want) {
			t.Errorf("page text lacks %q", want)
		}
	}
	imgs := find(doc, "img")
	if len(imgs) != 1 || !strings.HasPrefix(attr(imgs[0], "src"), "data:image/png;base64,") {
		t.Errorf("images = %d, want only the inline data one", len(imgs))
	}
	var local bool
	for _, a := range find(doc, "a") {
		if attr(a, "href") == "#top" {
			local = true
		}
	}
	if !local {
		t.Error("the link within the page was dropped")
	}
	if !strings.Contains(string(page.HTML), "default-src 'none'") {
		t.Error("page has no content security policy")
	}
}

func TestHTMLMalformedChartIsANote(t *testing.T) {
	for _, tc := range []struct {
		name, block, zh, en string
	}{
		{"bad json", `{"title": {"text": "x"}, "series": [`, "JSON 有误", "the JSON is not valid"},
		{"javascript", `{title: {text: 'x'}, series: [{type: 'bar', data: [1]}]}`, "JSON 有误", "the JSON is not valid"},
		{"not an object", `[1, 2, 3]`, "内容不是 JSON 对象", "it is not a JSON object"},
		{"empty", ``, "内容不是 JSON 对象", "it is not a JSON object"},
		{"no series", `{"title": {"text": "x"}, "xAxis": {"data": ["a"]}}`, "没有数据系列", "it has no series"},
		{"unknown type", `{"series": [{"name": "s", "type": "sankey", "data": [1, 2]}]}`, `不支持的图表类型 "sankey"`, `unsupported chart type "sankey"`},
		{"no type", `{"series": [{"name": "s", "data": [1, 2]}]}`, "数据系列 s 没有类型", "series s has no type"},
		{"no numbers", `{"xAxis": {"type": "category", "data": ["a", "b"]}, "series": [{"name": "s", "type": "bar", "data": ["x", "y"]}]}`, "数据系列 s 没有数值", "series s has no numbers"},
		{"no data", `{"series": [{"name": "s", "type": "line", "data": []}]}`, "数据系列 s 没有数值", "series s has no numbers"},
		{"pie and bar", `{"series": [{"type": "pie", "data": [{"name": "a", "value": 1}]}, {"type": "bar", "data": [1]}]}`, "饼图不能与其他类型混在一张图里", "a pie cannot share a chart"},
		{"too many points", `{"series": [{"type": "line", "data": [` + strings.Repeat("1,", 6000) + `1]}]}`, "数据点太多（6001，最多 5000）", "too many data points (6001, at most 5000)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := "# 报告\n\n前文。\n\n```echarts\n" + tc.block + "\n```\n\n后文。\n"
			for _, locale := range []string{"zh", "en-US"} {
				page, err := report.HTML(md, report.Options{Locale: locale})
				if err != nil {
					t.Fatalf("%s: a bad chart block is an error: %v", locale, err)
				}
				doc := parsePage(t, page.HTML)
				if page.Charts != 0 || len(find(doc, "svg")) != 0 {
					t.Errorf("%s: %d charts drawn from a bad block", locale, page.Charts)
				}
				prefix, reason := "图表无法绘制：", tc.zh
				if locale != "zh" {
					prefix, reason = "Chart could not be drawn: ", tc.en
				}
				if len(page.Problems) != 1 || !strings.HasPrefix(page.Problems[0], prefix) || !strings.Contains(page.Problems[0], reason) {
					t.Fatalf("%s: Problems = %q, want one %q… with %q", locale, page.Problems, prefix, reason)
				}
				text := textOf(doc)
				if !strings.Contains(text, page.Problems[0]) {
					t.Errorf("%s: the note is not in the page", locale)
				}
				if !strings.Contains(text, "前文。") || !strings.Contains(text, "后文。") {
					t.Errorf("%s: the report around the bad block is lost", locale)
				}
				if len(tc.block) < 200 && !strings.Contains(text, tc.block) {
					t.Errorf("%s: the block's source is not shown with the note", locale)
				}
			}
		})
	}
}

func TestHTMLEnglishPage(t *testing.T) {
	page, err := report.HTML("Revenue grew.\n", report.Options{Locale: "en"})
	if err != nil {
		t.Fatal(err)
	}
	doc := parsePage(t, page.HTML)
	if page.Title != "Data analysis report" || textOf(find(doc, "title")[0]) != "Data analysis report" {
		t.Errorf("title = %q, want the English default", page.Title)
	}
	if attr(find(doc, "html")[0], "lang") != "en" {
		t.Error("lang is not en")
	}
	page, err = report.HTML("# Heading\n", report.Options{Title: "Q3 <sales>"})
	if err != nil {
		t.Fatal(err)
	}
	if got := textOf(find(parsePage(t, page.HTML), "title")[0]); got != "Q3 <sales>" {
		t.Errorf("title = %q, want the option's, escaped", got)
	}
}

func TestFromResult(t *testing.T) {
	num := func(s string) json.Number { return json.Number(s) }
	for _, tc := range []struct {
		name   string
		res    datasource.Result
		ok     bool
		kind   string // type of the first series
		series int
		points int
	}{
		{name: "empty", res: datasource.Result{Columns: []string{"region", "sales"}}},
		{name: "single row", res: datasource.Result{Columns: []string{"region", "sales"}, Rows: [][]any{{"east", 1.0}}}},
		{name: "single number", res: datasource.Result{Columns: []string{"n"}, Rows: [][]any{{int64(3)}, {int64(4)}}}},
		{name: "no numbers", res: datasource.Result{Columns: []string{"name", "city"}, Rows: [][]any{{"a", "x"}, {"b", "y"}}}},
		{name: "only nulls", res: datasource.Result{Columns: []string{"name", "v"}, Rows: [][]any{{"a", nil}, {"b", nil}}}},
		{name: "bars", ok: true, kind: "bar", series: 2, points: 3,
			res: datasource.Result{Columns: []string{"region", "sales", "orders"}, Rows: [][]any{{"east", 1.5, int64(3)}, {"north", 2.0, int64(4)}, {"south", nil, int64(1)}}}},
		{name: "dates make a line", ok: true, kind: "line", series: 1, points: 3,
			res: datasource.Result{Columns: []string{"d", "revenue"}, Rows: [][]any{{"2024-01-01", 1.0}, {"2024-01-02", 2.0}, {"2024-01-03", 3.0}}}},
		{name: "a month column makes a line", ok: true, kind: "line", series: 1, points: 2,
			res: datasource.Result{Columns: []string{"month", "revenue"}, Rows: [][]any{{"Jan", 1.0}, {"Feb", 2.0}}}},
		{name: "years, all numeric", ok: true, kind: "line", series: 1, points: 2,
			res: datasource.Result{Columns: []string{"year", "revenue"}, Rows: [][]any{{int64(2023), 1.0}, {int64(2024), 2.0}}}},
		{name: "share makes a pie", ok: true, kind: "pie", series: 1, points: 3,
			res: datasource.Result{Columns: []string{"method", "share"}, Rows: [][]any{{"card", 50.0}, {"cash", 30.0}, {"wallet", 20.0}}}},
		{name: "fractions summing to 1 make a pie", ok: true, kind: "pie", series: 1, points: 2,
			res: datasource.Result{Columns: []string{"渠道", "值"}, Rows: [][]any{{"线上", num("0.6")}, {"线下", num("0.4")}}}},
		{name: "numeric strings of a numeric type", ok: true, kind: "bar", series: 1, points: 2,
			res: datasource.Result{Columns: []string{"c", "total"}, Types: []string{"text", "numeric"}, Rows: [][]any{{"a", "10.50"}, {"b", "3"}}}},
		{name: "numeric strings of a text type are categories", ok: false,
			res: datasource.Result{Columns: []string{"zip", "name"}, Types: []string{"text", "text"}, Rows: [][]any{{"10001", "a"}, {"10002", "b"}}}},
		{name: "too many bars", res: manyRows(51)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := report.FromResult(tc.res, "")
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v (chart %s)", ok, tc.ok, c.JSON())
			}
			if !ok {
				if _, ok := (report.Renderer{}).Chart(tc.res, "t"); ok {
					t.Error("Renderer.Chart gives a block where FromResult gives none")
				}
				return
			}
			if len(c.Series) != tc.series || c.Series[0].Type != tc.kind || len(c.Series[0].Data) != tc.points {
				t.Fatalf("chart = %s; want %d %s series of %d points", c.JSON(), tc.series, tc.kind, tc.points)
			}
			// Whatever is chosen draws.
			page, err := report.HTML(c.Block(), report.Options{})
			if err != nil || page.Charts != 1 {
				t.Fatalf("drawing the chosen chart: charts %d, problems %q, err %v", page.Charts, page.Problems, err)
			}
		})
	}
}

func manyRows(n int) datasource.Result {
	res := datasource.Result{Columns: []string{"product", "units"}}
	for i := range n {
		res.Rows = append(res.Rows, []any{fmt.Sprintf("p%d", i), float64(i)})
	}
	return res
}

func TestChartBlockRoundTrip(t *testing.T) {
	res := datasource.Result{
		Columns: []string{"类别", "销售额", "订单数"},
		Rows:    [][]any{{"茶", 12.5, int64(3)}, {"咖啡", 30.0, int64(7)}, {"蛋糕", nil, int64(2)}, {"果汁", 8.0, int64(1)}},
	}
	title := "销售 ``` 标题 <b>"
	block, ok := report.Renderer{}.Chart(res, title)
	if !ok {
		t.Fatal("no chart for a category and two numeric columns")
	}
	page, err := report.HTML("# 报告\n\n"+block+"\n结尾\n", report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	doc := parsePage(t, page.HTML)
	svgs := find(doc, "svg")
	if len(svgs) != 1 {
		t.Fatalf("%d svg, problems %q; want 1", len(svgs), page.Problems)
	}
	// 4 + 4 bars, less the NULL one.
	if n := bars(svgs[0]); n != 7 {
		t.Errorf("%d bars, want 7 (a NULL draws none)", n)
	}
	if !contains(texts(svgs[0]), title) {
		t.Errorf("texts %q lack the title %q (a fence in the title must not close the block)", texts(svgs[0]), title)
	}
	if !strings.Contains(textOf(doc), "结尾") {
		t.Error("text after the block is lost")
	}
}

func TestMarkdown(t *testing.T) {
	bad := "```chart\n{\"series\": []}\n```\n"
	md := threeCharts + "\n" + bad + "\n尾声。"

	kept := report.Markdown(md, report.Options{Locale: "en"})
	if !strings.HasPrefix(kept, threeCharts) || !strings.HasSuffix(kept, bad+"\n尾声。") {
		t.Errorf("chart blocks are not kept as written:\n%s", kept)
	}
	if !strings.Contains(kept, "> Chart could not be drawn: it has no series\n\n"+bad) {
		t.Errorf("the bad block has no note before it:\n%s", kept)
	}

	tables := report.Markdown(md, report.Options{ChartsAsTables: true})
	for _, want := range []string{
		"**各地区销售额**\n\n| 类别 | 销售额 | 利润 |\n| --- | --- | --- |\n| 华东 | 120 | 20 |\n",
		"| 西部 | 80 | -10 |\n",
		"| 3月 |  |\n", // the gap stays empty
		"**支付方式占比**\n\n| 名称 | 占比 |\n| --- | --- |\n| 微信 | 45 |\n",
		"> 图表无法绘制：没有数据系列（series）\n\n" + bad,
		"结论：华北领先。",
	} {
		if !strings.Contains(tables, want) {
			t.Errorf("table Markdown lacks %q:\n%s", want, tables)
		}
	}
	if strings.Contains(tables, "```echarts") {
		t.Error("a valid chart block was left in the table Markdown")
	}
	// The tables render as tables and nothing is drawn.
	page, err := report.HTML(tables, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	doc := parsePage(t, page.HTML)
	if page.Charts != 0 || len(find(doc, "table")) != 4 {
		t.Errorf("table Markdown renders %d charts and %d tables, want 0 and 4", page.Charts, len(find(doc, "table")))
	}
}

func TestMarkdownUnclosedBlock(t *testing.T) {
	md := "text\n\n```echarts\n{\"series\": [{\"type\": \"bar\", \"data\": [1, 2]}]}"
	got := report.Markdown(md, report.Options{ChartsAsTables: true})
	if want := "text\n\n| 类别 | 系列 1 |\n| --- | --- |\n| 1 | 1 |\n| 2 | 2 |\n\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// The page scales each chart to its width: the SVG carries a viewBox
// of the chosen size.
func TestChartSize(t *testing.T) {
	c := report.Chart{Series: []report.Series{{Type: "line", Data: []report.Datum{{Value: 1}, {Value: 3}}}}}
	svg, err := c.SVG(report.Options{ChartWidth: 640, ChartHeight: 300})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(strings.NewReader(string(svg)))
	if err != nil {
		t.Fatal(err)
	}
	if vb := attr(find(doc, "svg")[0], "viewBox"); vb != "0 0 640 300" {
		t.Errorf("viewBox = %q, want 0 0 640 300", vb)
	}
	if _, err := (report.Chart{}).SVG(report.Options{}); err == nil || !strings.Contains(err.Error(), "no series") {
		t.Errorf("a chart without series: err = %v", err)
	}
}

func TestHTMLForgivesCommentsAndTrailingCommas(t *testing.T) {
	md := "```echarts\n{\n  // sales by region\n  \"xAxis\": {\"type\": \"category\", \"data\": [\"a\", \"b\", \"c\",]},\n" +
		"  \"series\": [{\"type\": \"bar\", \"data\": [1500, 2500, 20000,],},], /* end */\n}\n```\n"
	page, err := report.HTML(md, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	svgs := find(parsePage(t, page.HTML), "svg")
	if len(svgs) != 1 || len(page.Problems) != 0 {
		t.Fatalf("%d svg, problems %q; want the chart drawn", len(svgs), page.Problems)
	}
	if n := bars(svgs[0]); n != 3 {
		t.Errorf("%d bars, want 3", n)
	}
	// Axis values are written as people write them, not 20000.00.
	got := texts(svgs[0])
	if !contains(got, "20,000") || !contains(got, "0") || contains(got, "20000.00") {
		t.Errorf("axis texts %q, want 20,000 and 0 and no 20000.00", got)
	}
}

// With a font that has Chinese glyphs, Chinese text is measured at its
// width: the legend leaves room for the first entry's 7 characters
// before the second, where the default font counts about half of them
// and the entries overlap.
func TestChineseTextIsMeasured(t *testing.T) {
	const font = "/usr/share/fonts/truetype/arphic-gbsn00lp/gbsn00lp.ttf"
	testenv.NeedFile(t, font, "the CJK font (Debian package fonts-arphic-gbsn00lp)")
	const first = "线上销售额合计"
	md := "```echarts\n" + `{"title": {"text": "销售"}, "legend": {"data": ["线上销售额合计", "线下"]},
 "xAxis": {"type": "category", "data": ["甲", "乙"]},
 "series": [{"name": "线上销售额合计", "type": "bar", "data": [1, 2]}, {"name": "线下", "type": "bar", "data": [2, 1]}]}` + "\n```\n"
	// gap is how far the second legend text starts after the first.
	gap := func(measure string) (int, int) {
		page, err := report.HTML(md, report.Options{MeasureFont: measure})
		if err != nil {
			t.Fatal(err)
		}
		x := map[string]int{}
		size := 0
		for _, n := range find(parsePage(t, page.HTML), "text") {
			if v, err := strconv.Atoi(attr(n, "x")); err == nil {
				x[textOf(n)] = v
			}
			if textOf(n) == first {
				_, px, _ := strings.Cut(attr(n, "style"), "font-size:")
				px, _, _ = strings.Cut(px, "px")
				size, _ = strconv.Atoi(px)
			}
		}
		if _, ok := x["线下"]; !ok || size == 0 {
			t.Fatalf("legend texts not found in %s", page.HTML)
		}
		return x["线下"] - x[first], size
	}
	narrow, _ := gap(filepath.Join(t.TempDir(), "none.ttf"))
	wide, size := gap(font)
	if need := len([]rune(first)) * size; wide < need || narrow >= need {
		t.Errorf("second legend text starts %dpx after the first with the Chinese font, %dpx without; the first is %dpx wide", wide, narrow, need)
	}
}

// Reports render side by side, as a server renders them for several
// users at once.
func TestHTMLConcurrent(t *testing.T) {
	errs := make(chan error, 4)
	for i := range 4 {
		go func() {
			page, err := report.HTML(threeCharts, report.Options{Locale: []string{"zh", "en"}[i%2]})
			if err == nil && page.Charts != 3 {
				err = fmt.Errorf("charts %d, problems %q", page.Charts, page.Problems)
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestBarsStartAtZero: a bar's length is its value, so the value axis of
// a bar chart with no negative value starts at zero (the library would
// start it near the smallest value), unless the option sets its minimum;
// a line chart keeps the automatic range.
func TestBarsStartAtZero(t *testing.T) {
	block := func(typ, yAxis string) string {
		return "```echarts\n{\"xAxis\":{\"type\":\"category\",\"data\":[\"a\",\"b\",\"c\"]},\"yAxis\":{\"type\":\"value\"" + yAxis + "},\"series\":[{\"type\":\"" + typ + "\",\"data\":[52000,40000,22000]}]}\n```\n"
	}
	for _, tc := range []struct {
		name, md string
		zero     bool
	}{
		{"bar", block("bar", ""), true},
		{"bar with its own minimum", block("bar", `,"min":20000`), false},
		{"line", block("line", ""), false},
	} {
		page, err := report.HTML(tc.md, report.Options{})
		if err != nil || page.Charts != 1 {
			t.Fatalf("%s: %d charts, %v", tc.name, page.Charts, err)
		}
		labels := texts(find(parsePage(t, page.HTML), "svg")[0])
		if got := contains(labels, "0"); got != tc.zero {
			t.Errorf("%s: axis labels %q, a 0 among them: %v, want %v", tc.name, labels, got, tc.zero)
		}
	}
}
