package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/loomkit/loom/apps/cabin"
	"github.com/loomkit/loom/apps/demo"
	"github.com/loomkit/loom/apps/schedule"
	"github.com/loomkit/loom/apps/sqlagent"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/server/servertest"
	"github.com/loomkit/loom/server/ui"
)

// The page in a Chinese browser, with every agent `loom serve` registers:
// it speaks Chinese and switches to English; each agent's graph is drawn
// with no two labels overlapping; the schedule's plan card and tool
// results read as lists and tables with the JSON folded; the answered
// card says what was answered; and the page never scrolls sideways, on a
// desktop (1400×900) or a phone (390×844). Screenshots of both go to the
// test's directory.
func TestBrowserPage(t *testing.T) {
	needChromium(t)
	base := startAll(t)
	dir := screenshotDir(t)
	b := openBrowser(t, dir)
	b.do("open the page", browserLanguage("zh-CN,zh"), chromedp.EmulateViewport(1400, 900), chromedp.Navigate(base+"/"),
		chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)))

	// The browser's language, then the switch.
	if got := eval[string](b, `navigator.language`); !strings.HasPrefix(got, "zh") {
		t.Fatalf("the browser's language is %q: the override did not take", got)
	}
	zh := map[string]string{"#send": "发送", "#graph-h": "流程图", "#history-h": "历史", "#new-thread": "新会话", "#lang": "English"}
	en := map[string]string{"#send": "Send", "#graph-h": "Graph", "#history-h": "History", "#new-thread": "New thread", "#lang": "中文"}
	b.expectTexts("a Chinese browser", zh)
	if l := eval[string](b, `document.documentElement.lang`); l != "zh-CN" {
		t.Errorf("<html lang=%q> in a Chinese browser, want zh-CN", l)
	}
	b.do("switch to English", chromedp.Click(chromedp.CSS(`#lang`)))
	b.expectTexts("after the switch", en)
	if l := eval[string](b, `document.documentElement.lang + ' ' + localStorage.getItem('loom.lang')`); l != "en en" {
		t.Errorf("after the switch: lang and stored choice %q, want \"en en\"", l)
	}
	b.do("switch back", chromedp.Click(chromedp.CSS(`#lang`)))
	b.expectTexts("after switching back", zh)

	// Every agent's graph: the labels (nodes' and edges') never overlap,
	// and every bounded edge is labelled.
	agents := eval[[]string](b, `[...document.querySelectorAll('#agent option')].map(o => o.value)`)
	if len(agents) != 4 {
		t.Fatalf("the agent menu lists %q, want the four agents loom serve registers", agents)
	}
	for _, name := range agents {
		b.pickAgent(name)
		var spec struct {
			Spec struct {
				Edges []struct {
					Max int `json:"max"`
				} `json:"edges"`
			} `json:"spec"`
		}
		getJSON(t, base+"/assistants/"+name+"/graph", &spec)
		bounded := 0
		for _, e := range spec.Spec.Edges {
			if e.Max > 0 {
				bounded++
			}
		}
		got := eval[labelCheck](b, labelOverlapJS)
		if got.EdgeLabels != bounded {
			t.Errorf("%s: %d edge labels drawn, the graph has %d bounded edges", name, got.EdgeLabels, bounded)
		}
		if got.Labels < 3 || len(got.Overlaps) > 0 {
			t.Errorf("%s: %d labels, overlapping pairs %q", name, got.Labels, got.Overlaps)
		}
		if strings.Contains(got.Texts, "max") {
			t.Errorf("%s: the Chinese page labels edges %q", name, got.Texts)
		}
	}

	// The schedule: a plan card, read once, as a table of steps.
	b.pickAgent("schedule")
	b.send("帮我安排下周的复习")
	pending := `.card.confirm[data-state="pending"]`
	b.do("wait for the plan card", chromedp.WaitVisible(chromedp.CSS(pending)),
		chromedp.WaitEnabled(chromedp.CSS(pending+` button.accept`)))
	q := b.text(pending + ` .question`)
	if !strings.HasPrefix(q, "计划（共 2 步") || strings.Contains(q, "完成标准") {
		t.Errorf("the plan card's question is %q: want the plan's heading, its steps once, in the table", q)
	}
	if heads := eval[[]string](b, `[...document.querySelectorAll('`+pending+` table.data th')].map(th => th.textContent)`); strings.Join(heads, ",") != "内容,完成标准" {
		t.Errorf("the plan's table has columns %q, want 内容, 完成标准", heads)
	}
	if rows := eval[int](b, `document.querySelectorAll('`+pending+` table.data tbody tr').length`); rows != 2 {
		t.Errorf("the plan's table has %d rows, want 2 steps", rows)
	}
	if open := eval[bool](b, `document.querySelector('`+pending+` details.more').open`); open {
		t.Error("the plan card's details (kind, node, JSON) are not folded")
	}
	if kind := eval[string](b, `document.querySelector('`+pending+` details.more dl')?.textContent ?? ''`); !strings.Contains(kind, "plan") {
		t.Errorf("the folded details show %q, want the card's kind", kind)
	}
	b.noSideScroll("the plan card", "schedule-1-plan")

	// Accept: the card says so; the tool results are tables with the JSON
	// behind a toggle.
	b.do("accept the plan", chromedp.Click(chromedp.CSS(pending+` button.accept`)),
		chromedp.WaitReady(chromedp.CSS(`.card.confirm[data-state="accepted"]`)),
		chromedp.WaitVisible(chromedp.CSS(pending)))
	if got := b.text(`.card.confirm[data-state="accepted"] .card-answer`); got != "已同意" {
		t.Errorf("the accepted card says %q, want 已同意", got)
	}
	if got := b.text(`.card.confirm[data-state="accepted"] .card-heading`); got != "你已回答" {
		t.Errorf("the accepted card's heading is %q", got)
	}
	if n := eval[int](b, `[...document.querySelectorAll('.msg.user .bubble')].filter(b => /同意|Accept/.test(b.textContent)).length`); n != 0 {
		t.Errorf("%d user bubbles say the card was accepted, as if the user had typed it", n)
	}
	result := `.card.tool-result`
	tables := eval[int](b, `[...document.querySelectorAll('`+result+`')].filter(c => c.querySelector('table.data') && c.querySelector('details.raw:not([open]) pre.json')).length`)
	if tables == 0 {
		t.Error("no tool result shows a table with its JSON folded behind a toggle")
	}
	raw := eval[string](b, `(() => { const d = document.querySelector('`+result+` details.raw'); d.open = true; return d.querySelector('pre.json').textContent; })()`)
	if !strings.HasPrefix(raw, "{\n  \"") && !strings.HasPrefix(raw, "[\n  ") {
		t.Errorf("the raw toggle shows %q, want indented JSON", raw[:min(len(raw), 40)])
	}
	// The heuristics' reasoning is Chinese: counted in characters.
	if got := eval[string](b, `(() => { const c = document.querySelector('.reasoning .count'); return c.dataset.unit + ' ' + c.textContent.endsWith(c.dataset.n + ' 字'); })()`); got != "chars true" {
		t.Errorf("the reasoning's count: %q, want characters, said in 字", got)
	}
	if got := b.text(`.card.tool-call code`); got != "get_overview" {
		t.Errorf("the first tool call names %q", got)
	}
	b.noSideScroll("the schedule's run", "schedule-2-run")

	// In English too, after the switch.
	b.do("switch to English", chromedp.Click(chromedp.CSS(`#lang`)))
	if got := b.text(`.card.confirm[data-state="accepted"] .card-answer`); got != "Accepted" {
		t.Errorf("after the switch the accepted card says %q", got)
	}
	b.noSideScroll("the schedule's run in English", "schedule-3-en")
	b.checkConsole()
}

