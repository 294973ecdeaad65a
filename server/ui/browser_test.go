package ui_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/loomkit/loom/apps/demo"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/server/servertest"
	"github.com/loomkit/loom/server/ui"
)

// chromiumPath is Debian's Chromium, which .ci/run installs.
const chromiumPath = "/usr/bin/chromium"

// The page end to end in headless Chromium, on the real server with the
// demo agent: a message starts a run that stops at the confirm card;
// accept resumes it to the end; the graph shows the demo's nodes; the
// history lists the checkpoints, and undo and fork add a new head. A
// second agent shows reasoning, status, tool calls, streamed text and a
// rejection. Screenshots go to $LOOM_SCREENSHOTS (else a temporary
// directory).
func TestBrowser(t *testing.T) {
	needChromium(t)
	base := startServer(t, nil)
	b := openBrowser(t, screenshotDir(t))
	b.do("open the page", chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/"),
		chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)))

	// Pick the demo agent and send a message.
	b.pickAgent("demo")
	nodes := eval[[]string](b, `[...document.querySelectorAll('#graph-svg g.node')].map(g => g.dataset.node)`)
	for _, n := range []string{graph.Start, "draft", "check", "fix", "confirm", graph.End} {
		if !slices.Contains(nodes, n) {
			t.Errorf("the graph has nodes %q, not %q", nodes, n)
		}
	}
	loop := eval[string](b, `document.querySelector('#graph-svg g.edge.back[data-from="fix"][data-to="check"] text')?.textContent ?? ''`)
	if loop != "max 3×" {
		t.Errorf("the fix → check loop edge is labelled %q, want %q", loop, "max 3×")
	}
	if n := eval[int](b, `document.querySelectorAll('#graph-svg g.edge.conditional').length`); n != 3 {
		t.Errorf("%d dashed (route or exit) edges, want 3: check → fix, check → confirm, fix → confirm after 3×", n)
	}
	b.send("launch")

	// The run stops at the confirm card, with the confirm node waiting.
	pending := `.card.confirm[data-state="pending"]`
	b.do("wait for the confirm card", chromedp.WaitVisible(chromedp.CSS(pending)),
		chromedp.WaitReady(chromedp.CSS(`body[data-run="waiting"]`)),
		chromedp.WaitEnabled(chromedp.CSS(pending+` button.accept`)),
		chromedp.WaitReady(chromedp.CSS(`#graph-svg g.node.is-waiting[data-node="confirm"]`)))
	question := b.text(pending + ` .question`)
	if !strings.Contains(question, `Checklist "launch": 3 items`) {
		t.Errorf("the confirm card asks %q", question)
	}
	if chips := eval[[]string](b, `[...document.querySelectorAll('.run .chip')].map(c => c.dataset.node)`); len(chips) != 9 || chips[0] != "draft" || chips[8] != "confirm" {
		t.Errorf("the run's steps are %q, want draft, check, then fix and check 3 times, confirm", chips)
	}
	b.shot("1-confirm.png")

	// Accept: the run goes on to the end.
	tid := eval[string](b, `document.body.dataset.thread`)
	if tid == "" {
		t.Fatal("the page names no thread")
	}
	b.do("accept", chromedp.Click(chromedp.CSS(pending+` button.accept`)),
		chromedp.WaitReady(chromedp.CSS(`.card.confirm[data-state="accepted"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.run[data-status="done"] .card.result[data-status="done"]`)),
		chromedp.WaitReady(chromedp.CSS(`body[data-run="done"]`)))
	if got := b.text(`.card.confirm[data-state="accepted"] .card-answer`); got != "Accepted" {
		t.Errorf("the accepted card says %q, want Accepted", got)
	}
	if n := eval[int](b, `document.querySelectorAll('.msg.user').length`); n != 1 {
		t.Errorf("%d messages from the user, want 1: accepting a card is not a message", n)
	}
	if got := b.text(`.run[data-status="done"] .card.result .bool`); got != "yes" {
		t.Errorf("the result card shows approved %q, want yes", got)
	}
	var st threadState
	getJSON(t, base+"/threads/"+tid+"/state", &st)
	if !st.Values.Approved || len(st.Next) != 0 || len(st.Values.Items) != 3 {
		t.Errorf("after accept the thread's state is %+v, next %q; want approved with 3 items, nothing next", st.Values, st.Next)
	}

	// The history lists the thread's checkpoints.
	var hist []threadState
	getJSON(t, base+"/threads/"+tid+"/history?limit=50", &hist)
	rows := eval[[]string](b, `[...document.querySelectorAll('#history li.cp')].map(li => li.dataset.checkpoint)`)
	if len(hist) < 10 || len(rows) != len(hist) || rows[0] != hist[0].Checkpoint.ID {
		t.Fatalf("the history panel lists %d checkpoints (head %v), the API %d (head %s)", len(rows), rows[:min(1, len(rows))], len(hist), hist[0].Checkpoint.ID)
	}
	if n := eval[int](b, `document.querySelectorAll('#history li.cp.head button.undo:disabled').length`); n != 1 {
		t.Errorf("the head's undo button is not disabled")
	}

	// Undo to the checkpoint that waited for approval: a new head, and the
	// question is pending again.
	waiting := ""
	for _, h := range hist {
		if len(h.Tasks) > 0 && len(h.Tasks[0].Interrupts) > 0 {
			waiting = h.Checkpoint.ID
			break
		}
	}
	if waiting == "" {
		t.Fatal("no checkpoint in the history waits for approval")
	}
	b.do("undo", chromedp.Click(chromedp.CSS(`#history li.cp[data-checkpoint="`+waiting+`"] button.undo`)),
		chromedp.WaitVisible(chromedp.CSS(`.run[data-kind="undo"] `+pending)),
		chromedp.WaitReady(chromedp.CSS(`body[data-run="waiting"]`)),
		chromedp.WaitReady(chromedp.CSS(`#graph-svg g.node.is-waiting[data-node="confirm"]`)))
	var after []threadState
	getJSON(t, base+"/threads/"+tid+"/history?limit=50", &after)
	getJSON(t, base+"/threads/"+tid+"/state", &st)
	if len(after) != len(hist)+1 || after[0].Metadata.From != waiting || after[0].Metadata.Source != "undo" || st.Values.Approved || !slices.Equal(st.Next, []string{"confirm"}) {
		t.Errorf("after undo: %d checkpoints (before %d), head from %q (want %q), approved %v, next %q",
			len(after), len(hist), after[0].Metadata.From, waiting, st.Values.Approved, st.Next)
	}
	if head := eval[string](b, `document.querySelector('#history li.cp.head')?.dataset.checkpoint`); head != after[0].Checkpoint.ID {
		t.Errorf("the history panel's head is %q, the API's %q", head, after[0].Checkpoint.ID)
	}
	b.shot("2-undo.png")

	// Fork the head with a new title, in the form made from the state's
	// schema: another head, still waiting.
	b.do("open the fork dialog", chromedp.Click(chromedp.CSS(`#history li.cp.head button.fork`)),
		chromedp.WaitVisible(chromedp.CSS(`#fork-dialog[open] #fork-fields input#fork-f-title`)))
	types := eval[map[string]string](b, `Object.fromEntries([...document.querySelectorAll('#fork-fields [data-field]')].map(e => [e.dataset.field, e.dataset.type + ':' + (e.type || e.tagName)]))`)
	if types["title"] != "string:text" || types["approved"] != "boolean:checkbox" || types["items"] != "array:textarea" {
		t.Errorf("the fork form's fields are %v; want title as text, approved as a checkbox, items as JSON", types)
	}
	if eval[bool](b, `document.querySelector('#fork-raw-box').hidden === false`) {
		t.Error("the raw JSON shows beside the fork form")
	}
	b.shot("2b-fork-form.png")
	b.do("fork", chromedp.SetValue(chromedp.CSS(`#fork-f-title`), "launch v2"),
		chromedp.Click(chromedp.CSS(`#fork-dialog button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.run[data-kind="fork"] `+pending)),
		chromedp.WaitNotPresent(chromedp.CSS(`#fork-dialog[open]`)))
	getJSON(t, base+"/threads/"+tid+"/state", &st)
	if st.Values.Title != "launch v2" || len(st.Values.Items) != 3 || !slices.Equal(st.Next, []string{"confirm"}) || len(st.Tasks) == 0 || len(st.Tasks[0].Interrupts) == 0 {
		t.Errorf("after fork: state %+v, next %q, tasks %+v; want title launch v2, its 3 items kept, waiting on confirm", st.Values, st.Next, st.Tasks)
	}

	// Fork the head to a new thread, as raw JSON: the page opens it; this
	// one stays.
	b.do("open the fork dialog again", chromedp.Click(chromedp.CSS(`#history li.cp.head button.fork`)),
		chromedp.WaitVisible(chromedp.CSS(`#fork-dialog[open] #fork-f-title`)),
		chromedp.Click(chromedp.CSS(`#fork-raw`)),
		chromedp.WaitVisible(chromedp.CSS(`#fork-dialog[open] #fork-values`)))
	edited := eval[string](b, `(() => { const v = JSON.parse(document.querySelector('#fork-values').value); v.title = 'launch v3'; return JSON.stringify(v); })()`)
	b.do("fork to a new thread", chromedp.SetValue(chromedp.CSS(`#fork-values`), edited),
		chromedp.Click(chromedp.CSS(`#fork-new`)),
		chromedp.Click(chromedp.CSS(`#fork-dialog button[type="submit"]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#fork-dialog[open]`)),
		chromedp.WaitReady(chromedp.CSS(`#thread option:checked:not([value="`+tid+`"])`)))
	newTID := eval[string](b, `document.querySelector('#thread').value`)
	var forked threadState
	getJSON(t, base+"/threads/"+newTID+"/state", &forked)
	getJSON(t, base+"/threads/"+tid+"/state", &st)
	if newTID == tid || forked.Values.Title != "launch v3" || forked.Metadata.Source != "fork" || st.Values.Title != "launch v2" {
		t.Errorf("fork to a new thread: %s has %q (%s), %s still has %q", newTID, forked.Values.Title, forked.Metadata.Source, tid, st.Values.Title)
	}

	// Mermaid: the export button copies the text (or selects it where the
	// browser does not allow copying).
	b.do("copy the Mermaid text", chromedp.Click(chromedp.CSS(`#mermaid-copy`)),
		chromedp.WaitReady(chromedp.CSS(`#graph-msg:not(:empty)`)))
	if m := eval[string](b, `document.querySelector('#mermaid').textContent`); !strings.HasPrefix(m, "flowchart TD") {
		t.Errorf("the Mermaid text starts %q", m[:min(len(m), 40)])
	}

	// An agent with reasoning, status, tool calls and text; reject its
	// question.
	b.pickAgent("tools")
	b.send("the weather")
	b.do("wait for the tools agent's question", chromedp.WaitVisible(chromedp.CSS(pending)),
		chromedp.WaitReady(chromedp.CSS(`body[data-run="waiting"]`)),
		chromedp.WaitEnabled(chromedp.CSS(pending+` button.reject`)))
	if open := eval[bool](b, `document.querySelector('.reasoning[data-state="done"]')?.open ?? true`); open {
		t.Error("the reasoning is not folded when its step is done")
	}
	for sel, want := range map[string]string{
		`.reasoning .reasoning-text`:  "我应该先查一下",
		`.status-line`:                "looking it up",
		`.card.tool-call code`:        "search",
		`.card.tool-result .json`:     "3 results",
		`.card.tool-result table`:     "3 results",
		`.reasoning .count`:           "14 characters",
		`.bubble.assistant`:           "It is sunny over the weather.",
		pending + ` .question`:        "Send the answer?",
		`.card.tool-call .json`:       `"q": "the weather"`,
		`.run[data-status] .run-head`: "tools",
	} {
		if got := eval[string](b, `document.querySelector(`+jsString(sel)+`)?.textContent ?? ''`); !strings.Contains(got, want) {
			t.Errorf("%s shows %q, want %q", sel, got, want)
		}
	}
	if heads := eval[[]string](b, `[...document.querySelectorAll('.card.tool-result table th')].map(th => th.textContent)`); strings.Join(heads, ",") != "source,title" {
		t.Errorf("the tool result's table has columns %q, want source, title", heads)
	}
	if open := eval[bool](b, `document.querySelector('.card.tool-result details.raw').open`); open {
		t.Error("the tool result's raw JSON is not folded")
	}
	b.do("reject", chromedp.SendKeys(chromedp.CSS(pending+` .note-input`), "not now"),
		chromedp.Click(chromedp.CSS(pending+` button.reject`)),
		chromedp.WaitReady(chromedp.CSS(`.card.confirm[data-state="rejected"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.run[data-status="done"] .card.result`)))
	if got := b.text(`.card.confirm[data-state="rejected"] .card-answer`); got != "Rejected — not now" {
		t.Errorf("the rejected card says %q, want the answer and its note", got)
	}
	tid = eval[string](b, `document.body.dataset.thread`)
	var ts struct {
		Values toolState `json:"values"`
	}
	getJSON(t, base+"/threads/"+tid+"/state", &ts)
	if ts.Values.Sent || ts.Values.Note != "not now" {
		t.Errorf("after reject the tools agent's state is %+v, want not sent, note %q", ts.Values, "not now")
	}
	b.shot("3-tools.png")

	// A reload opens the same agent and thread, with its saved state.
	b.do("reload", chromedp.Navigate(base+"/"),
		chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"][data-agent="tools"][data-thread="`+tid+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.run[data-kind="saved"] .card.result`)))
	if got := b.text(`.run[data-kind="saved"] .card.result .bool`); got != "no" {
		t.Errorf("the reloaded thread shows sent %q, want no", got)
	}
	b.checkConsole()
}

