package ui_test

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/loomkit/loom/apps/cabin"
	"github.com/loomkit/loom/apps/dataagent"
	"github.com/loomkit/loom/apps/report"
	"github.com/loomkit/loom/apps/schedule"
)

// Each agent's own view, and graphs a person can read, at 1400 and 390
// px: the page opens on the agent with the smallest graph; the report
// designer's and the analyst's panels are loaded from their apps
// (/ui/panels/), the scheduler's timetable shows the week's courses by
// day and period; the graph zooms with its buttons, opens with readable
// labels, and its compact view folds a large graph into fewer boxes.
func TestBrowserViews(t *testing.T) {
	needChromium(t)
	dir := t.TempDir()
	quiet := slog.New(slog.DiscardHandler)
	base := serveAgents(t, dir, nil,
		demoAgent(),
		schedule.ServerAgent(schedule.ServerOptions{StreamDelay: -1, Logger: quiet}),
		cabin.ServerAgent(cabin.ServerOptions{Logger: quiet}),
		report.ServerAgent(report.ServerOptions{Schemas: []string{}, Logger: quiet}),
		dataagent.ServerAgent(dataagent.ServerOptions{DemoPath: filepath.Join(dir, "shop.db"), Logger: quiet}),
	)
	b := openBrowser(t, screenshotDir(t))
	b.do("open the page", chromedp.EmulateViewport(1400, 900), chromedp.Navigate(base+"/"),
		chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)))

	// The first look is the smallest graph.
	sizes := map[string]int{}
	for _, name := range []string{"demo", "schedule", "cabin", "report", "dataagent"} {
		var g struct {
			Spec struct {
				Nodes []string `json:"nodes"`
			} `json:"spec"`
		}
		getJSON(t, base+"/assistants/"+name+"/graph", &g)
		sizes[name] = len(g.Spec.Nodes)
	}
	opened := eval[string](b, `document.body.dataset.agent`)
	for name, n := range sizes {
		if n < sizes[opened] {
			t.Errorf("the page opened on %s (%d nodes), not the smaller %s (%d)", opened, sizes[opened], name, n)
		}
	}

	loaded := func(agent string) bool {
		return eval[bool](b, `performance.getEntriesByType('resource').some(e => e.name.endsWith('/ui/panels/`+agent+`/panel.js'))`)
	}
	b.pickAgent("report")
	b.do("wait for the report panel", chromedp.WaitVisible(chromedp.CSS(`#agent-panel #report-panel #report-note`)),
		chromedp.WaitVisible(chromedp.CSS(`#upload`)))
	if !loaded("report") {
		t.Error("the report designer's panel was not loaded from /ui/panels/report/panel.js")
	}
	b.pickAgent("dataagent")
	b.do("wait for the knowledge panel", chromedp.WaitVisible(chromedp.CSS(`#agent-panel #knowledge-panel li.kn-entry`)))
	if !loaded("dataagent") || eval[bool](b, `!!document.querySelector('#report-panel') || !document.querySelector('#upload').hidden`) {
		t.Error("the analyst's panel was not loaded from its app, or the report designer's stayed")
	}

	// The timetable: courses in their days and periods.
	b.pickAgent("schedule")
	b.do("wait for the timetable", chromedp.WaitVisible(chromedp.CSS(`#week-panel #week-grid .wk-entry.course`)))
	courses := eval[int](b, `document.querySelectorAll('#week-grid .wk-entry.course').length`)
	days := eval[int](b, `document.querySelectorAll('#week-grid .wk-day').length`)
	if courses < 5 || days < 5 {
		t.Errorf("the timetable shows %d courses over %d days", courses, days)
	}
	if pos := eval[string](b, `(() => { const e = document.querySelector('#week-grid .wk-entry.course'); return e.style.gridRow + ' ' + e.dataset.from; })()`); pos == "" {
		t.Error("a course has no place in the grid")
	}
	if head := b.text(`#week-grid .wk-day[data-dow="1"]`); head != "Mon" {
		t.Errorf("Monday's column is headed %q", head)
	}
	b.shot("views-schedule-1400x900.png")
	b.do("switch to Chinese", chromedp.Click(chromedp.CSS(`#lang`)))
	if head := b.text(`#week-grid .wk-day[data-dow="1"]`); head != "周一" {
		t.Errorf("in Chinese Monday's column is headed %q", head)
	}
	if h := b.text(`#week-h`); h != "本周" {
		t.Errorf("in Chinese the timetable is headed %q", h)
	}
	b.panelShot("#week-panel", "views-schedule-zh-390x844.png")
	b.do("switch back", chromedp.Click(chromedp.CSS(`#lang`)))

	// Zoom, readable labels and the compact view, on the largest graph.
	b.pickAgent("cabin")
	label := func() float64 {
		return eval[float64](b, `document.querySelector('#graph-svg g.node:not(.terminal) text').getBoundingClientRect().height`)
	}
	width := func() float64 {
		return eval[float64](b, `document.querySelector('#graph-svg').getBoundingClientRect().width`)
	}
	if h := label(); h < 10 {
		t.Errorf("the cabin's graph opens with labels %.1f px high", h)
	}
	w0 := width()
	b.do("zoom in", chromedp.Click(chromedp.CSS(`#zoom-in`)))
	if w1 := width(); w1 < w0*1.2 {
		t.Errorf("zoom in: the graph is %.0f px wide, was %.0f", w1, w0)
	}
	b.do("zoom out", chromedp.Click(chromedp.CSS(`#zoom-out`)), chromedp.Click(chromedp.CSS(`#zoom-out`)))
	if w2 := width(); w2 >= w0 {
		t.Errorf("zoom out twice: the graph is %.0f px wide, was %.0f before zooming in", w2, w0)
	}
	b.do("fit", chromedp.Click(chromedp.CSS(`#zoom-fit`)))
	full := eval[int](b, `document.querySelectorAll('#graph-svg g.node').length`)
	b.do("compact view", chromedp.Click(chromedp.CSS(`#compact`)),
		chromedp.WaitReady(chromedp.CSS(`#graph-wrap[data-compact="true"]`)))
	folded := eval[int](b, `document.querySelectorAll('#graph-svg g.node').length`)
	if folded >= full {
		t.Errorf("the compact view draws %d boxes, the full one %d", folded, full)
	}
	for _, size := range [][2]int64{{1400, 900}, {390, 844}} {
		b.do("resize", chromedp.EmulateViewport(size[0], size[1]))
		eval[bool](b, `(document.querySelector('#graph-wrap').scrollIntoView(), true)`)
		b.shot(fmt.Sprintf("views-cabin-compact-%dx%d.png", size[0], size[1]))
	}
	b.do("back to 1400x900", chromedp.EmulateViewport(1400, 900), chromedp.Click(chromedp.CSS(`#compact`)),
		chromedp.WaitReady(chromedp.CSS(`#graph-wrap[data-compact="false"]`)))
	if n := eval[int](b, `document.querySelectorAll('#graph-svg g.node').length`); n != full {
		t.Errorf("back from the compact view: %d boxes, want %d", n, full)
	}
	b.shot("views-cabin-1400x900.png")
	b.checkConsole()
}