// browserLanguage makes the tab's browser speak langs (navigator.languages
// and Accept-Language), as a browser set to those languages does.
func browserLanguage(langs string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		ua, err := chromedp.Evaluate[string](`navigator.userAgent`)(ctx, tg)
		if err != nil {
			return chromedp.Void{}, err
		}
		_, err = cdp.Call(ctx, tg, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: ua, AcceptLanguage: langs})
		return chromedp.Void{}, err
	}
}

// labelCheck is what labelOverlapJS reports.
type labelCheck struct {
	Labels     int      `json:"labels"`
	EdgeLabels int      `json:"edgeLabels"`
	Overlaps   []string `json:"overlaps"`
	Texts      string   `json:"texts"`
}

// labelOverlapJS measures every text of the graph (node names and edge
// labels) with getBBox, in the drawing's coordinates, and lists the pairs
// whose boxes intersect.
const labelOverlapJS = `(() => {
  const svg = document.querySelector('#graph-svg');
  const texts = [...svg.querySelectorAll('text')];
  const box = (e) => {
    const b = e.getBBox();
    const m = e.getCTM();
    const s = svg.getCTM().inverse().multiply(m);
    return { x: b.x + s.e, y: b.y + s.f, w: b.width, h: b.height, name: e.textContent };
  };
  const boxes = texts.map(box);
  const overlaps = [];
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i], b = boxes[j];
      if (a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h) overlaps.push(a.name + ' × ' + b.name);
    }
  }
  return { labels: boxes.length, edgeLabels: svg.querySelectorAll('text.edge-label').length, overlaps,
    texts: [...svg.querySelectorAll('text.edge-label')].map((e) => e.textContent).join(' | ') };
})()`

