package report_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"mime/multipart"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/loomkit/loom/apps/report"
	"github.com/loomkit/loom/llm/llmtest"
)

// TestSeedScenariosOverHTTP runs the design notes' scenarios 1 and 3–8
// over HTTP with a scripted model (scenario 2 is TestThreeStages), and
// checks each turn's path of nodes, from the run's events, and the state
// it leaves.
func TestSeedScenariosOverHTTP(t *testing.T) {
	dir := t.TempDir()
	model := llmtest.New(t)
	l := serve(t, model, filepath.Join(dir, "loom.db"), report.ServerOptions{})
	check := func(tr turn, want ...string) {
		t.Helper()
		if got := tr.String(); got != path(want...) {
			t.Errorf("path\n got %s\nwant %s", got, path(want...))
		}
	}

	// 1: a new report in one shot.
	model.Add(xmlReply(goodJRXML))
	tr := l.run("s1", report.Input{Message: "帮我生成一个销售报表"})
	check(tr, "process_input", "classify_intent", "retrieve", "generate", "save_session", "validate", "finalize")
	if st := tr.state; st.Final != goodJRXML || st.Version != 1 || st.Turn.Status != "pass" || st.Turn.By != "local" || !strings.Contains(st.Turn.Reply, "第 1 版已通过验证") {
		t.Errorf("after generate: version %d status %q by %q reply %q final %d bytes", st.Version, st.Turn.Status, st.Turn.By, st.Turn.Reply, len(st.Final))
	}
	if reqs := model.Requests(); len(reqs) != 1 || !reqs[0].Stream() || !strings.Contains(system(reqs[0]), "JasperReports 6.x expert") {
		t.Errorf("%d model requests; the generation should be one streamed request", len(reqs))
	}

	// 3: a change.
	model.Add(xmlReply(biggerTitle))
	tr = l.run("s1", report.Input{Message: "把标题字体改大"})
	check(tr, "process_input", "classify_intent", "modify_jrxml", "save_session", "validate", "finalize")
	if st := tr.state; st.JRXML != biggerTitle || st.Version != 2 || st.Revision != 2 {
		t.Errorf("after modify: version %d revision %d", st.Version, st.Revision)
	}
	if sys := system(model.Requests()[1]); !strings.Contains(sys, `size="18"`) {
		t.Errorf("the change's request does not carry the current template:\n%s", sys)
	}

	// 4: preview and export skip validation and the model.
	n := len(model.Requests())
	tr = l.run("s1", report.Input{Message: "预览报表"})
	check(tr, "process_input", "classify_intent", "save_session", "finalize")
	if !strings.Contains(tr.state.Turn.Reply, "/api/v1/report/threads/s1/preview.png") {
		t.Errorf("preview reply %q", tr.state.Turn.Reply)
	}
	code, png := l.Do(keyA, "GET", "/api/v1/report/threads/s1/preview.png", nil)
	if code != 200 || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("preview.png: %d %.40q", code, png)
	}
	tr = l.run("s1", report.Input{Message: "导出 PDF"})
	check(tr, "process_input", "classify_intent", "save_session", "finalize")
	code, pdf := l.Do(keyA, "GET", "/api/v1/report/threads/s1/current.pdf", nil)
	if code != 200 || !bytes.HasPrefix(pdf, []byte("%PDF")) {
		t.Errorf("current.pdf: %d %.40q", code, pdf)
	}
	if len(model.Requests()) != n {
		t.Errorf("preview and export asked the model")
	}
	if tr.state.Version != 2 {
		t.Errorf("export recorded a version: %d", tr.state.Version)
	}

	// 5: a question.
	model.Add(llmtest.Text("$F{} 是数据源的字段，$P{} 是运行时传入的参数。"))
	tr = l.run("s1", report.Input{Message: "JasperReports 里 $F 和 $P 有什么区别？"})
	check(tr, "process_input", "classify_intent", "handle_consult", "finalize")
	if tr.state.Turn.Reply != "$F{} 是数据源的字段，$P{} 是运行时传入的参数。" || tr.state.JRXML != biggerTitle {
		t.Errorf("consult: reply %q", tr.state.Turn.Reply)
	}

	// 6: undo goes back to the template before the change.
	tr = l.run("s1", report.Input{Message: "撤销"})
	check(tr, "process_input", "classify_intent", "handle_undo", "save_session", "validate", "finalize")
	if st := tr.state; st.JRXML != goodJRXML || st.Revision != 1 || st.Version != 3 {
		t.Errorf("after undo: revision %d version %d, template is the first: %v", st.Revision, st.Version, st.JRXML == goodJRXML)
	}

	// 8: an unknown intent changes the current template… The conversation
	// is past the view's window now: the model summarises its older part
	// before the change, and the change's request carries the summary.
	const summary = "The user made a sales report and enlarged its title."
	model.Add(llmtest.Text(`<DECISION>{"intent": "unknown"}</DECISION>`), llmtest.Text(summary), xmlReply(biggerTitle))
	tr = l.run("s1", report.Input{Message: "嗯，这样那样弄一下"})
	check(tr, "process_input", "classify_intent", "modify_jrxml", "save_session", "validate", "finalize")
	if tr.state.Turn.By != "fallback" || tr.state.JRXML != biggerTitle {
		t.Errorf("fallback with a template: by %q", tr.state.Turn.By)
	}
	if reqs := model.Requests(); !strings.Contains(system(reqs[len(reqs)-1]), summary) || tr.state.Summary.Text != summary {
		t.Errorf("the change's request does not carry the model's summary of the older turns (state: %+v)", tr.state.Summary)
	}
	// … and makes a new one when there is none.
	model.Add(llmtest.Text(`<DECISION>{"intent": "unknown"}</DECISION>`), xmlReply(goodJRXML))
	tr = l.run("s8", report.Input{Message: "嗯，这样那样弄一下"})
	check(tr, "process_input", "classify_intent", "retrieve", "generate", "save_session", "validate", "finalize")

	// 7: reset clears the design and keeps the thread, its name and title.
	if code, b := l.Do(keyA, "PATCH", "/threads/s1", map[string]any{"metadata": map[string]any{"title": "销售报表设计"}}); code != 200 {
		t.Fatalf("naming the thread: %d %s", code, b)
	}
	tr = l.run("s1", report.Input{Message: "重置"})
	check(tr, "process_input", "classify_intent", "handle_reset", "finalize")
	if st := tr.state; st.JRXML != "" || st.Final != "" || st.Title != "帮我生成一个销售报表" || len(st.History) != 2 {
		t.Errorf("after reset: title %q, %d messages, template %d bytes", st.Title, len(st.History), len(st.JRXML))
	}
	if code, b := l.Do(keyA, "GET", "/threads/s1", nil); code != 200 || !strings.Contains(string(b), `"thread_id":"s1"`) || !strings.Contains(string(b), `"title":"销售报表设计"`) {
		t.Errorf("thread after reset: %d %s", code, b)
	}
	if model.Pending() != 0 {
		t.Errorf("%d scripted answers unused", model.Pending())
	}

	// The versions: listed, each downloadable; another key sees none.
	code, b := l.Do(keyA, "GET", "/api/v1/report/threads/s1/versions", nil)
	var vs struct{ Versions []report.Version }
	if err := json.Unmarshal(b, &vs); code != 200 || err != nil || len(vs.Versions) != 4 || vs.Versions[2].Intent != report.IntentUndo {
		t.Fatalf("versions: %d %s", code, b)
	}
	if code, b := l.Do(keyA, "GET", "/api/v1/report/threads/s1/versions/2.jrxml", nil); code != 200 || string(b) != biggerTitle {
		t.Errorf("version 2: %d %.80q", code, b)
	}
	if code, b := l.Do(keyA, "GET", "/api/v1/report/threads/s1/versions/1.png", nil); code != 200 || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("version 1 as PNG: %d", code)
	}
	if code, b := l.Do(keyA, "GET", "/api/v1/report/threads/s1/versions/3.pdf", nil); code != 200 || !bytes.HasPrefix(b, []byte("%PDF")) {
		t.Errorf("version 3 as PDF: %d", code)
	}
	for _, p := range []string{"/versions/9.jrxml", "/versions/x.pdf", "/versions/1.doc", "/current.jrxml"} {
		if code, b := l.Do(keyA, "GET", "/api/v1/report/threads/s1"+p, nil); code != 404 || !strings.Contains(string(b), `"error"`) {
			t.Errorf("%s: %d %s", p, code, b)
		}
	}
	if code, _ := l.Do(keyB, "GET", "/api/v1/report/threads/s1/versions", nil); code != 404 {
		t.Errorf("another key's versions: %d", code)
	}
}

