package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/go-analyze/charts"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"golang.org/x/text/number"

	"github.com/loomkit/loom/schema"
)

// Chart is a chart as an ECharts option: the subset a report draws. It
// marshals to the JSON a chart block holds, so a chart built in Go
// (FromResult) and one written by the model take the same path.
type Chart struct {
	Title  Title    `json:"title"`
	Legend *Legend  `json:"legend,omitempty"`
	XAxis  *Axis    `json:"xAxis,omitempty"`
	YAxis  *Axis    `json:"yAxis,omitempty"`
	Series []Series `json:"series"`
}

// Title is a chart's title.
type Title struct {
	Text string `json:"text"`
}

// Legend names the series shown in the legend.
type Legend struct {
	Data []string `json:"data"`
}

// Axis is an axis: "category" with its labels in Data, or "value".
type Axis struct {
	Type string   `json:"type"`
	Name string   `json:"name,omitempty"`
	Data []string `json:"data,omitempty"`
}

// Series is one series: Type is "bar", "line", "pie" or "scatter".
type Series struct {
	Name string  `json:"name,omitempty"`
	Type string  `json:"type"`
	Data []Datum `json:"data"`
}

// Datum is one value of a series. It marshals as a bare number, as null
// when Null is set (a gap), or as {"name", "value"} when Name is set (a
// pie's slices).
type Datum struct {
	Name  string
	Value float64
	Null  bool
}

// MarshalJSON writes the datum in the shortest ECharts form.
func (d Datum) MarshalJSON() ([]byte, error) {
	var v any = d.Value
	if d.Null || math.IsNaN(d.Value) || math.IsInf(d.Value, 0) {
		v = nil
	}
	if d.Name == "" {
		return json.Marshal(v)
	}
	return json.Marshal(struct {
		Name  string `json:"name"`
		Value any    `json:"value"`
	}{d.Name, v})
}

// JSON is the chart's option as indented JSON, with text left readable
// (no \u escapes for <, > and &).
func (c Chart) JSON() []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(c) // every field marshals
	return bytes.TrimRight(b.Bytes(), "\n")
}

// Block is the chart as a fenced ```echarts block for a report's
// Markdown, ending in a newline. The fence is longer than any run of
// backticks in the JSON, so a title cannot close it.
func (c Chart) Block() string {
	body := c.JSON()
	fence := strings.Repeat("`", max(3, longestRun(body, '`')+1))
	return fence + "echarts\n" + string(body) + "\n" + fence + "\n"
}

// SVG draws the chart as an SVG document sized by opts.
func (c Chart) SVG(opts Options) ([]byte, error) {
	opt, err := parseChart(c.JSON())
	if err != nil {
		return nil, fmt.Errorf("drawing chart %q: %w", c.Title.Text, err)
	}
	svg, err := drawChart(opt, opts)
	if err != nil {
		return nil, fmt.Errorf("drawing chart %q: %w", c.Title.Text, err)
	}
	return svg, nil
}