// expectTexts checks the text of each selector.
func (b *browser) expectTexts(when string, want map[string]string) {
	b.t.Helper()
	for sel, w := range want {
		if got := b.text(sel); got != w {
			b.t.Errorf("%s: %s says %q, want %q", when, sel, got, w)
		}
	}
}

// noSideScroll checks, at 1400×900 and at 390×844, that the page does not
// scroll sideways, and saves a screenshot of each.
func (b *browser) noSideScroll(what, shot string) {
	b.t.Helper()
	for _, size := range [][2]int64{{1400, 900}, {390, 844}} {
		b.do(fmt.Sprintf("resize to %dx%d", size[0], size[1]), chromedp.EmulateViewport(size[0], size[1]))
		if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`, chromedp.EvalAwaitPromise)); err != nil {
			b.t.Fatalf("wait for a frame: %v", err)
		}
		sw := eval[[]int](b, `[document.scrollingElement.scrollWidth, document.scrollingElement.clientWidth]`)
		if sw[0] > sw[1] {
			wide := eval[[]string](b, `[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5).slice(0, 8).map(e => e.tagName + '.' + e.className)`)
			b.t.Errorf("%s at %dx%d scrolls sideways: scrollWidth %d > clientWidth %d; too wide: %q", what, size[0], size[1], sw[0], sw[1], wide)
		}
		b.shot(fmt.Sprintf("%s-%dx%d.png", shot, size[0], size[1]))
	}
	b.do("back to 1400x900", chromedp.EmulateViewport(1400, 900))
}

// startAll serves the agents `loom serve` registers (demo, schedule,
// cabin, sqlagent) with the page, on SQLite files in a temporary
// directory.
func startAll(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	quiet := slog.New(slog.DiscardHandler)
	return serveAgents(t, dir, nil,
		demoAgent(),
		schedule.ServerAgent(schedule.ServerOptions{StreamDelay: -1, Logger: quiet}),
		cabin.ServerAgent(cabin.ServerOptions{Logger: quiet}),
		sqlagent.ServerAgent(sqlagent.ServerOptions{DemoPath: filepath.Join(dir, "shop.db"), Logger: quiet}),
	)
}

// serveAgents serves agents with the page on a loopback port, on a
// SQLite file in dir, behind keys (none: open on loopback).
func serveAgents(t *testing.T, dir string, keys []string, agents ...server.Agent) string {
	t.Helper()
	var reg server.Registry
	for _, a := range agents {
		if err := reg.Register(a); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := server.New(context.Background(), server.Options{Agents: &reg, Database: filepath.Join(dir, "loom.db"), Keys: keys,
		Logger: slog.New(slog.DiscardHandler), UI: ui.Handler()})
	if err != nil {
		t.Fatal(err)
	}
	return servertest.Serve(t, srv)
}

// demoAgent is the demo checklist as the other tests serve it.
func demoAgent() server.Agent {
	return server.Agent{
		Name:        "demo",
		Description: "checklist with a bounded correction loop and an approval (no model needed)",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string","description":"what the checklist is for, e.g. launch"}}}`),
		Build:       server.Compile(demo.Graph()),
	}
}