// TestCorrection: a model that fixes the template on its second try
// passes validation; the fix goes to the error knowledge base.
func TestCorrection(t *testing.T) {
	model := llmtest.New(t,
		xmlReply(badJRXML),
		llmtest.Text("The detail band uses $F{amount_total}, which is not declared; use $F{amount}."),
		xmlReply(worseJRXML),
		llmtest.Text("Two fields are not declared."),
		xmlReply(goodJRXML),
	)
	l := serve(t, model, filepath.Join(t.TempDir(), "loom.db"), report.ServerOptions{})
	tr := l.run("c1", report.Input{Message: "generate a sales report"})
	want := path("process_input", "classify_intent", "retrieve", "generate", "save_session",
		"validate", "explain_error", "correct_jrxml", "validate", "explain_error", "correct_jrxml", "validate", "finalize")
	if tr.String() != want {
		t.Errorf("path\n got %s\nwant %s", tr, want)
	}
	st := tr.state
	if st.Final != goodJRXML || st.Turn.Status != "pass" || st.Turn.Corrections != 2 || st.PendingFailure != nil {
		t.Errorf("status %q corrections %d", st.Turn.Status, st.Turn.Corrections)
	}
	reqs := model.Requests()
	if !strings.Contains(allText(reqs[1]), "amount_total") || !strings.Contains(allText(reqs[2]), "use $F{amount}") {
		t.Errorf("the correction does not see the problem and its explanation:\n%s", allText(reqs[2]))
	}
}

