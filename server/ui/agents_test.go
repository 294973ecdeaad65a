package ui_test

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/loomkit/loom/apps/dataagent"
	"github.com/loomkit/loom/apps/report"
	"github.com/loomkit/loom/internal/testenv"
)

// agentsKey is the API key the page is given: every file it shows or
// downloads must carry it.
const agentsKey = "k-agents"

// TestBrowserReport uploads a JasperReports template from the chat to the
// report designer with no model: the turn makes a version from it, the
// side panel shows the preview (an image fetched with the key) and the
// version, and the version's PDF downloads as a PDF.
func TestBrowserReport(t *testing.T) {
	needChromium(t)
	tmpl := sharedSample(t, "jrxml/samples/alterdesign__AlterDesignReport.jrxml")
	base := startAgents(t)
	b := openBrowser(t, screenshotDir(t))
	b.openWithKey(base)
	b.pickAgent("report")
	if hidden := eval[bool](b, `!document.querySelector('#agent-panel > #report-panel') || document.querySelector('#upload').hidden`); hidden {
		t.Fatal("the report designer has no panel or no upload button")
	}
	if eval[bool](b, `!!document.querySelector('#knowledge-panel')`) {
		t.Error("the analyst's knowledge panel shows for the report designer")
	}

	// A file of another kind is refused with the server's message, and
	// starts no turn.
	txt := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(txt, []byte("just some notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.do("upload a text file", chromedp.SetUploadFiles(chromedp.CSS(`#upload-file`), []string{txt}, chromedp.NodeReady),
		chromedp.WaitVisible(chromedp.CSS(`#timeline .note.error`)))
	if msg := b.text(`#timeline .note.error`); !strings.Contains(msg, "415") && !strings.Contains(strings.ToLower(msg), "png") {
		t.Errorf("the refused upload says %q, not what the designer takes", msg)
	}
	if n := eval[int](b, `document.querySelectorAll('.msg.user, .run[data-kind="run"]').length`); n != 0 {
		t.Errorf("a refused upload showed %d messages or runs", n)
	}
	b.forgetConsole() // the 415 was the test's

	b.do("upload the template", chromedp.SetUploadFiles(chromedp.CSS(`#upload-file`), []string{tmpl}, chromedp.NodeReady),
		chromedp.WaitVisible(chromedp.CSS(`.msg.user .attachment`)),
		chromedp.WaitReady(chromedp.CSS(`body[data-run="done"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#report-versions li.version[data-version="1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#report-preview[src^="blob:"]`)))
	if got := b.text(`.msg.user .attachment`); !strings.Contains(got, filepath.Base(tmpl)) {
		t.Errorf("the message shows the upload as %q", got)
	}
	if kind := eval[string](b, `document.querySelector('.msg.user .attachment').dataset.kind`); kind != "jrxml" {
		t.Errorf("the upload was taken as %q, want jrxml", kind)
	}
	size := evalAwait[[]int](b, `new Promise((r) => { const i = document.querySelector('#report-preview'); const done = () => r([i.naturalWidth, i.naturalHeight]); i.complete ? done() : i.addEventListener('load', done); })`)
	if size[0] < 100 || size[1] < 100 {
		t.Errorf("the preview image is %dx%d: not a rendered page", size[0], size[1])
	}
	if n := eval[int](b, `document.querySelectorAll('#report-versions li.version').length`); n != 1 {
		t.Errorf("the panel lists %d versions, want 1", n)
	}
	if got := eval[[]string](b, `[...document.querySelectorAll('#report-versions li.version button.dl')].map(b => b.dataset.ext)`); strings.Join(got, ",") != "jrxml,png,pdf" {
		t.Errorf("the version's downloads are %q, want jrxml, png, pdf", got)
	}

	// Without the key the server refuses the preview: the panel's image
	// came with it.
	if st := evalAwait[int](b, `fetch('/api/v1/report/threads/' + document.body.dataset.thread + '/preview.png').then(r => r.status)`); st != 401 {
		t.Errorf("the preview without the key: %d, want 401", st)
	}
	b.forgetConsole() // that 401 was the test's

	// The PDF button hands the browser a blob fetched with the key.
	eval[bool](b, `(() => { window.loomBlobs = []; const make = URL.createObjectURL; URL.createObjectURL = (x) => { window.loomBlobs.push(x); return make.call(URL, x); }; return true; })()`)
	b.do("download the PDF", chromedp.Click(chromedp.CSS(`#report-versions li.version[data-version="1"] button.dl[data-ext="pdf"]`)))
	b.poll("the PDF's blob", `window.loomBlobs.length > 0`)
	head := evalAwait[string](b, `window.loomBlobs[0].slice(0, 5).text()`)
	if !strings.HasPrefix(head, "%PDF") {
		t.Errorf("the downloaded PDF starts with %q", head)
	}
	if ty := eval[string](b, `window.loomBlobs[0].type`); ty != "application/pdf" {
		t.Errorf("the PDF blob's type is %q", ty)
	}
	b.noSideScroll("the report designer", "report")
	b.panelShot("#report-panel", "report-panel-390x844.png")
	b.do("switch to Chinese", chromedp.Click(chromedp.CSS(`#lang`)))
	b.expectTexts("in Chinese", map[string]string{
		"#report-h": "报表", "#upload": "上传", "#report-note": "共 1 个版本，最新的在前。",
		`#report-versions li.version[data-version="1"] .seq`:             "第 1 版",
		`#report-versions li.version[data-version="1"] .v-main > .muted`: "新建 · 检查通过",
	})
	b.do("switch back", chromedp.Click(chromedp.CSS(`#lang`)))
	b.checkConsole()
}

// TestBrowserAnalyst asks the data analyst the demo shop's question with
// no model (answered from a stored example): the reply shows the HTML
// report inline, in a sandboxed frame with its chart; the knowledge panel
// lists the demo shop's entries, and a term added there is listed.
func TestBrowserAnalyst(t *testing.T) {
	needChromium(t)
	base := startAgents(t)
	b := openBrowser(t, screenshotDir(t))
	b.openWithKey(base)
	b.pickAgent("dataagent")
	if !eval[bool](b, `!document.querySelector('#report-panel') && document.querySelector('#upload').hidden`) {
		t.Error("the report designer's panel or upload button shows for the analyst")
	}
	b.do("wait for the knowledge", chromedp.WaitVisible(chromedp.CSS(`#knowledge-panel li.kn-entry`)))
	if src := eval[string](b, `document.querySelector('#kn-source').value`); src == "" {
		t.Fatal("the knowledge panel names no source")
	}
	before := eval[int](b, `document.querySelectorAll('#kn-entries li.kn-entry').length`)
	terms := eval[[]string](b, `[...document.querySelectorAll('#kn-entries li.kn-entry[data-kind="term"] .kn-title')].map(e => e.textContent)`)
	if !slices.Contains(terms, "客单价") {
		t.Errorf("the demo shop's terms are %q, want 客单价 among them", terms)
	}

	// Showing one kind lists only those.
	b.pickFilter("example")
	b.poll("the examples alone", `document.querySelectorAll('#kn-entries li.kn-entry').length > 0 && [...document.querySelectorAll('#kn-entries li.kn-entry')].every(li => li.dataset.kind === 'example')`)
	if n := eval[int](b, `document.querySelectorAll('#kn-entries li.kn-entry').length`); n >= before {
		t.Errorf("the examples alone are %d entries, all of them %d", n, before)
	}
	b.pickFilter("")
	if got := b.text(`#kn-filter option:checked`); got != "All" {
		t.Errorf("the kind filter shows %q, want All", got)
	}
	b.poll("all entries", `document.querySelectorAll('#kn-entries li.kn-entry').length === `+strconv.Itoa(before))

	b.send("每个品类的销售额是多少？")
	frame := `.run[data-status="done"] .card.analyst-report[data-state="loaded"] iframe.report-frame`
	b.do("wait for the report", chromedp.WaitReady(chromedp.CSS(`body[data-run="done"]`)),
		chromedp.WaitVisible(chromedp.CSS(frame)))
	// Sandboxed without scripts: the frame runs nothing, and keeps the
	// page's origin only so that it is drawn in the page's process.
	if sb := eval[string](b, `document.querySelector('`+frame+`').getAttribute('sandbox')`); sb != "allow-same-origin" {
		t.Errorf("the report frame's sandbox is %q, want allow-same-origin (no scripts)", sb)
	}
	doc := eval[string](b, `document.querySelector('`+frame+`').srcdoc`)
	if !strings.Contains(doc, "<svg") {
		t.Errorf("the inline report has no chart (<svg>): %.300s", doc)
	}
	if strings.Contains(strings.ToLower(doc), "<script") {
		t.Error("the inline report carries a script")
	}
	// The chart is laid out in the frame, and its bars are on screen.
	b.poll("the chart laid out in the frame", `(() => { const d = document.querySelector('`+frame+`').contentDocument;
		const svg = d && d.querySelector('svg'); return !!svg && svg.getBoundingClientRect().height > 100; })()`)
	drawn := false
	for range 50 {
		rect := eval[[]float64](b, `(() => { const f = document.querySelector('`+frame+`'); f.scrollIntoView({block: 'center'});
			const r = f.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom].map((v) => v * devicePixelRatio); })()`)
		png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot of the report frame: %v", err)
		}
		if blue(t, png, rect) > 500 {
			drawn = true
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !drawn {
		t.Error("the report frame shows no chart: no blue bar among its pixels")
	}
	if dis := eval[bool](b, `document.querySelector('.card.analyst-report button.download').disabled`); dis {
		t.Error("the report's download button is disabled")
	}
	b.noSideScroll("the analyst's report", "analyst")

	// Add a term in the panel: it is listed.
	b.do("add a term", chromedp.Click(chromedp.CSS(`#kn-form input[value="term"]`)),
		chromedp.SendKeys(chromedp.CSS(`#kn-a`), "回头客"),
		chromedp.SendKeys(chromedp.CSS(`#kn-b`), "下过两次及以上订单的客户"),
		chromedp.Click(chromedp.CSS(`#kn-form button[type="submit"]`)))
	b.poll("the new term", `[...document.querySelectorAll('#kn-entries .kn-title')].some(e => e.textContent === '回头客')`)
	if after := eval[int](b, `document.querySelectorAll('#kn-entries li.kn-entry').length`); after != before+1 {
		t.Errorf("after adding a term the panel lists %d entries, before %d", after, before)
	}

	// Import a YAML file into the source, then delete what it added.
	yml := filepath.Join(t.TempDir(), "extra.yaml")
	const file = "examples:\n  - question: 一共有多少个商品？\n    sql: SELECT count(*) AS products FROM products\n"
	if err := os.WriteFile(yml, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	b.do("import a YAML file", chromedp.SetUploadFiles(chromedp.CSS(`#kn-import-file`), []string{yml}, chromedp.NodeReady))
	imported := `#kn-entries li.kn-entry[data-kind="example"]`
	b.poll("the imported example", `[...document.querySelectorAll('`+imported+` .kn-title')].some(e => e.textContent === '一共有多少个商品？')`)
	if n := eval[int](b, `document.querySelectorAll('#kn-entries li.kn-entry').length`); n != before+2 {
		t.Errorf("after the import the panel lists %d entries, want %d", n, before+2)
	}
	if msg := b.text(`#kn-note`); !strings.Contains(msg, "extra.yaml") {
		t.Errorf("after the import the panel says %q", msg)
	}
	eval[bool](b, `([...document.querySelectorAll('`+imported+`')].find(li => li.querySelector('.kn-title').textContent === '一共有多少个商品？').querySelector('button.delete').click(), true)`)
	b.poll("the example deleted", `![...document.querySelectorAll('#kn-entries .kn-title')].some(e => e.textContent === '一共有多少个商品？') && document.querySelectorAll('#kn-entries li.kn-entry').length === `+strconv.Itoa(before+1))
	b.noSideScroll("the knowledge panel", "knowledge")
	b.panelShot("#knowledge-panel", "knowledge-panel-390x844.png")

	// In Chinese the panel and the report card speak Chinese.
	b.do("switch to Chinese", chromedp.Click(chromedp.CSS(`#lang`)))
	b.expectTexts("in Chinese", map[string]string{
		"#knowledge-h": "知识库", "#kn-import": "导入 YAML", `#kn-form button[type="submit"]`: "添加",
		`#kn-entries li.kn-entry[data-kind="term"] .tag`: "术语", ".card.analyst-report .card-title > span": "分析报告",
		".card.analyst-report button.download": "下载",
	})
	b.panelShot("#knowledge-panel", "knowledge-panel-zh-390x844.png")
	b.checkConsole()
}

// evalAwait evaluates a JavaScript expression that gives a promise, and
// returns what the promise resolves to.
func evalAwait[T any](b *browser, js string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// blue counts the pixels of a PNG, inside the rectangle [left, top,
// right, bottom], that are clearly blue (a chart's bars, not the page's
// grey or black text).
func blue(t *testing.T, data []byte, rect []float64) int {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("decode screenshot: %v", err)
	}
	if len(rect) != 4 {
		t.Fatalf("frame rectangle %v", rect)
	}
	n := 0
	r := image.Rect(int(rect[0]), int(rect[1]), int(rect[2]), int(rect[3])).Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			if cb>>8 > 150 && cr>>8 < 140 && cb>>8 > cr>>8+60 && cb>>8 > cg>>8+30 {
				n++
			}
		}
	}
	return n
}

// panelShot saves a screenshot at 390×844 with the panel sel scrolled
// into view (on a phone the panels come below the chat).
func (b *browser) panelShot(sel, name string) {
	b.t.Helper()
	b.do("resize to 390x844", chromedp.EmulateViewport(390, 844))
	eval[bool](b, `(document.querySelector('`+sel+`').scrollIntoView(), true)`)
	b.shot(name)
	b.do("back to 1400x900", chromedp.EmulateViewport(1400, 900))
}

// forgetConsole drops the console errors logged so far: errors the test
// caused on purpose.
func (b *browser) forgetConsole() {
	b.t.Helper()
	// Let the console's events of what was just done arrive first.
	evalAwait[bool](b, `new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`)
	b.mu.Lock()
	b.problems = nil
	b.mu.Unlock()
}

// pickFilter chooses kind in the knowledge panel's filter.
func (b *browser) pickFilter(kind string) {
	b.t.Helper()
	eval[bool](b, `(() => { const s = document.querySelector('#kn-filter'); s.value = `+jsString(kind)+`; return s.dispatchEvent(new Event('change')); })()`)
}

// poll waits until expression is true on the page.
func (b *browser) poll(what, expression string) {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](expression)); err != nil {
		b.shot("failed.png")
		b.checkConsole()
		b.t.Fatalf("wait for %s: %v", what, err)
	}
}