func longestRun(b []byte, c byte) int {
	n, best := 0, 0
	for _, x := range b {
		if x == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}

// chartLanguages are the info strings of fenced blocks read as charts.
var chartLanguages = map[string]bool{"echarts": true, "echart": true, "chart": true}

// isChartBlock reports whether a fenced block's info string names a chart.
func isChartBlock(info string) bool {
	lang, _, _ := strings.Cut(strings.TrimSpace(info), " ")
	return chartLanguages[strings.ToLower(lang)]
}

// maxPoints bounds the values one chart draws, so a model's mistake
// cannot make the page huge or slow.
const maxPoints = 5000

// problem is why a chart block could not be drawn, in both languages.
type problem struct {
	zh, en string
}

func (p *problem) Error() string { return p.en }

// text is the problem in the locale's language.
func (p *problem) text(locale string) string {
	if isEnglish(locale) {
		return p.en
	}
	return p.zh
}

func problemf(zh, en string, args ...any) *problem {
	return &problem{zh: fmt.Sprintf(zh, args...), en: fmt.Sprintf(en, args...)}
}

// parseChart reads an ECharts option and checks that it can be drawn.
func parseChart(src []byte) (*charts.EChartsOption, error) {
	src = bytes.TrimSpace(src)
	if len(src) == 0 || src[0] != '{' {
		return nil, problemf("内容不是 JSON 对象", "it is not a JSON object")
	}
	// Comments and trailing commas, which models write, are forgiven.
	src = schema.Repair(nil, string(src))
	var opt charts.EChartsOption
	if err := json.Unmarshal(src, &opt); err != nil {
		return nil, problemf("JSON 有误（%v）", "the JSON is not valid (%v)", err)
	}
	if len(opt.Series) == 0 {
		return nil, problemf("没有数据系列（series）", "it has no series")
	}
	points, pies := 0, 0
	for i, s := range opt.Series {
		name := s.Name
		if name == "" {
			name = fmt.Sprint(i + 1)
		}
		switch s.Type {
		case charts.ChartTypeBar, charts.ChartTypeLine, charts.ChartTypeScatter:
		case charts.ChartTypePie:
			pies++
		case "":
			return nil, problemf("数据系列 %s 没有类型（type）", "series %s has no type", name)
		default:
			return nil, problemf("不支持的图表类型 %q（可用 bar、line、pie、scatter）",
				"unsupported chart type %q (use bar, line, pie or scatter)", s.Type)
		}
		numbers := 0
		for _, d := range s.Data {
			if v := d.Value.First(); v != charts.GetNullValue() && !math.IsNaN(v) && !math.IsInf(v, 0) {
				numbers++
			}
		}
		if numbers == 0 {
			return nil, problemf("数据系列 %s 没有数值", "series %s has no numbers", name)
		}
		points += len(s.Data)
	}
	if pies > 0 && pies != len(opt.Series) {
		return nil, problemf("饼图不能与其他类型混在一张图里", "a pie cannot share a chart with other types")
	}
	if points > maxPoints {
		return nil, problemf("数据点太多（%d，最多 %d）", "too many data points (%d, at most %d)", points, maxPoints)
	}
	return &opt, nil
}

// drawChart draws a checked option as SVG. The page decides the size,
// the output format and the theme; nested charts are not drawn.
func drawChart(opt *charts.EChartsOption, opts Options) (svg []byte, err error) {
	o := *opt
	o.Type = charts.ChartOutputSVG
	o.Theme = charts.ThemeLight
	o.BackgroundColor = ""
	o.Width, o.Height = opts.chartSize()
	o.Children = nil
	if hasWide(chartText(&o)) {
		if family := measureFamily(opts.MeasureFont); family != "" {
			o.FontFamily = family
		}
	}
	defer func() {
		// The library is not ours: a value it cannot handle must become
		// a note in the page, not a crashed report.
		if r := recover(); r != nil {
			svg, err = nil, problemf("绘制失败（%v）", "drawing failed (%v)", r)
		}
	}()
	co, err := o.ToOption()
	if err != nil {
		return nil, problemf("绘制失败（%v）", "drawing failed (%v)", err)
	}
	co.ValueFormatter = formatAxisValue
	barsFromZero(&o, &co)
	p, err := charts.Render(co)
	if err != nil {
		return nil, problemf("绘制失败（%v）", "drawing failed (%v)", err)
	}
	svg, err = p.Bytes()
	if err != nil {
		return nil, problemf("绘制失败（%v）", "drawing failed (%v)", err)
	}
	return svg, nil
}

// barsFromZero starts the value axis of a bar chart with no negative
// value at zero, as ECharts does: a bar's length is its value, and an axis
// that starts near the smallest value makes a bar of 22,000 look a tenth
// of one of 52,000. An axis whose minimum the option sets keeps it.
func barsFromZero(o *charts.EChartsOption, co *charts.ChartOption) {
	bars := false
	for _, s := range o.Series {
		if s.Type == charts.ChartTypeBar {
			bars = true
		}
		for _, d := range s.Data {
			if v := d.Value.First(); v != charts.GetNullValue() && v < 0 {
				return
			}
		}
	}
	if !bars {
		return
	}
	if len(co.YAxis) == 0 {
		co.YAxis = []charts.YAxisOption{{}}
	}
	for i := range co.YAxis {
		if co.YAxis[i].Min == nil {
			co.YAxis[i].Min = charts.Ptr(0.0)
		}
	}
}

// chartProblem is the text shown for a chart that could not be drawn.
func chartProblem(err error, locale string) string {
	var p *problem
	if !errors.As(err, &p) {
		p = problemf("%v", "%v", err)
	}
	if isEnglish(locale) {
		return "Chart could not be drawn: " + p.text(locale)
	}
	return "图表无法绘制：" + p.text(locale)
}

// formatAxisValue writes axis values as people do: 200, 1.5, 20,000
// (not 200.00).
func formatAxisValue(v float64) string {
	return axisPrinter.Sprint(number.Decimal(v, number.MaxFractionDigits(2)))
}

var axisPrinter = message.NewPrinter(language.English)

// chartText is the text a chart draws: title, legend, axis labels and
// names, series and slice names.
func chartText(o *charts.EChartsOption) string {
	var b strings.Builder
	b.WriteString(o.Title.Text + o.Title.Subtext)
	for _, s := range o.Legend.Data {
		b.WriteString(s)
	}
	for _, a := range o.XAxis.Data {
		b.WriteString(a.Name + strings.Join(a.Data, ""))
	}
	for _, a := range o.YAxis.Data {
		b.WriteString(a.Name + strings.Join(a.Data, ""))
	}
	for _, s := range o.Series {
		b.WriteString(s.Name)
		for _, d := range s.Data {
			b.WriteString(d.Name)
		}
	}
	return b.String()
}