// TestCorrectionGivesUp: a model that returns the template unchanged
// spends two retries a correction, so the loop ends after three; the
// failure context goes into the next turn's request.
func TestCorrectionGivesUp(t *testing.T) {
	model := llmtest.New(t, xmlReply(badJRXML))
	for range 3 {
		model.Add(llmtest.Text("A field is not declared."), xmlReply(badJRXML))
	}
	l := serve(t, model, filepath.Join(t.TempDir(), "loom.db"), report.ServerOptions{})
	tr := l.run("c2", report.Input{Message: "generate a sales report"})
	want := path("process_input", "classify_intent", "retrieve", "generate", "save_session",
		"validate", "explain_error", "correct_jrxml", "validate", "explain_error", "correct_jrxml", "validate", "explain_error", "correct_jrxml", "finalize")
	if tr.String() != want {
		t.Errorf("path\n got %s\nwant %s", tr, want)
	}
	st := tr.state
	// Two unchanged corrections spent 4 of the 5 retries; the third
	// could not be paid, and the run took the budget's exit.
	if st.Turn.Corrections != 3 || st.PendingFailure == nil || st.PendingFailure.Retry != 4 || !strings.Contains(st.PendingFailure.Error, "amount_total") || st.Final != "" {
		t.Fatalf("corrections %d pending %+v", st.Turn.Corrections, st.PendingFailure)
	}
	if !strings.Contains(st.Turn.Reply, "3 corrections") {
		t.Errorf("reply %q", st.Turn.Reply)
	}

	model.Add(xmlReply(goodJRXML))
	tr = l.run("c2", report.Input{Message: "use the amount field"})
	next := model.Requests()[len(model.Requests())-1]
	if sys := system(next); !strings.Contains(sys, "pending_failure_context") || !strings.Contains(sys, "$F{amount_total} is not a declared field") {
		t.Errorf("the next turn's request lacks the failure context:\n%s", sys)
	}
	if tr.state.PendingFailure != nil || tr.state.Final != goodJRXML {
		t.Errorf("after the next turn: pending %+v", tr.state.PendingFailure)
	}
}

