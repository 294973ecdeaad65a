package report

import (
	"encoding/json"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/loomkit/loom/datasource"
)

// Limits on what FromResult draws: more categories than these make a
// chart nobody can read, and the table says it better.
const (
	maxBarCategories  = 50
	maxLinePoints     = 1000
	maxPieSlices      = 8
	maxValueColumns   = 6
	minRowsForAChart  = 2
	shareSumTolerance = 0.01
)

// FromResult chooses a chart for a SQL result, or none (false): no rows,
// a single row, or no numeric column gives no chart. The first column
// that is not numeric holds the categories (or the first column, when
// every column is numeric); up to six numeric columns become series.
// Categories that are dates or periods give a line, others bars; exactly
// two columns whose values are shares (summing to 1 or 100, or named
// like share, percent, 占比, 比例 and summing to no more) give a pie of up to
// eight slices. title is the chart's title; empty names the series.
func FromResult(res datasource.Result, title string) (Chart, bool) {
	if len(res.Rows) < minRowsForAChart || len(res.Columns) < 2 {
		return Chart{}, false
	}
	numeric := make([]bool, len(res.Columns))
	for i := range res.Columns {
		numeric[i] = numericColumn(res, i)
	}
	cat := -1
	for i, n := range numeric {
		if !n {
			cat = i
			break
		}
	}
	if cat < 0 {
		cat = 0
	}
	var values []int
	for i, n := range numeric {
		if n && i != cat && len(values) < maxValueColumns {
			values = append(values, i)
		}
	}
	if len(values) == 0 {
		return Chart{}, false
	}
	labels := make([]string, len(res.Rows))
	for r, row := range res.Rows {
		labels[r] = label(cell0(row, cat))
	}
	if title == "" {
		names := make([]string, len(values))
		for k, i := range values {
			names[k] = res.Columns[i]
		}
		title = strings.Join(names, ", ")
	}
	c := Chart{Title: Title{Text: title}}

	if len(res.Columns) == 2 && isShare(res, values[0]) && len(res.Rows) <= maxPieSlices {
		s := Series{Name: res.Columns[values[0]], Type: "pie"}
		for r, row := range res.Rows {
			v, _ := asFloat(cell0(row, values[0]), true)
			s.Data = append(s.Data, Datum{Name: labels[r], Value: v})
		}
		c.Series = []Series{s}
		return c, true
	}

	kind := "bar"
	if timeColumn(res, cat) {
		kind = "line"
	}
	if (kind == "bar" && len(res.Rows) > maxBarCategories) || len(res.Rows) > maxLinePoints {
		return Chart{}, false
	}
	c.XAxis = &Axis{Type: "category", Name: res.Columns[cat], Data: labels}
	c.YAxis = &Axis{Type: "value"}
	for _, i := range values {
		s := Series{Name: res.Columns[i], Type: kind}
		for _, row := range res.Rows {
			v, ok := asFloat(cell0(row, i), true)
			s.Data = append(s.Data, Datum{Value: v, Null: !ok})
		}
		c.Series = append(c.Series, s)
	}
	if len(c.Series) > 1 {
		c.Legend = &Legend{}
		for _, s := range c.Series {
			c.Legend.Data = append(c.Legend.Data, s.Name)
		}
	}
	return c, true
}

// cell0 is row[i], or nil for a short row.
func cell0(row []any, i int) any {
	if i < len(row) {
		return row[i]
	}
	return nil
}

// numericColumn: every value that is not NULL is a number (a numeric
// string counts when the column's database type is numeric), and there
// is at least one.
func numericColumn(res datasource.Result, i int) bool {
	typed := i < len(res.Types) && numericType(res.Types[i])
	seen := false
	for _, row := range res.Rows {
		v := cell0(row, i)
		if v == nil {
			continue
		}
		if _, ok := asFloat(v, typed); !ok {
			return false
		}
		seen = true
	}
	return seen
}

func numericType(t string) bool {
	t = strings.ToLower(t)
	for _, k := range []string{"int", "numeric", "decimal", "float", "double", "real", "money", "number"} {
		if strings.Contains(t, k) {
			return !strings.Contains(t, "interval") && !strings.Contains(t, "point")
		}
	}
	return false
}

// asFloat is v as a float64; strings count only when strs is set.
func asFloat(v any, strs bool) (float64, bool) {
	var f float64
	switch x := v.(type) {
	case nil, bool:
		return 0, false
	case json.Number:
		var err error
		if f, err = x.Float64(); err != nil {
			return 0, false
		}
	case string:
		if !strs {
			return 0, false
		}
		var err error
		if f, err = strconv.ParseFloat(strings.TrimSpace(x), 64); err != nil {
			return 0, false
		}
	default:
		switch rv := reflect.ValueOf(v); {
		case rv.CanInt():
			f = float64(rv.Int())
		case rv.CanUint():
			f = float64(rv.Uint())
		case rv.CanFloat():
			f = rv.Float()
		default:
			return 0, false
		}
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// label is a category value as text.
func label(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	}
	if f, ok := asFloat(v, false); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

var (
	shareName = regexp.MustCompile(`(?i)(share|proportion|percent|pct|占比|比例|份额|百分比|%)`)
	timeName  = regexp.MustCompile(`(?i)(^|_|\b)(date|day|week|month|quarter|year|time|period|dt)s?($|_|\b)|日期|时间|月份|年份|季度|周|日$|月$|年$`)
	timeValue = regexp.MustCompile(`^\d{4}([-/]\d{1,2}([-/]\d{1,2})?|[-/]?Q[1-4]|-W\d{1,2})([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$`)
)

// timeColumn: column i holds dates or periods, by its database type, its
// name or every value.
func timeColumn(res datasource.Result, i int) bool {
	if i < len(res.Types) {
		t := strings.ToLower(res.Types[i])
		if strings.Contains(t, "date") || strings.Contains(t, "time") || t == "year" {
			return true
		}
	}
	if timeName.MatchString(res.Columns[i]) {
		return true
	}
	for _, row := range res.Rows {
		s, ok := cell0(row, i).(string)
		if !ok || !timeValue.MatchString(strings.TrimSpace(s)) {
			return false
		}
	}
	return true
}

// isShare: column i's values are non-negative and sum to 1 or 100, or
// are named as a share and sum to no more than that (the top slices of a
// whole).
func isShare(res datasource.Result, i int) bool {
	sum := 0.0
	for _, row := range res.Rows {
		v, ok := asFloat(cell0(row, i), true)
		if !ok || v < 0 {
			return false
		}
		sum += v
	}
	if sum <= 0 {
		return false
	}
	if shareName.MatchString(res.Columns[i]) && sum <= 100*(1+shareSumTolerance) {
		return true
	}
	return math.Abs(sum-1) <= shareSumTolerance || math.Abs(sum-100) <= 100*shareSumTolerance
}