// openWithKey opens the page with the API key in its local storage.
func (b *browser) openWithKey(base string) {
	b.t.Helper()
	b.do("open the page", chromedp.EmulateViewport(1400, 900), chromedp.Navigate(base+"/"),
		chromedp.WaitReady(chromedp.CSS(`body`)))
	eval[bool](b, `(localStorage.setItem('loom.apiKey', `+jsString(agentsKey)+`), true)`)
	b.do("reload with the key", chromedp.Navigate(base+"/"), chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)))
	b.forgetConsole() // the first load, without the key, was refused
}

// sharedSample is a file of the data folder beside the repository; the
// test skips without it, and fails under CI.
func sharedSample(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "..", "shared", "data", name))
	if err == nil {
		_, err = os.Stat(p)
	}
	testenv.Need(t, fmt.Sprintf("no shared data file %s", name), err)
	return p
}

// startAgents serves the report designer and the data analyst with the
// page, behind an API key, on SQLite files in a temporary directory, with
// no model.
func startAgents(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	quiet := slog.New(slog.DiscardHandler)
	return serveAgents(t, dir, []string{agentsKey},
		report.ServerAgent(report.ServerOptions{Schemas: []string{}, Logger: quiet}),
		dataagent.ServerAgent(dataagent.ServerOptions{DemoPath: filepath.Join(dir, "shop.db"), Logger: quiet}),
	)
}