// TestUndoAcrossVersionsAndRestart: three versions, a restart, then undo
// twice goes back to the first; a third undo has nothing left.
func TestUndoAcrossVersionsAndRestart(t *testing.T) {
	db := filepath.Join(t.TempDir(), "loom.db")
	third := strings.Replace(biggerTitle, "销售报表", "月度销售报表", 1)
	model := llmtest.New(t, xmlReply(goodJRXML), xmlReply(biggerTitle), xmlReply(third))
	l := serve(t, model, db, report.ServerOptions{})
	l.run("u1", report.Input{Message: "帮我生成一个销售报表"})
	l.run("u1", report.Input{Message: "把标题字体改大"})
	if st := l.run("u1", report.Input{Message: "把标题改成月度销售报表"}).state; st.JRXML != third || st.Revision != 3 {
		t.Fatalf("third version: revision %d", st.Revision)
	}
	l.Stop()

	l = serve(t, nil, db, report.ServerOptions{}) // no model: undo needs none
	if st := l.run("u1", report.Input{Message: "撤销"}).state; st.JRXML != biggerTitle || st.Revision != 2 {
		t.Errorf("first undo: revision %d", st.Revision)
	}
	if st := l.run("u1", report.Input{Message: "undo"}).state; st.JRXML != goodJRXML || st.Revision != 1 {
		t.Errorf("second undo: revision %d", st.Revision)
	}
	st := l.run("u1", report.Input{Message: "撤销"}).state
	if st.JRXML != goodJRXML || st.Turn.Reply != "没有可撤销的修改。" || st.Version != 5 {
		t.Errorf("third undo: version %d, reply %q; want version 5 kept and only the reply that nothing is left", st.Version, st.Turn.Reply)
	}
	code, b := l.Do(keyA, "GET", "/api/v1/report/threads/u1/versions/5.jrxml", nil)
	if code != 200 || string(b) != goodJRXML {
		t.Errorf("version 5 (the second undo): %d", code)
	}
	if code, _ := l.Do(keyA, "GET", "/api/v1/report/threads/u1/versions/6.jrxml", nil); code != 404 {
		t.Errorf("version 6: %d, want 404: an undo with nothing to undo records no version", code)
	}
}

// TestWithoutModel: an uploaded template becomes the design with no
// model, previews and exports; a description, a change and a question
// say which variables to set.
func TestWithoutModel(t *testing.T) {
	l := serve(t, nil, filepath.Join(t.TempDir(), "loom.db"), report.ServerOptions{})
	id := l.uploadID("n1", "sales.jrxml", []byte(goodJRXML))
	tr := l.run("n1", report.Input{Upload: id})
	if want := path("process_input", "classify_intent", "retrieve", "generate", "save_session", "validate", "finalize"); tr.String() != want {
		t.Errorf("path %s", tr)
	}
	if st := tr.state; st.Final != goodJRXML || st.Version != 1 || st.Source == nil || st.Source.Kind != report.KindJRXML {
		t.Errorf("from the template: version %d source %+v", st.Version, st.Source)
	}
	for _, msg := range []string{"把标题字体改大", "JasperReports 里 $F 和 $P 有什么区别？"} {
		st := l.run("n1", report.Input{Message: msg}).state
		for _, want := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "LOOM_MODEL"} {
			if !st.Turn.NeedsModel || !strings.Contains(st.Turn.Reply, want) {
				t.Errorf("%q: reply %q lacks %s", msg, st.Turn.Reply, want)
			}
		}
		if st.JRXML != goodJRXML {
			t.Errorf("%q changed the template", msg)
		}
	}
	st := l.run("n2", report.Input{Message: "generate a sales report"}).state
	if !strings.Contains(st.Turn.Reply, "LOOM_MODEL") || st.JRXML != "" {
		t.Errorf("a description without a model: %q", st.Turn.Reply)
	}
	// A template that does not pass is kept as a version with its
	// problems; correcting it needs a model.
	bad := l.uploadID("n4", "bad.jrxml", []byte(badJRXML))
	tr = l.run("n4", report.Input{Upload: bad})
	if want := path("process_input", "classify_intent", "retrieve", "generate", "save_session", "validate", "explain_error", "correct_jrxml", "finalize"); tr.String() != want {
		t.Errorf("path %s", tr)
	}
	if st := tr.state; st.Version != 1 || st.Turn.Status != "fail" || st.PendingFailure == nil || !strings.Contains(st.Turn.Reply, "OPENAI_API_KEY") || !strings.Contains(st.Turn.Reply, "$F{amount_total} is not a declared field") {
		t.Errorf("a bad template without a model: version %d status %q reply %q", st.Version, st.Turn.Status, st.Turn.Reply)
	}
	// An upload of another thread, or none, is not found.
	if st := l.run("n3", report.Input{Upload: id}).state; !strings.Contains(st.Turn.Reply, "cannot find upload "+id) || st.JRXML != "" || st.Version != 0 {
		t.Errorf("another thread's upload: %q", st.Turn.Reply)
	}
	if code, b := l.Do(keyA, "GET", "/api/v1/report/threads/n1/current.jrxml", nil); code != 200 || string(b) != goodJRXML {
		t.Errorf("current.jrxml: %d", code)
	}
}

