package ui_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/loomkit/loom/apps/sqlagent"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/server"
)

// The SQL explorer's answer, on its demo shop with no model: typed SQL
// comes back as Markdown (the answer, the SQL in a fence, the rows in a
// table), which the page renders — a table of cells, not pipes; the SQL
// highlighted — and shows once: the tool result that holds the same rows
// folds away.
func TestBrowserMarkdown(t *testing.T) {
	needChromium(t)
	base := startMarkdown(t)
	b := openBrowser(t, screenshotDir(t))
	b.do("open the page", chromedp.EmulateViewport(1400, 900), chromedp.Navigate(base+"/"),
		chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)))
	b.pickAgent("sqlagent")
	b.send("SELECT status, COUNT(*) AS n FROM orders GROUP BY status ORDER BY n DESC")
	b.do("wait for the answer", chromedp.WaitReady(chromedp.CSS(`body[data-run="done"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.run[data-status="done"] .bubble.assistant table`)))
	reply := `.run[data-status="done"] .bubble.assistant`
	if heads := eval[[]string](b, `[...document.querySelectorAll('`+reply+` table th')].map(th => th.textContent)`); strings.Join(heads, ",") != "status,n" {
		t.Errorf("the answer's table has columns %q, want status, n", heads)
	}
	cells := eval[[]string](b, `[...document.querySelectorAll('`+reply+` table td')].map(td => td.textContent)`)
	if len(cells) != 10 || cells[0] != "delivered" || cells[1] != "646" {
		t.Errorf("the answer's table cells are %q, want 5 rows of status and count, delivered 646 first", cells)
	}
	if kw := eval[[]string](b, `[...document.querySelectorAll('`+reply+` pre.sql .kw')].map(s => s.textContent)`); len(kw) < 5 || kw[0] != "SELECT" {
		t.Errorf("the SQL's highlighted words are %q", kw)
	}
	if raw := eval[string](b, `[...document.querySelectorAll('#timeline *')].filter(e => e.checkVisibility()).map(e => [...e.childNodes].filter(n => n.nodeType === 3).map(n => n.data).join('')).find(s => /\|\s*-{3}|`+"```"+`|\*\*/.test(s)) ?? ''`); raw != "" {
		t.Errorf("the page shows Markdown raw: %q", raw)
	}
	// Shown once: the rows are visible in one table only.
	if n := eval[int](b, `[...document.querySelectorAll('#timeline table')].filter(t => t.checkVisibility() && t.textContent.includes('cancelled')).length`); n != 1 {
		t.Errorf("%d visible tables show the rows, want 1", n)
	}
	if got := eval[string](b, `(() => { const c = document.querySelector('.card.tool-result[data-repeated="true"] details.repeated'); return c ? String(c.open) : 'none'; })()`); got != "false" {
		t.Errorf("the tool result that the answer repeats is folded: %s, want false (closed)", got)
	}
	b.noSideScroll("the SQL answer", "md-1-sql")

	// Streamed Markdown and a draft of 500 pieces.
	b.pickAgent("writer")
	b.send("go")
	b.do("wait for the writer", chromedp.WaitReady(chromedp.CSS(`body[data-run="done"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.run[data-status="done"] .bubble.assistant .md-h`)))
	drafts := eval[[]string](b, `[...document.querySelectorAll('.run details.stream')].map(d => d.dataset.kind + ' ' + d.dataset.chunks + ' ' + d.open + ' ' + d.querySelector('pre').textContent.length)`)
	if len(drafts) != 1 || drafts[0] != "draft 500 false 3000" {
		t.Errorf("the draft shows as %q, want one folded box of 500 pieces, 3000 characters", drafts)
	}
	if n := eval[int](b, `document.querySelectorAll('.card.event').length`); n != 0 {
		t.Errorf("%d event cards, want none: the draft is one box", n)
	}
	md := `.run[data-status="done"] .bubble.assistant`
	for sel, want := range map[string]string{
		md + ` h5.md-h`:            "Plan",
		md + ` ul li:nth-child(2)`: "second step",
		md + ` strong`:             "bold",
		md + ` em`:                 "quiet",
		md + ` p code`:             "x < 1",
		md + ` ol li`:              "one",
		md + ` a[href="https://example.org/a?b=1"]`: "the docs",
	} {
		if got := eval[string](b, `document.querySelector(`+jsString(sel)+`)?.textContent ?? ''`); got != want {
			t.Errorf("%s shows %q, want %q", sel, got, want)
		}
	}
	if n := eval[int](b, `document.querySelectorAll('#timeline img, #timeline script, #timeline a[href^="javascript"], #timeline [onerror]').length`); n != 0 {
		t.Errorf("the answer's HTML made %d elements; it must show as text", n)
	}
	if got := eval[string](b, `document.querySelector(`+jsString(md)+`).textContent`); !strings.Contains(got, `<img src=x onerror="alert(1)">`) || !strings.Contains(got, "[bad](javascript:alert(2))") {
		t.Errorf("the raw HTML and the javascript: link do not show as text: %q", got)
	}
	if rel := eval[string](b, `document.querySelector(`+jsString(md+` a`)+`).rel`); rel != "noopener noreferrer" {
		t.Errorf("the link's rel is %q", rel)
	}
	b.noSideScroll("the writer's answer", "md-2-writer")
	b.checkConsole()
}

// startMarkdown serves the SQL explorer on its demo shop, and a writer
// that streams a draft of 500 pieces and then Markdown with HTML in it.
func startMarkdown(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	type doc struct {
		Input string `json:"input"`
		Done  bool   `json:"done"`
	}
	g := graph.New[doc]("writer")
	g.Node("draft", func(ctx context.Context, s doc) (doc, error) {
		for range 500 {
			graph.Emit(ctx, graph.Kind("draft"), "<band>")
		}
		return s, nil
	}).Node("answer", func(ctx context.Context, s doc) (doc, error) {
		text := "### Plan\n\n- first step\n- second step\n\nSome **bold** and *quiet* words, `x < 1`.\n\n1. one\n2. two\n\n" +
			"<img src=x onerror=\"alert(1)\"> and [bad](javascript:alert(2)) and [the docs](https://example.org/a?b=1)."
		for _, w := range strings.SplitAfter(text, " ") {
			graph.Emit(ctx, graph.KindToken, w)
		}
		s.Done = true
		return s, nil
	}).Edge(graph.Start, "draft").Edge("draft", "answer").Edge("answer", graph.End)
	return serveAgents(t, dir, nil,
		sqlagent.ServerAgent(sqlagent.ServerOptions{DemoPath: filepath.Join(dir, "shop.db"), Logger: slog.New(slog.DiscardHandler)}),
		server.Agent{Name: "writer", Description: "streams a draft, then Markdown",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"input":{"type":"string"}}}`), Build: server.Compile(g)},
	)
}