// A server with API keys: the page asks for one, keeps it, and sends it.
func TestBrowserAPIKey(t *testing.T) {
	needChromium(t)
	base := startServer(t, []string{"k1"})
	b := openBrowser(t, screenshotDir(t))
	b.do("open the page", chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#settings[open] #api-key`)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline .note.error`)))
	if msg := b.text(`#timeline .note.error`); !strings.Contains(msg, "API key") {
		t.Errorf("without a key the page says %q", msg)
	}
	b.do("give the key", chromedp.SendKeys(chromedp.CSS(`#api-key`), "k1"),
		chromedp.Click(chromedp.CSS(`#key-form button[type="submit"]`)),
		chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"][data-agent]`)))
	if key := eval[string](b, `localStorage.getItem('loom.apiKey')`); key != "k1" {
		t.Errorf("the page stored key %q", key)
	}
	b.pickAgent("demo")
	b.send("keys")
	b.do("wait for the confirm card", chromedp.WaitVisible(chromedp.CSS(`.card.confirm[data-state="pending"]`)))
}

// needChromium skips the test where Debian's Chromium is not installed,
// and fails it under CI, where .ci/run installs it.
func needChromium(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing (.ci/run installs it with apt-get install -y chromium): %v", chromiumPath, err)
		}
		t.Skipf("no %s: install it with apt-get install -y chromium to run the browser test", chromiumPath)
	}
}