// TestBadUploads: a file over the limit and one that is neither a form
// nor a template get 4xx JSON errors, and nothing is stored.
func TestBadUploads(t *testing.T) {
	db := filepath.Join(t.TempDir(), "loom.db")
	l := serve(t, nil, db, report.ServerOptions{})
	big := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0}, 20<<20)...)
	for _, c := range []struct {
		name string
		data []byte
		want int
	}{
		{"big.png", big, 413},
		{"form.png", []byte("this is text, not a picture"), 415},
		{"report.jrxml", []byte("<html><body>not a template</body></html>"), 415},
		{"empty.xlsx", []byte{}, 415},
	} {
		code, b := l.upload("b1", c.name, c.data)
		var e struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal(b, &e); code != c.want || err != nil || e.Error.Message == "" {
			t.Errorf("%s: %d %s", c.name, code, b)
		}
	}
	// Each key has its own thread ids: key B's upload to "b2" goes to a
	// thread b2 of its own, which key A's b2 does not see.
	id := l.uploadID("b2", "sales.jrxml", []byte(goodJRXML))
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	fw, _ := mw.CreateFormFile("file", "other.jrxml")
	fw.Write([]byte(goodJRXML))
	mw.Close()
	code, b := l.Send(keyB, "POST", "/api/v1/report/threads/b2/uploads", mw.FormDataContentType(), &form)
	var up struct {
		ID     string
		Thread string `json:"thread_id"`
	}
	if err := json.Unmarshal(b, &up); code != 201 || err != nil || up.Thread != "b2" || up.ID == id {
		t.Errorf("key B's upload to its b2: %d %s", code, b)
	}
	if st := l.run("b2", report.Input{Upload: up.ID}).state; !strings.Contains(st.Turn.Reply, "cannot find upload "+up.ID) || st.JRXML != "" {
		t.Errorf("key A's b2 used key B's upload: %q", st.Turn.Reply)
	}
	// A JSON body is not an upload.
	if code, b := l.Do(keyA, "POST", "/api/v1/report/threads/b1/uploads", map[string]string{"file": "x"}); code != 415 {
		t.Errorf("JSON upload: %d %s", code, b)
	}
	l.Stop()
	sdb, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	var n int
	if err := sdb.QueryRow(`SELECT count(*) FROM report_uploads WHERE thread LIKE '%/b1'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d uploads stored (%v)", n, err)
	}
	if err := sdb.QueryRow(`SELECT count(*) FROM report_uploads`).Scan(&n); err != nil || n != 2 {
		t.Errorf("%d uploads in all, want the two good ones (%v)", n, err)
	}
}

// TestGenerateContinued: a generation cut at the model's length limit is
// continued, and the pieces make the template.
func TestGenerateContinued(t *testing.T) {
	cut := strings.Index(goodJRXML, "<detail>")
	model := llmtest.New(t,
		llmtest.Reply{Content: "```xml\n" + goodJRXML[:cut], FinishReason: "length"},
		llmtest.Text(goodJRXML[cut:]+"```"),
	)
	l := serve(t, model, filepath.Join(t.TempDir(), "loom.db"), report.ServerOptions{})
	st := l.run("g1", report.Input{Message: "generate a sales report"}).state
	if st.Final != goodJRXML {
		t.Errorf("the continued template:\n%s", st.JRXML)
	}
	reqs := model.Requests()
	if len(reqs) != 2 || !reqs[1].Stream() || !strings.Contains(allText(reqs[1]), "cut off at the length limit") || !strings.Contains(allText(reqs[1]), "<title>") {
		t.Errorf("%d requests; the second should continue the first:\n%s", len(reqs), allText(reqs[len(reqs)-1]))
	}
}

// TestChatCompletions: the agent answers through /v1/chat/completions,
// and the model decides what the local engine is not sure of.
func TestChatCompletions(t *testing.T) {
	model := llmtest.New(t, llmtest.Text(`<DECISION>{"intent": "initial_generation"}</DECISION>`), xmlReply(goodJRXML))
	l := serve(t, model, filepath.Join(t.TempDir(), "loom.db"), report.ServerOptions{})
	code, b := l.Do(keyA, "POST", "/v1/chat/completions", map[string]any{
		"model": "report", "thread_id": "chat-1",
		"messages": []map[string]string{{"role": "user", "content": "I'd like something listing customers with their amounts"}},
	})
	if code != 200 || !strings.Contains(string(b), "Version 1 passes validation") || !strings.Contains(string(b), "/api/v1/report/threads/chat-1/preview.png") {
		t.Fatalf("chat: %d %s", code, b)
	}
	if st := l.state("chat-1"); st.Turn.By != "model" || st.Final != goodJRXML {
		t.Errorf("intent by %q", st.Turn.By)
	}
}
