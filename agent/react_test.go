package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/llm/llmtest"
	"github.com/loomkit/loom/llm/openai"
	"github.com/loomkit/loom/tool"
)

type cityArgs struct {
	City string `json:"city"`
}

type bookArgs struct {
	Room string `json:"room"`
	Day  int    `json:"day"`
}

// fixture is a ReAct agent over a fake OpenAI-compatible endpoint, with a
// read tool (weather) and a write tool (book) that counts its real runs.
type fixture struct {
	srv    *llmtest.Server
	graph  *graph.Compiled[agent.State]
	booked atomic.Int32
}

func newFixture(t *testing.T, native bool, budget int, replies ...llmtest.Reply) *fixture {
	t.Helper()
	f := &fixture{srv: llmtest.New(t, replies...)}
	model, err := openai.New(openai.Config{BaseURL: f.srv.BaseURL(), APIKey: "test", Model: "fake", MaxRetries: 0})
	if err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry()
	err = reg.Register("", "",
		tool.New("weather", "Weather in a city", tool.Read, func(_ context.Context, a cityArgs) (string, error) {
			return "sunny in " + a.City, nil
		}),
		tool.New("book", "Book a room for a day", tool.Write, func(_ context.Context, a bookArgs) (string, error) {
			f.booked.Add(1)
			return fmt.Sprintf("booked %s on day %d", a.Room, a.Day), nil
		}, tool.WithSummary(func(_ context.Context, a bookArgs) string { return fmt.Sprintf("book %s on day %d", a.Room, a.Day) })),
	)
	if err != nil {
		t.Fatal(err)
	}
	g := agent.New(agent.Config{Model: model, Tools: reg, System: "You help.", Budget: budget, NativeTools: native})
	f.graph, err = g.Compile(graph.WithSaver(checkpoint.NewMemory()))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func decide(s string) llmtest.Reply { return llmtest.Text("<DECISION>" + s + "</DECISION>") }

// checkPairing asserts what the OpenAI API demands of every request the
// model got: each assistant tool call is answered by a tool message.
func (f *fixture) checkPairing(t *testing.T) {
	t.Helper()
	for i, req := range f.srv.Requests() {
		open := map[string]bool{}
		for _, m := range req.Messages() {
			for _, c := range m.ToolCalls {
				open[c.ID] = true
			}
			if m.Role == llm.RoleTool {
				if !open[m.ToolCallID] {
					t.Errorf("request %d: tool result %s answers no call", i, m.ToolCallID)
				}
				delete(open, m.ToolCallID)
			}
		}
		if len(open) > 0 {
			t.Errorf("request %d: tool calls %v have no result", i, open)
		}
	}
}

func lastUser(req llmtest.Request) string {
	msgs := req.Messages()
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser || msgs[i].Role == llm.RoleTool {
			return msgs[i].Content
		}
	}
	return ""
}

