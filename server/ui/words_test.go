package ui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/server"
)

// pageWords are the ASCII words the Chinese page may show: names of
// formats, protocols, units and keys, which Chinese writes in Latin letters too.
// The agents' names are added to them; anything else is an untranslated
// string.
var pageWords = []string{"API", "JSON", "SQL", "PDF", "PNG", "JPEG", "XLSX", "JRXML", "YAML", "HTML", "Mermaid", "mmd",
	"Loom", "English", "Authorization", "Bearer", "SSIM", "ms", "Ctrl"}

// englishWordsJS walks every text node the page shows (and the
// placeholders of its fields) and lists the ASCII words in them that are
// not in the allowed list. Text the agents and the user wrote is theirs,
// not the page's, and is left out: bubbles, values in views, questions,
// status lines, reasoning and drafts, code, the graph's drawing (its node
// names are the graph's), and anything marked data-content (an agent's
// description it gives in one language only).
const englishWordsJS = `((allowed) => {
  const allow = new Set(allowed.map((w) => w.toLowerCase()));
  const skip = 'script, style, code, pre, svg, [data-content], .bubble, .value, .question, .status-line, .reasoning-text, ' +
    '.stream-text, .md, #thread option, .note-text, .kn-title, .kn-text, .card-said';
  const found = [];
  const check = (text, where) => {
    for (const w of text.match(/[A-Za-z][A-Za-z0-9_.-]*/g) || []) {
      if (!allow.has(w.toLowerCase().replace(/[.]+$/, ''))) found.push(w + ' in ' + where);
    }
  };
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const e = n.parentElement;
    if (!n.textContent.trim() || e.closest(skip) || !e.checkVisibility()) continue;
    check(n.textContent, e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className && typeof e.className === 'string' ? '.' + e.className.split(' ')[0] : ''));
  }
  for (const e of document.querySelectorAll('[placeholder]')) if (e.checkVisibility()) check(e.placeholder, 'placeholder of #' + e.id);
  return [...new Set(found)];
})`

