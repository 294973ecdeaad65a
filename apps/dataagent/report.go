package dataagent

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/loomkit/loom/contract"
	"github.com/loomkit/loom/datasource"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/internal/text"
	"github.com/loomkit/loom/server"
)

// reportGenerator writes the turn's report in Markdown with chart
// blocks: with a model, the model's report from the results and
// findings; without one, the results as a table and a chart. Either way
// the report says when Python did not run, and ends with the SQL that
// produced its figures.
func (a *Agent) reportGenerator(ctx context.Context, s State) (State, error) {
	status(ctx, s.Query, "Writing the report", "撰写报告")
	q := s.Query
	var md string
	if a.model(s) != nil {
		b := brief{}.add("Plan", planText(s.Plan)).
			add("Results", resultsText(s.Results, s.Query)).
			add("Findings of the analysis steps", strings.Join(s.PythonAnalysis, "\n\n")).
			add("Question", s.Enhanced.Canonical)
		if s.Step < len(s.Plan.Steps) {
			b = b.add("Report instruction", s.step().Instruction)
		}
		if len(s.Images) > 0 {
			names := make([]string, len(s.Images))
			for i, im := range s.Images {
				names[i] = im.Name
			}
			b = b.add("Charts the Python steps saved (they are shown after your report: do not link or embed them)", strings.Join(names, ", "))
		}
		text, err := askText(ctx, a.cfg.Model, prompt("report"), b.String())
		if err != nil {
			return s, fmt.Errorf("writing the report: %w", err)
		}
		md = strings.TrimSpace(text)
		if body, ok := contract.Block(md, "markdown"); ok && strings.HasPrefix(md, "```") {
			md = strings.TrimSpace(body) // the whole answer in one block
		}
		if !hasChart(md) {
			md += a.charts(s)
		}
	} else {
		md = "# " + text.OneLine(q, 120) + "\n\n" + fromExample(s) + "\n"
		// A result is shown as its chart, or as a table when it has none.
		for _, r := range s.Results {
			if chart := a.charts(State{Results: []StepResult{r}}); chart != "" {
				md += chart
			} else {
				md += "\n" + resultText(r, q) + "\n"
			}
		}
	}
	md += imagesText(s.Images, q)
	if s.FallbackNote != "" {
		md = insertAfterTitle(md, "> "+text.Say(q, "Python analysis could not run here, so this analysis ran without Python: ", "Python 分析无法运行，本次分析未使用 Python：")+text.OneLine(s.FallbackNote, 400)+"\n")
	}
	if len(s.Results) > 0 {
		md += "\n\n## SQL\n"
		for _, r := range s.Results {
			md += "\n```sql\n" + strings.TrimSpace(r.SQL) + "\n```\n"
		}
	}
	ans := &Answer{Text: summaryLine(md), Report: md, Fallback: s.FallbackNote}
	if thread := graph.Thread(ctx); thread != "" {
		ans.ReportPath = "/api/v1/dataagent/reports/" + url.PathEscape(server.ThreadID(thread))
	}
	if s.Example != nil && a.model(s) == nil {
		ans.FromExample = s.Example.Title
	}
	if n := len(s.Results); n > 0 {
		r := s.Results[n-1]
		ans.SQL, ans.Columns, ans.Rows, ans.Truncated = r.SQL, r.Columns, r.Rows, r.Truncated
	}
	if s.Step < len(s.Plan.Steps) {
		s.Step++
	}
	return s.finish(ans), nil
}

// imagesText shows the Python steps' charts, carried in the report as
// data URIs so that the page and the Markdown download hold them.
func imagesText(images []Image, q string) string {
	if len(images) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(text.Say(q, "\n\n## Charts of the analysis\n", "\n\n## 分析图表\n"))
	for _, im := range images {
		alt := strings.TrimSuffix(im.Name, path.Ext(im.Name))
		alt = strings.NewReplacer("[", "(", "]", ")", "\n", " ").Replace(alt)
		fmt.Fprintf(&b, "\n![%s](data:image/png;base64,%s)\n", alt, base64.StdEncoding.EncodeToString(im.PNG))
	}
	return b.String()
}

// charts are chart blocks for the results that have something to draw.
func (a *Agent) charts(s State) string {
	if a.cfg.Report == nil {
		return ""
	}
	var b strings.Builder
	for _, r := range s.Results {
		block, ok := a.cfg.Report.Chart(datasource.Result{Columns: r.Columns, Rows: r.Rows}, text.OneLine(r.Instruction, 60))
		if ok {
			b.WriteString("\n" + block)
		}
	}
	return b.String()
}

func hasChart(md string) bool {
	for _, lang := range []string{"```echarts", "```echart", "```chart"} {
		if strings.Contains(md, lang) {
			return true
		}
	}
	return false
}

// insertAfterTitle puts text after the report's first heading line.
func insertAfterTitle(md, text string) string {
	if strings.HasPrefix(md, "# ") {
		if i := strings.Index(md, "\n"); i >= 0 {
			return md[:i+1] + "\n" + text + md[i+1:]
		}
	}
	return text + "\n" + md
}

// summaryLine is the report's first paragraph that is not a heading, a
// quote or a block.
func summaryLine(md string) string {
	for _, p := range strings.Split(md, "\n\n") {
		p = strings.TrimSpace(p)
		if p == "" || strings.HasPrefix(p, "#") || strings.HasPrefix(p, ">") || strings.HasPrefix(p, "```") || strings.HasPrefix(p, "|") {
			continue
		}
		return text.OneLine(p, 400)
	}
	return ""
}