func TestReadToolThenAnswer(t *testing.T) {
	f := newFixture(t, false, 0,
		decide(`{"thought":"need weather","action":"call_tool","tool":"weather","args":{"city":"Oslo"}}`),
		decide(`{"action":"finish","answer":"It is sunny in Oslo."}`))
	ctx := context.Background()
	res, err := f.graph.Invoke(ctx, "t", agent.Say("Weather in Oslo?"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != graph.StatusDone || res.State.Answer != "It is sunny in Oslo." {
		t.Fatalf("result %+v", res)
	}
	reqs := f.srv.Requests()
	if len(reqs) != 2 || lastUser(reqs[1]) != "sunny in Oslo" {
		t.Fatalf("%d requests; second ends with %q, want the tool result", len(reqs), lastUser(reqs[len(reqs)-1]))
	}
	f.checkPairing(t)
}

func TestMalformedAnswersAreFedBack(t *testing.T) {
	f := newFixture(t, false, 0,
		llmtest.Text("I think the weather is nice."),
		decide(`{"action":"fly"}`),
		decide(`{"action":"call_tool"`),
		decide(`{"action":"finish","answer":"done"}`))
	res, err := f.graph.Invoke(context.Background(), "t", agent.Say("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if res.State.Answer != "done" {
		t.Fatalf("state %+v", res.State)
	}
	reqs := f.srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	if fb := lastUser(reqs[2]); !strings.Contains(fb, "action") || !strings.Contains(fb, "call_tool, finish") {
		t.Errorf("feedback for a bad enum = %q, want it to name the field and the choices", fb)
	}
}

// drawnExit returns the budget exit the graph draws from node from, and
// its budget's bound.
func drawnExit(t *testing.T, c *graph.Compiled[agent.State], budget, from string) (string, int) {
	t.Helper()
	for _, e := range c.Spec().Edges {
		if e.Exit && e.Budget == budget && e.From == from {
			return e.To, e.Max
		}
	}
	t.Fatalf("no exit of budget %s drawn from %s:\n%s", budget, from, c.Mermaid())
	return "", 0
}

// TestFourMalformedAnswersTakeTheDrawnExit: three malformed answers are
// fed back; the fourth spends the corrections budget, and the run goes
// where the drawing says: to the pause, which summarises and asks.
func TestFourMalformedAnswersTakeTheDrawnExit(t *testing.T) {
	f := newFixture(t, false, 0,
		llmtest.Text("one"), llmtest.Text("two"), llmtest.Text("three"), llmtest.Text("four"),
		llmtest.Text("The model could not answer in the agreed form."))
	exit, max := drawnExit(t, f.graph, agent.Corrections, agent.Think)
	if exit != agent.Pause || max != 3 {
		t.Fatalf("drawn: corrections exit %s after %d, want pause after 3", exit, max)
	}
	ctx := context.Background()
	res, err := f.graph.Invoke(ctx, "t", agent.Say("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != graph.StatusInterrupted || res.Interrupt.Node != exit || res.State.Rounds != 4 {
		t.Fatalf("want a question at %s after 4 rounds, got %s at %+v after %d", exit, res.Status, res.Interrupt, res.State.Rounds)
	}
	if reqs := f.srv.Requests(); len(reqs) != 5 || !strings.Contains(lastUser(reqs[4]), "step budget") {
		t.Errorf("%d requests, want four answers and the summary", len(reqs))
	}
	// Stopping there ends the turn with the summary; nothing counts the
	// corrections in the state.
	res, err = f.graph.Resume(ctx, "t", agent.PauseAnswer{Continue: false})
	if err != nil || res.Status != graph.StatusDone || res.State.Answer != "The model could not answer in the agreed form." {
		t.Fatalf("after stop: %+v, %v", res, err)
	}
}

// TestGiveUpAnswersAtTheExit: with GiveUp set, the pause the corrections
// budget leads to ends the turn with GiveUp's answer, given every
// rejected answer.
func TestGiveUpAnswersAtTheExit(t *testing.T) {
	srv := llmtest.New(t, llmtest.Text("one"), llmtest.Text("two"), llmtest.Text("three"), llmtest.Text("four"))
	model, err := openai.New(openai.Config{BaseURL: srv.BaseURL(), APIKey: "test", Model: "fake", MaxRetries: 0})
	if err != nil {
		t.Fatal(err)
	}
	var got *agent.MalformedError
	g := agent.New(agent.Config{Model: model, System: "You help.", GiveUp: func(_ context.Context, _ *agent.State, err *agent.MalformedError) string {
		got = err
		return "Sorry, no usable answer."
	}})
	c := must(g.Compile(graph.WithSaver(checkpoint.NewMemory())))(t)
	res, err := c.Invoke(context.Background(), "t", agent.Say("hi"))
	if err != nil || res.Status != graph.StatusDone || res.State.Answer != "Sorry, no usable answer." {
		t.Fatalf("%+v, %v", res, err)
	}
	if got == nil || strings.Join(got.Answers, ",") != "one,two,three,four" || got.Err == nil {
		t.Fatalf("GiveUp got %+v, want all four answers and the last problem", got)
	}
	for _, a := range got.Answers { // the message carries them too, for whoever reads only the text
		if !strings.Contains(got.Error(), fmt.Sprintf("%q", a)) {
			t.Errorf("error %q does not quote answer %q", got, a)
		}
	}
	if n := len(srv.Requests()); n != 4 {
		t.Errorf("%d model requests, want 4 (no summary)", n)
	}
}

func must[T any](v T, err error) func(testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func TestWriteToolWaitsForConfirmation(t *testing.T) {
	call := decide(`{"action":"call_tool","tool":"book","args":{"room":"A1","day":3}}`)
	f := newFixture(t, false, 0,
		call, decide(`{"action":"finish","answer":"Booked."}`),
		call, decide(`{"action":"finish","answer":"Not booked."}`))
	ctx := context.Background()

	res, err := f.graph.Invoke(ctx, "t", agent.Say("Book A1 on day 3"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != graph.StatusInterrupted || !strings.Contains(string(res.Interrupt.Payload), `"summary":"book A1 on day 3"`) {
		t.Fatalf("want a confirm card, got %+v", res)
	}
	if f.booked.Load() != 0 {
		t.Fatal("the write tool ran before confirmation")
	}
	res, err = f.graph.Resume(ctx, "t", tool.ConfirmAnswer{Accept: true})
	if err != nil || res.State.Answer != "Booked." || f.booked.Load() != 1 {
		t.Fatalf("after accept: %+v, %v; booked %d", res, err, f.booked.Load())
	}

	// Rejected: the tool does not run and the model is told.
	res, err = f.graph.Invoke(ctx, "t", agent.Say("Book it again"))
	if err != nil || res.Status != graph.StatusInterrupted {
		t.Fatalf("second booking: %+v, %v", res, err)
	}
	res, err = f.graph.Resume(ctx, "t", tool.ConfirmAnswer{Accept: false, Note: "too late"})
	if err != nil || res.State.Answer != "Not booked." || f.booked.Load() != 1 {
		t.Fatalf("after reject: %+v, %v; booked %d", res, err, f.booked.Load())
	}
	reqs := f.srv.Requests()
	if told := lastUser(reqs[len(reqs)-1]); !strings.Contains(told, "rejected") || !strings.Contains(told, "too late") {
		t.Errorf("the model was told %q, want the rejection and its reason", told)
	}
	// The second turn saw the first one.
	if msgs := reqs[2].Messages(); !strings.Contains(fmt.Sprint(msgs), "Book A1 on day 3") {
		t.Error("the second turn lost the earlier context")
	}
	f.checkPairing(t)
}

func TestBudgetPausesAndContinues(t *testing.T) {
	f := newFixture(t, false, 0)
	var decisions atomic.Int32
	f.srv.Handle(func(req llmtest.Request) llmtest.Reply {
		if strings.Contains(lastUser(req), "step budget") {
			return llmtest.Text("Checked the weather 30 times; nothing left but to answer.")
		}
		if decisions.Add(1) == 31 {
			return decide(`{"action":"finish","answer":"Sunny."}`)
		}
		return decide(`{"action":"call_tool","tool":"weather","args":{"city":"Rome"}}`)
	})
	if exit, max := drawnExit(t, f.graph, agent.Rounds, agent.Act); exit != agent.Pause || max != 30 {
		t.Fatalf("drawn: rounds exit %s after %d, want pause after 30", exit, max)
	}
	ctx := context.Background()
	res, err := f.graph.Invoke(ctx, "t", agent.Say("Keep checking the weather"))
	if err != nil {
		t.Fatal(err)
	}
	var pause agent.PauseRequest
	if res.Status != graph.StatusInterrupted || res.Interrupt.Node != agent.Pause || res.State.Rounds != 30 {
		t.Fatalf("want a pause after 30 rounds, got %s after %d", res.Status, res.State.Rounds)
	}
	if err := json.Unmarshal(res.Interrupt.Payload, &pause); err != nil || !strings.HasPrefix(pause.Summary, "Checked the weather") {
		t.Fatalf("pause payload %s (%v)", res.Interrupt.Payload, err)
	}
	res, err = f.graph.Resume(ctx, "t", agent.PauseAnswer{Continue: true})
	if err != nil || res.State.Answer != "Sunny." || res.State.Rounds != 31 {
		t.Fatalf("after continue: %+v, %v", res, err)
	}
	reqs := f.srv.Requests()
	if got := fmt.Sprint(reqs[len(reqs)-1].Messages()); !strings.Contains(got, "Progress so far: Checked the weather") {
		t.Error("round 31 did not see the progress summary")
	}
	f.checkPairing(t)
}

func TestNativeToolCalls(t *testing.T) {
	f := newFixture(t, true, 0,
		llmtest.ToolCalls(llm.ToolCall{ID: "c1", Name: "weather", Arguments: `{"city":"Lima"}`},
			llm.ToolCall{ID: "c2", Name: "weather", Arguments: `{"town":"Lima"}`}),
		llmtest.Text("Sunny in Lima."))
	res, err := f.graph.Invoke(context.Background(), "t", agent.Say("Lima?"))
	if err != nil || res.State.Answer != "Sunny in Lima." {
		t.Fatalf("%+v, %v", res, err)
	}
	reqs := f.srv.Requests()
	msgs := reqs[1].Messages()
	bad := msgs[len(msgs)-1]
	if bad.ToolCallID != "c2" || !strings.Contains(bad.Content, "city") {
		t.Errorf("a bad call's result = %+v, want an error naming the missing field", bad)
	}
	if tools := fmt.Sprint(reqs[0].Body["tools"]); !strings.Contains(tools, "weather") || !strings.Contains(tools, "book") {
		t.Errorf("request tools = %s", tools)
	}
	f.checkPairing(t)
}

// TestWellFormedAnswerStartsCorrectionsAgain: three malformed answers, a
// tool call, three more and a finish: never four in a row, so no pause.
func TestWellFormedAnswerStartsCorrectionsAgain(t *testing.T) {
	bad := llmtest.Text("not a decision")
	f := newFixture(t, false, 0, bad, bad, bad,
		decide(`{"action":"call_tool","tool":"weather","args":{"city":"Oslo"}}`),
		bad, bad, bad, decide(`{"action":"finish","answer":"Sunny."}`))
	res, err := f.graph.Invoke(context.Background(), "t", agent.Say("Weather?"))
	if err != nil || res.Status != graph.StatusDone || res.State.Answer != "Sunny." || res.State.Rounds != 8 {
		t.Fatalf("%+v, %v", res, err)
	}
}