// The Chinese page shows no English of its own: for each agent `loom
// serve` registers, at rest and after a run (the demo's approval card,
// the schedule's plan, tool results and answered card), every text the
// page shows is Chinese, or a name, a unit or code. Nodes' and tools'
// names are folded away; history sources are words. Screenshots at 1400
// and 390 px go to the test's directory.
func TestBrowserChineseWhole(t *testing.T) {
	needChromium(t)
	base := startAll(t)
	b := openBrowser(t, screenshotDir(t))
	b.do("open the page", browserLanguage("zh-CN,zh"), chromedp.EmulateViewport(1400, 900), chromedp.Navigate(base+"/"),
		chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)))
	agents := eval[[]string](b, `[...document.querySelectorAll('#agent option')].map(o => o.value)`)
	allowed, _ := json.Marshal(append(slices.Clone(pageWords), agents...))
	english := func(when string) {
		t.Helper()
		if words := eval[[]string](b, englishWordsJS+`(`+string(allowed)+`)`); len(words) > 0 {
			t.Errorf("%s: the Chinese page shows English words: %q", when, words)
		}
	}
	for _, name := range agents {
		b.pickAgent(name)
		english("agent " + name + " at rest")
		if ph := eval[string](b, `document.querySelector('#message').placeholder`); !strings.HasPrefix(ph, "给 "+name+" 发消息") {
			t.Errorf("%s: the message box's placeholder is %q", name, ph)
		}
	}

	// The demo: its approval card; the steps fold under a count. The card
	// comes with the stream; the history is drawn after it ends, when the
	// page reads the thread again (and then says the run waits).
	pending := `.card.confirm[data-state="pending"]`
	b.pickAgent("demo")
	b.send("发布")
	b.do("wait for the demo's card", chromedp.WaitVisible(chromedp.CSS(pending)),
		chromedp.WaitEnabled(chromedp.CSS(pending+` button.accept`)),
		chromedp.WaitReady(chromedp.CSS(`body[data-run="waiting"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#history .src`)))
	english("the demo's approval card")
	if got := b.text(`.run details.steps > summary`); got != "步骤：9 步" {
		t.Errorf("the demo's steps are summed up as %q, want 步骤：9 步", got)
	}
	if open := eval[bool](b, `document.querySelector('.run details.steps').open`); open {
		t.Error("the steps' node names are not folded away")
	}
	if srcs := eval[[]string](b, `[...document.querySelectorAll('#history .src')].map(e => e.textContent)`); len(srcs) == 0 || slices.ContainsFunc(srcs, func(s string) bool {
		return strings.ContainsAny(s, "abcdefghijklmnopqrstuvwxyz")
	}) {
		t.Errorf("the history's sources read %q, want Chinese words", srcs)
	}
	b.noSideScroll("the demo's card in Chinese", "zh-demo")

	// The schedule: a plan card, then tool results as tables.
	b.pickAgent("schedule")
	b.send("帮我安排下周的复习")
	b.do("wait for the plan card", chromedp.WaitVisible(chromedp.CSS(pending)),
		chromedp.WaitEnabled(chromedp.CSS(pending+` button.accept`)),
		chromedp.WaitReady(chromedp.CSS(`body[data-run="waiting"]`)))
	english("the schedule's plan card")
	b.do("accept the plan", chromedp.Click(chromedp.CSS(pending+` button.accept`)),
		chromedp.WaitReady(chromedp.CSS(`.card.confirm[data-state="accepted"]`)),
		chromedp.WaitVisible(chromedp.CSS(pending)),
		chromedp.WaitReady(chromedp.CSS(`body[data-run="waiting"]`)))
	english("the schedule's tool results")
	if shown := eval[bool](b, `document.querySelector('.card.tool-call code').checkVisibility()`); shown {
		t.Error("a tool's name shows outside its details")
	}
	b.noSideScroll("the schedule's run in Chinese", "zh-schedule")

	// The cabin: an order looked up, a card, a reply.
	b.pickAgent("cabin")
	b.send("查订单A123，如果没发货就取消")
	b.do("wait for the cabin's card", chromedp.WaitVisible(chromedp.CSS(pending)),
		chromedp.WaitEnabled(chromedp.CSS(pending+` button.accept`)),
		chromedp.WaitReady(chromedp.CSS(`body[data-run="waiting"]`)))
	english("the cabin's card")
	b.do("accept the cabin's card", chromedp.Click(chromedp.CSS(pending+` button.accept`)),
		chromedp.WaitVisible(chromedp.CSS(`.run[data-status="done"] .bubble.reply`)))
	english("the cabin's reply")
	b.noSideScroll("the cabin's run in Chinese", "zh-cabin")

	// The SQL agent: a query's rows as a table.
	b.pickAgent("sqlagent")
	b.send("SELECT status, count(*) AS n FROM orders GROUP BY status")
	b.do("wait for the SQL agent's answer", chromedp.WaitVisible(chromedp.CSS(`.run[data-status="done"] .card.result`)))
	english("the SQL agent's answer")
	if cells := eval[[]string](b, `[...document.querySelectorAll('.card.tool-result table.rows tbody td:first-child')].map(td => td.textContent)`); !slices.Contains(cells, "cancelled") {
		t.Errorf("the query's cells read %q: its data (cancelled) is shown as it is, not translated", cells)
	}
	b.noSideScroll("the SQL agent's answer in Chinese", "zh-sqlagent")
	b.checkConsole()
}

