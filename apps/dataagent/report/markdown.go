package report

import (
	"cmp"
	"strconv"
	"strings"

	"github.com/go-analyze/charts"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

// Markdown returns a report's Markdown for download. Chart blocks at the
// top level stay as their JSON, or with opts.ChartsAsTables become a
// bold title and a Markdown table of their data; a block that cannot be
// drawn keeps its source, preceded by the same note the page shows.
// Everything else is returned as written.
func Markdown(markdown string, opts Options) string {
	src := []byte(markdown)
	doc := goldmark.New(goldmark.WithExtensions(extension.Table)).Parser().Parse(text.NewReader(src))
	var b strings.Builder
	done := 0
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		fb, ok := n.(*ast.FencedCodeBlock)
		if !ok || !isChartBlock(string(fb.Language(src))) {
			continue
		}
		start, end := fenceSpan(fb, src)
		if start < done {
			continue
		}
		opt, err := parseChart(blockText(fb, src))
		switch {
		case err != nil:
			b.Write(src[done:start])
			b.WriteString("> " + chartProblem(err, opts.Locale) + "\n\n")
			b.Write(src[start:end])
		case opts.ChartsAsTables:
			b.Write(src[done:start])
			b.WriteString(chartTable(opt, opts.Locale))
		default:
			b.Write(src[done:end])
		}
		done = end
	}
	b.Write(src[done:])
	return b.String()
}

// fenceSpan is the byte range of a fenced block: from the start of its
// opening fence's line to the end of its closing fence's line (or of the
// document, for a block left open).
func fenceSpan(fb *ast.FencedCodeBlock, src []byte) (int, int) {
	start := fb.Info.Segment.Start
	for start > 0 && src[start-1] != '\n' {
		start--
	}
	pos := fb.Info.Segment.Stop
	if l := fb.Lines().Len(); l > 0 {
		pos = fb.Lines().At(l - 1).Stop
	} else {
		for pos < len(src) && src[pos] != '\n' {
			pos++
		}
		pos = min(pos+1, len(src))
	}
	if pos > 0 && src[pos-1] != '\n' {
		// the last content line ended the document without a newline
		return start, len(src)
	}
	// The line after the content is the closing fence, when there is one.
	end := pos
	for end < len(src) && src[end] != '\n' {
		end++
	}
	return start, min(end+1, len(src))
}

// chartTable writes a chart's data as a bold title and a Markdown table:
// a pie's slices as rows, other charts' categories as rows and series as
// columns.
func chartTable(opt *charts.EChartsOption, locale string) string {
	en := isEnglish(locale)
	word := func(zh, e string) string {
		if en {
			return e
		}
		return zh
	}
	var rows [][]string
	var header []string
	if opt.Series[0].Type == charts.ChartTypePie {
		header = []string{word("名称", "Name"), cmp.Or(opt.Series[0].Name, word("数值", "Value"))}
		for _, s := range opt.Series {
			for _, d := range s.Data {
				rows = append(rows, []string{d.Name, formatValue(d.Value.First())})
			}
		}
	} else {
		var cats []string
		axisName := ""
		if len(opt.XAxis.Data) > 0 && len(opt.XAxis.Data[0].Data) > 0 {
			cats, axisName = opt.XAxis.Data[0].Data, opt.XAxis.Data[0].Name
		} else if len(opt.YAxis.Data) > 0 && len(opt.YAxis.Data[0].Data) > 0 {
			cats, axisName = opt.YAxis.Data[0].Data, opt.YAxis.Data[0].Name
		}
		header = []string{cmp.Or(axisName, word("类别", "Category"))}
		n := len(cats)
		for i, s := range opt.Series {
			header = append(header, cmp.Or(s.Name, word("系列 ", "Series ")+strconv.Itoa(i+1)))
			n = max(n, len(s.Data))
		}
		for i := range n {
			row := []string{strconv.Itoa(i + 1)}
			if i < len(cats) {
				row[0] = cats[i]
			}
			for _, s := range opt.Series {
				v := ""
				if i < len(s.Data) {
					v = formatValue(s.Data[i].Value.First())
				}
				row = append(row, v)
			}
			rows = append(rows, row)
		}
	}
	var b strings.Builder
	if opt.Title.Text != "" {
		b.WriteString("**" + cell(opt.Title.Text) + "**\n\n")
	}
	writeRow(&b, header)
	b.WriteString("|" + strings.Repeat(" --- |", len(header)) + "\n")
	for _, r := range rows {
		writeRow(&b, r)
	}
	b.WriteString("\n")
	return b.String()
}

func writeRow(b *strings.Builder, cells []string) {
	b.WriteString("|")
	for _, c := range cells {
		b.WriteString(" " + cell(c) + " |")
	}
	b.WriteString("\n")
}

// cell makes text safe inside a Markdown table cell.
func cell(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "|", `\|`).Replace(s)
	return strings.TrimSpace(s)
}

func formatValue(v float64) string {
	if v == charts.GetNullValue() {
		return ""
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