// screenshotDir is $LOOM_SCREENSHOTS, else a temporary directory.
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("LOOM_SCREENSHOTS")
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// threadState is the part of a LangGraph thread state the test reads.
type threadState struct {
	Values     demo.Doc `json:"values"`
	Next       []string `json:"next"`
	Checkpoint struct {
		ID string `json:"checkpoint_id"`
	} `json:"checkpoint"`
	Metadata struct {
		From   string `json:"from"`
		Source string `json:"loom_source"`
	} `json:"metadata"`
	Tasks []struct {
		Interrupts []json.RawMessage `json:"interrupts"`
	} `json:"tasks"`
}

// startServer serves the demo and tools agents with the page on a
// loopback port, on a SQLite file in a temporary directory, with keys.
func startServer(t *testing.T, keys []string) string {
	t.Helper()
	var reg server.Registry
	for _, a := range []server.Agent{
		demoAgent(),
		{
			Name:        "tools",
			Description: "reasons, calls a tool, writes an answer and asks before sending it",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"question":{"type":"string"}},"required":["question"]}`),
			Build:       server.Compile(toolsGraph()),
		},
	} {
		if err := reg.Register(a); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := server.New(context.Background(), server.Options{
		Agents:   &reg,
		Database: filepath.Join(t.TempDir(), "loom.db"),
		Keys:     keys,
		Logger:   slog.New(slog.DiscardHandler),
		UI:       ui.Handler(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return servertest.Serve(t, srv)
}

// toolState is the tools agent's state.
type toolState struct {
	Question string `json:"question"`
	Answer   string `json:"answer"`
	Sent     bool   `json:"sent"`
	Note     string `json:"note,omitempty"`
}

// toolsGraph reasons, calls a tool and streams an answer in one node, then
// asks whether to send it.
func toolsGraph() *graph.Graph[toolState] {
	g := graph.New[toolState]("tools")
	g.Node("research", func(ctx context.Context, s toolState) (toolState, error) {
		// Mostly Chinese: 12 characters and 2 words count 14 characters.
		graph.Emit(ctx, graph.KindReasoning, "用户问的是"+s.Question+"。")
		graph.Emit(ctx, graph.KindReasoning, "我应该先查一下。")
		graph.Emit(ctx, graph.KindStatus, "looking it up")
		graph.Emit(ctx, graph.KindToolCall, map[string]any{"name": "search", "arguments": map[string]string{"q": s.Question}})
		graph.Emit(ctx, graph.KindToolResult, map[string]any{"name": "search", "result": []map[string]string{
			{"title": "3 results", "source": "web"}, {"title": "sunny", "source": "forecast"}}})
		s.Answer = "It is sunny over " + s.Question + "."
		for _, w := range strings.SplitAfter(s.Answer, " ") {
			graph.Emit(ctx, graph.KindToken, w)
		}
		return s, nil
	}).
		Node("send", func(ctx context.Context, s toolState) (toolState, error) {
			a, err := graph.Ask[demo.Answer](ctx, map[string]string{"question": "Send the answer?", "answer": s.Answer})
			if err != nil {
				return s, err
			}
			s.Sent, s.Note = a.Accept, a.Note
			return s, nil
		}).
		Edge(graph.Start, "research").
		Edge("research", "send").
		Edge("send", graph.End)
	return g
}

// browser is a headless Chromium tab on the page.
type browser struct {
	t     *testing.T
	ctx   context.Context
	shots string

	mu       sync.Mutex
	problems []string // console errors and uncaught exceptions
}

// openBrowser starts Chromium with the flags a closed network needs and a
// fresh profile; every step the test takes is bounded by one deadline.
func openBrowser(t *testing.T, shots string, opts ...chromedp.ExecAllocatorOption) *browser {
	t.Helper()
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 860),
	}, opts...)...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	// The first call starts the browser, which lives as long as bctx: it
	// gets no deadline of its own (see chromedp.Run); the steps do.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start %s: %v", chromiumPath, err)
	}
	ctx, cancel := context.WithTimeout(bctx, 3*time.Minute)
	t.Cleanup(cancel)
	b := &browser{t: t, ctx: ctx, shots: shots}
	err := chromedp.Listen(ctx, func(ev any) {
		var p string
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			p = "exception: " + ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				p += " " + ev.ExceptionDetails.Exception.Description
			}
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				p = "console.error"
				for _, a := range ev.Args {
					p += " " + string(a.Value) + a.Description
				}
			}
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError {
				p = "log: " + ev.Entry.Text + " " + ev.Entry.URL
			}
		}
		if p != "" {
			b.mu.Lock()
			b.problems = append(b.problems, p)
			b.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatalf("listen to the page's console: %v", err)
	}
	return b
}

func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.shot("failed.png")
		b.checkConsole()
		b.t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression on the page.
func eval[T any](b *browser, js string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.TextContent(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

// pickAgent chooses agent name in the agent menu and waits until the page
// has loaded its graph and opened a new conversation.
func (b *browser) pickAgent(name string) {
	b.t.Helper()
	eval[bool](b, `delete document.body.dataset.agent`)
	b.do("pick agent "+name, chromedp.SetValue(chromedp.CSS(`#agent`), name))
	eval[bool](b, `document.querySelector('#agent').dispatchEvent(new Event('change'))`)
	b.do("wait for agent "+name, chromedp.WaitReady(chromedp.CSS(`body[data-agent="`+name+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#graph-svg g.node[data-node="__end__"]`)))
}

// send types a message and sends it.
func (b *browser) send(text string) {
	b.t.Helper()
	b.do("send "+text, chromedp.SendKeys(chromedp.CSS(`#message`), text), chromedp.Click(chromedp.CSS(`#send`)))
}

// shot saves a screenshot of the page.
func (b *browser) shot(name string) {
	b.t.Helper()
	// The page fits the viewport and scrolls inside its panels, so the
	// viewport is the picture (a "full" screenshot would reset the
	// panels' scroll).
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
		return
	}
	p := filepath.Join(b.shots, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Errorf("save screenshot: %v", err)
		return
	}
	b.t.Logf("screenshot: %s", p)
}

// checkConsole fails the test on console errors and uncaught exceptions.
func (b *browser) checkConsole() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		b.t.Errorf("the page logged an error: %s", p)
	}
	b.problems = nil
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: decode: %v", url, err)
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