// A bare path of this server's API in an agent's reply (a preview, a
// PDF) is a link: absolute, named by what it opens, with its path kept
// for the page to fetch with the key; text around it stays text.
func TestBrowserServerLinks(t *testing.T) {
	needChromium(t)
	type doc struct {
		Input string `json:"input"`
	}
	g := graph.New[doc]("linker")
	g.Node("answer", func(ctx context.Context, s doc) (doc, error) { return s, nil }).
		Edge(graph.Start, "answer").Edge("answer", graph.End)
	reply := "预览（1 页）：/api/v1/report/threads/t1/preview.png，PDF：/api/v1/report/threads/t1/versions/2.pdf。"
	base := serveAgents(t, t.TempDir(), nil, server.Agent{Name: "linker", Description: "replies with links",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"input":{"type":"string"}}}`), Build: server.Compile(g),
		Reply: func(json.RawMessage, *checkpoint.Interrupt) string { return reply }})
	b := openBrowser(t, screenshotDir(t))
	b.do("open the page", browserLanguage("zh-CN,zh"), chromedp.EmulateViewport(1400, 900), chromedp.Navigate(base+"/"),
		chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)))
	b.pickAgent("linker")
	b.send("链接")
	b.do("wait for the reply", chromedp.WaitVisible(chromedp.CSS(`.bubble.reply a`)))
	type link struct {
		Href string `json:"href"`
		Path string `json:"path"`
		Text string `json:"text"`
	}
	got := eval[[]link](b, `[...document.querySelectorAll('.bubble.reply a')].map((a) => ({href: a.getAttribute('href'), path: a.dataset.path, text: a.textContent}))`)
	want := []link{
		{base + "/api/v1/report/threads/t1/preview.png", "/api/v1/report/threads/t1/preview.png", "打开预览图"},
		{base + "/api/v1/report/threads/t1/versions/2.pdf", "/api/v1/report/threads/t1/versions/2.pdf", "打开 PDF 文件"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("the reply's links are %+v, want %+v", got, want)
	}
	if text := b.text(`.bubble.reply`); !strings.HasPrefix(text, "预览（1 页）：") || !strings.Contains(text, "，PDF：") {
		t.Errorf("the reply reads %q", text)
	}
	b.checkConsole()
}

// The thread menu lists every thread of the chosen agent, wherever it
// was made (the LangGraph API, the OpenAI chat API, the page), with a
// title read from the thread, and none of another agent's.
func TestBrowserThreadMenu(t *testing.T) {
	needChromium(t)
	base := startServer(t, nil)
	post := func(path, body string) *http.Response {
		t.Helper()
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode >= 300 {
			var buf bytes.Buffer
			buf.ReadFrom(resp.Body)
			t.Fatalf("POST %s: %s %s", path, resp.Status, buf.String())
		}
		return resp
	}
	// Over the LangGraph API: a thread with no metadata, then a run.
	var th struct {
		ID string `json:"thread_id"`
	}
	resp := post("/threads", `{}`)
	json.NewDecoder(resp.Body).Decode(&th)
	resp.Body.Close()
	post("/threads/"+th.ID+"/runs/wait", `{"assistant_id":"demo","input":{"title":"从接口来的清单"}}`).Body.Close()
	// Over the OpenAI chat API: the demo reads no title from a chat, so
	// its checklist is the default one, "release".
	resp = post("/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"聊天里的清单"}]}`)
	chat := resp.Header.Get("X-Loom-Thread")
	resp.Body.Close()
	if chat == "" {
		t.Fatal("the chat named no thread")
	}
	// Another agent's thread.
	resp = post("/threads", `{}`)
	var other struct {
		ID string `json:"thread_id"`
	}
	json.NewDecoder(resp.Body).Decode(&other)
	resp.Body.Close()
	post("/threads/"+other.ID+"/runs/wait", `{"assistant_id":"tools","input":{"question":"weather"}}`).Body.Close()

	b := openBrowser(t, screenshotDir(t))
	b.do("open the page", browserLanguage("zh-CN,zh"), chromedp.EmulateViewport(1400, 900), chromedp.Navigate(base+"/"),
		chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)))
	b.pickAgent("tools")
	b.pickAgent("demo")
	type option struct {
		ID    string `json:"id"`
		Title string `json:"title"`
		Text  string `json:"text"`
	}
	opts := eval[[]option](b, `[...document.querySelectorAll('#thread option')].filter(o => o.value).map(o => ({id: o.value, title: o.dataset.title, text: o.textContent}))`)
	byID := map[string]option{}
	for _, o := range opts {
		byID[o.ID] = o
	}
	for id, title := range map[string]string{th.ID: "从接口来的清单", chat: "release"} {
		o, ok := byID[id]
		if !ok {
			t.Errorf("the demo's thread menu %+v lacks thread %s (%s)", opts, id, title)
			continue
		}
		if o.Title != title || !strings.HasPrefix(o.Text, title+" · ") {
			t.Errorf("thread %s is listed as %q (title %q), want %q first", id, o.Text, o.Title, title)
		}
	}
	if _, ok := byID[other.ID]; ok {
		t.Errorf("the demo's thread menu lists the tools agent's thread %s", other.ID)
	}
	b.pickAgent("tools")
	if ids := eval[[]string](b, `[...document.querySelectorAll('#thread option')].filter(o => o.value).map(o => o.value)`); !slices.Contains(ids, other.ID) || slices.Contains(ids, th.ID) {
		t.Errorf("the tools agent's thread menu lists %q: want %s and none of the demo's", ids, other.ID)
	}
	b.checkConsole()
}
