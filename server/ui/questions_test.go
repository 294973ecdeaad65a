package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/server"
)

// roomsState is the state of an agent whose fan-out asks to book each
// room at once, as a ReAct agent asks for each write call of a turn.
type roomsState struct {
	Title    string   `json:"title,omitempty"`
	Verdicts []string `json:"verdicts,omitempty"`
}

// roomsAgent asks "Book A1?" and "Book B2?" at once, one question per
// fan-out branch, and records each answer.
func roomsAgent() server.Agent {
	type confirm struct {
		Accept bool   `json:"accept"`
		Note   string `json:"note,omitempty"`
	}
	g := graph.New[roomsState]("rooms").
		Node("book", graph.Map(func(roomsState) []string { return []string{"A1", "B2"} },
			func(ctx context.Context, room string) (string, error) {
				v, err := graph.Ask[confirm](ctx, map[string]string{"summary": "Book " + room + "?"})
				return fmt.Sprintf("%s:%v", room, v.Accept), err
			},
			func(s roomsState, rs []string) (roomsState, error) { s.Verdicts = rs; return s, nil })).
		Edge(graph.Start, "book").Edge("book", graph.End)
	return server.Agent{
		Name:        "rooms",
		Description: "asks to book two rooms at once",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}}}`),
		Build:       server.Compile(g),
	}
}

// TestBrowserSeveralQuestions: a run that stops with two questions shows
// them one at a time, the first first; accepting it (answered by its id)
// shows the second, and rejecting that ends the run with each answer in
// its own branch. No answer is refused for naming no question.
func TestBrowserSeveralQuestions(t *testing.T) {
	needChromium(t)
	base := serveAgents(t, t.TempDir(), nil, roomsAgent())
	b := openBrowser(t, screenshotDir(t))
	b.do("open the page", chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/"),
		chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)))
	b.pickAgent("rooms")
	b.send("rooms")
	const pending = `.card.confirm[data-state="pending"]`
	b.do("wait for the first question", chromedp.WaitVisible(chromedp.CSS(pending)),
		chromedp.WaitReady(chromedp.CSS(`body[data-run="waiting"]`)),
		chromedp.WaitEnabled(chromedp.CSS(pending+` button.accept`)))
	shown := func() []string {
		return eval[[]string](b, `[...document.querySelectorAll('.card.confirm[data-state="pending"] .question')].map(q => q.textContent)`)
	}
	if got := shown(); !slices.Equal(got, []string{"Book A1?"}) {
		t.Fatalf("pending cards ask %q, want the first question alone", got)
	}
	b.do("accept the first", chromedp.Click(chromedp.CSS(pending+` button.accept`)))
	b.poll("the second question", `[...document.querySelectorAll('.card.confirm[data-state="pending"] .question')].some(q => q.textContent === 'Book B2?')`)
	b.do("wait until it can be answered", chromedp.WaitEnabled(chromedp.CSS(pending+` button.reject`)))
	if got := shown(); !slices.Equal(got, []string{"Book B2?"}) {
		t.Fatalf("after the first answer pending cards ask %q, want the second alone", got)
	}
	b.do("reject the second", chromedp.Click(chromedp.CSS(pending+` button.reject`)),
		chromedp.WaitReady(chromedp.CSS(`body[data-run="done"]`)))
	tid := eval[string](b, `document.body.dataset.thread`)
	var st struct {
		Values roomsState `json:"values"`
	}
	getJSON(t, base+"/threads/"+tid+"/state", &st)
	if !slices.Equal(st.Values.Verdicts, []string{"A1:true", "B2:false"}) {
		t.Errorf("verdicts %q, want A1 accepted and B2 rejected", st.Values.Verdicts)
	}
	if n := eval[int](b, `document.querySelectorAll('.card.confirm[data-state="accepted"], .card.confirm[data-state="rejected"]').length`); n != 2 {
		t.Errorf("%d answered cards, want 2", n)
	}
	if errs := b.text(`#timeline`); strings.Contains(errs, "answer them by id") {
		t.Errorf("the page was refused for answering without an id: %q", errs)
	}
	b.checkConsole()
}
