package ui_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// A reply typed while a card waits is read as the chat API reads it (the
// consent reader): in a Chinese browser, "可以吗？" to the demo's approval
// card answers nothing, so the card stays and asks again and no run
// starts; "好的" approves the checklist (it does not start a checklist
// called 好的), and the card says how the reply was read. On the tools
// agent, "取消，周三不行" is a no with its reason as the note.
func TestBrowserTypedAnswer(t *testing.T) {
	needChromium(t)
	base := startServer(t, nil)
	b := openBrowser(t, screenshotDir(t))
	b.do("open the page", browserLanguage("zh-CN,zh"), chromedp.EmulateViewport(1400, 900), chromedp.Navigate(base+"/"),
		chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)))
	b.pickAgent("demo")
	b.send("launch")
	const pending = `.card.confirm[data-state="pending"]`
	b.do("wait for the approval card", chromedp.WaitVisible(chromedp.CSS(pending)),
		chromedp.WaitReady(chromedp.CSS(`body[data-run="waiting"]`)),
		chromedp.WaitEnabled(chromedp.CSS(`#send`)))
	tid := eval[string](b, `document.body.dataset.thread`)
	runs := func() int { return eval[int](b, `document.querySelectorAll('#timeline .run').length`) }
	before := runs()

	// A question back is no answer: asked again, nothing runs.
	b.send("可以吗？")
	b.do("wait for the card to ask again", chromedp.WaitReady(chromedp.CSS(pending+`[data-asked="1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline li.note.again`)),
		chromedp.WaitEnabled(chromedp.CSS(`#send`)))
	if got := b.text(`#timeline li.note.again`); !strings.Contains(got, "可以吗？") || !strings.Contains(got, "再回答一次") {
		t.Errorf("the card asks again with %q", got)
	}
	if n := runs(); n != before {
		t.Errorf("an unclear reply added %d runs to the timeline, want none", n-before)
	}
	var st threadState
	getJSON(t, base+"/threads/"+tid+"/state", &st)
	if st.Values.Title != "launch" || st.Values.Approved || len(st.Next) != 1 || st.Next[0] != "confirm" {
		t.Errorf("after an unclear reply the thread is %+v, next %q; want launch, still waiting on confirm", st.Values, st.Next)
	}
	b.shot("answer-1-again.png")

	// 好的 approves.
	b.send("好的")
	b.do("wait for the approval", chromedp.WaitReady(chromedp.CSS(`.card.confirm[data-state="accepted"][data-via="chat"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.run[data-status="done"] .card.result`)),
		chromedp.WaitReady(chromedp.CSS(`body[data-run="done"]`)))
	if got := b.text(`.card.confirm[data-state="accepted"] .card-answer`); got != "已同意" {
		t.Errorf("the answered card says %q, want 已同意", got)
	}
	if got := b.text(`.card.confirm[data-state="accepted"] .card-said`); !strings.Contains(got, "好的") || !strings.Contains(got, "同意") {
		t.Errorf("the card says the reply was read as %q", got)
	}
	if n := eval[int](b, `document.querySelectorAll('.chip[data-state="waiting"]').length`); n != 0 {
		t.Errorf("%d steps still shown waiting after the answer", n)
	}
	getJSON(t, base+"/threads/"+tid+"/state", &st)
	if !st.Values.Approved || st.Values.Title != "launch" || len(st.Next) != 0 {
		t.Errorf("after 好的 the thread is %+v, next %q; want checklist launch approved, nothing next", st.Values, st.Next)
	}
	if got := b.text(`.run[data-status="done"] .card.result .bool`); got != "是" {
		t.Errorf("the result card shows approved %q, want 是", got)
	}
	b.shot("answer-2-yes.png")

	// A no with a reason, on another agent.
	b.pickAgent("tools")
	b.send("the weather")
	b.do("wait for the tools agent's question", chromedp.WaitVisible(chromedp.CSS(pending)),
		chromedp.WaitEnabled(chromedp.CSS(`#send`)))
	tid = eval[string](b, `document.body.dataset.thread`)
	b.send("取消，周三不行")
	b.do("wait for the refusal", chromedp.WaitReady(chromedp.CSS(`.card.confirm[data-state="rejected"][data-via="chat"]`)),
		chromedp.WaitReady(chromedp.CSS(`body[data-run="done"]`)))
	if got := b.text(`.card.confirm[data-state="rejected"] .card-answer`); got != "已拒绝 — 周三不行" {
		t.Errorf("the refused card says %q, want the no and its reason", got)
	}
	var ts struct {
		Values toolState `json:"values"`
	}
	getJSON(t, base+"/threads/"+tid+"/state", &ts)
	if ts.Values.Sent || ts.Values.Note != "周三不行" || ts.Values.Question != "the weather" {
		t.Errorf("after the typed no the tools agent's state is %+v", ts.Values)
	}
	b.shot("answer-3-no.png")
	b.checkConsole()
}
