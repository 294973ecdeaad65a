package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/checkpoint/sqlite"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/llm/llmtest"
	"github.com/loomkit/loom/llm/openai"
	"github.com/loomkit/loom/tool"
)

// office counts what the tools of a parallel-calls test did, across
// restarts of the agent: bookings by room, weather look-ups, and the
// step key each booking ran under.
type office struct {
	mu      sync.Mutex
	booked  map[string]int
	keys    map[string]string // room → graph.StepKey of its booking
	weather atomic.Int32
}

func (o *office) registry(t *testing.T) *tool.Registry {
	t.Helper()
	reg := tool.NewRegistry()
	err := reg.Register("", "",
		tool.New("weather", "Weather in a city", tool.Read, func(_ context.Context, a cityArgs) (string, error) {
			o.weather.Add(1)
			return "sunny in " + a.City, nil
		}),
		tool.New("book", "Book a room for a day", tool.Write, func(ctx context.Context, a bookArgs) (string, error) {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.booked[a.Room]++
			o.keys[a.Room] = graph.StepKey(ctx)
			return fmt.Sprintf("booked %s on day %d", a.Room, a.Day), nil
		}, tool.WithSummary(func(_ context.Context, a bookArgs) string { return fmt.Sprintf("book %s on day %d", a.Room, a.Day) })),
	)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func (o *office) bookings() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.booked)
}

// start builds the agent on the SQLite file at path, as a process that
// starts does; the saver closes with the test or with the returned stop.
func (o *office) start(t *testing.T, srv *llmtest.Server, path string) (*graph.Compiled[agent.State], checkpoint.Saver, func()) {
	t.Helper()
	model, err := openai.New(openai.Config{BaseURL: srv.BaseURL(), APIKey: "test", Model: "fake", MaxRetries: 0})
	if err != nil {
		t.Fatal(err)
	}
	saver, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() { once.Do(func() { saver.Close() }) }
	t.Cleanup(stop)
	g := agent.New(agent.Config{Model: model, Tools: o.registry(t), System: "You help.", NativeTools: true})
	c, err := g.Compile(graph.WithSaver(saver))
	if err != nil {
		t.Fatal(err)
	}
	return c, saver, stop
}

// questionsBySummary maps each pending confirm card's summary to its id.
func questionsBySummary(t *testing.T, pending []checkpoint.Interrupt) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, q := range pending {
		var req tool.ConfirmRequest
		if err := json.Unmarshal(q.Payload, &req); err != nil {
			t.Fatalf("question %s: payload %s is no confirm card: %v", q.ID, q.Payload, err)
		}
		if q.Node != agent.Act || q.Branch == "" {
			t.Errorf("question %s asked by %q branch %q, want a branch of %s", q.ID, q.Node, q.Branch, agent.Act)
		}
		out[req.Summary] = q.ID
	}
	return out
}

// toolResults returns the tool messages of a model request, in order.
func toolResults(req llmtest.Request) []llm.Message {
	var out []llm.Message
	for _, m := range req.Messages() {
		if m.Role == llm.RoleTool {
			out = append(out, m)
		}
	}
	return out
}

// TestParallelWriteCallsAskAtOnce: the model asks for three tool calls in
// one turn, two bookings (write) and a weather look-up (read). The read
// runs at once; the run stops with one question per booking. Answering
// one by id runs nothing and leaves the other pending; the agent is then
// started again on the same SQLite file, where only the other is pending
// and the answered one cannot be answered twice; once it is answered,
// both bookings run exactly once, under different step keys, and the
// model gets every result in the order of its calls. In a second turn one
// booking is refused: it does not run, the other does, and the model is
// told of the refusal and its reason.
func TestParallelWriteCallsAskAtOnce(t *testing.T) {
	ctx := context.Background()
	o := &office{booked: map[string]int{}, keys: map[string]string{}}
	srv := llmtest.New(t,
		llmtest.ToolCalls(
			llm.ToolCall{ID: "c1", Name: "book", Arguments: `{"room":"A1","day":1}`},
			llm.ToolCall{ID: "c2", Name: "weather", Arguments: `{"city":"Rome"}`},
			llm.ToolCall{ID: "c3", Name: "book", Arguments: `{"room":"B2","day":2}`}),
		llmtest.Text("Booked A1 and B2; sunny in Rome."),
		llmtest.ToolCalls(
			llm.ToolCall{ID: "d1", Name: "book", Arguments: `{"room":"C3","day":3}`},
			llm.ToolCall{ID: "d2", Name: "book", Arguments: `{"room":"D4","day":4}`},
			llm.ToolCall{ID: "d3", Name: "weather", Arguments: `{"city":"Oslo"}`}),
		llmtest.Text("Booked C3; D4 was refused."))
	path := filepath.Join(t.TempDir(), "threads.db")
	c, _, stop := o.start(t, srv, path)

	res, err := c.Invoke(ctx, "t", agent.Say("Book A1 for day 1 and B2 for day 2, and tell me the weather in Rome"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != graph.StatusInterrupted || len(res.Interrupts) != 2 {
		t.Fatalf("want the run to stop with 2 questions, got %s with %d: %+v", res.Status, len(res.Interrupts), res.Interrupts)
	}
	ids := questionsBySummary(t, res.Interrupts)
	idA, idB := ids["book A1 on day 1"], ids["book B2 on day 2"]
	if idA == "" || idB == "" || idA == idB {
		t.Fatalf("questions %v, want one per booking, each with its own id", ids)
	}
	if n := o.weather.Load(); n != 1 {
		t.Errorf("the read call ran %d times before the questions, want once", n)
	}
	if b := o.bookings(); len(b) != 0 {
		t.Fatalf("bookings %v ran before anyone answered", b)
	}

	// One answer, by id: nothing runs, the other question stays.
	res, err = c.Run(ctx, "t", graph.Input[agent.State]{Answers: map[string]any{idA: tool.ConfirmAnswer{Accept: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != graph.StatusInterrupted || len(res.Interrupts) > 1 || res.Interrupt == nil || res.Interrupt.ID != idB {
		t.Fatalf("after answering A1: %s, pending %+v; want only %s", res.Status, res.Interrupts, idB)
	}
	if b := o.bookings(); len(b) != 0 {
		t.Fatalf("bookings %v ran with a question still pending", b)
	}

	// A restart between the answers: the new agent finds the one
	// question left, and the answered one is gone.
	stop()
	c, saver, _ := o.start(t, srv, path)
	head, err := saver.Get(ctx, "t", "")
	if err != nil {
		t.Fatal(err)
	}
	if p := head.Pending(); len(p) != 1 || p[0].ID != idB {
		t.Fatalf("after the restart, pending %+v; want only %s", p, idB)
	}
	_, err = c.Run(ctx, "t", graph.Input[agent.State]{Answers: map[string]any{idA: tool.ConfirmAnswer{Accept: true}}})
	if !errors.Is(err, graph.ErrNoInterrupt) {
		t.Fatalf("answering A1 again: %v, want ErrNoInterrupt", err)
	}

	res, err = c.Run(ctx, "t", graph.Input[agent.State]{Answers: map[string]any{idB: tool.ConfirmAnswer{Accept: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != graph.StatusDone || res.State.Answer != "Booked A1 and B2; sunny in Rome." {
		t.Fatalf("after answering B2: %s, answer %q", res.Status, res.State.Answer)
	}
	if b := o.bookings(); b["A1"] != 1 || b["B2"] != 1 || len(b) != 2 {
		t.Errorf("bookings %v, want A1 and B2 once each", b)
	}
	if n := o.weather.Load(); n != 1 {
		t.Errorf("the read call ran %d times, want once", n)
	}
	if o.keys["A1"] == "" || o.keys["A1"] == o.keys["B2"] {
		t.Errorf("step keys %v: each booking needs its own", o.keys)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	got := toolResults(reqs[1])
	want := []string{"c1 booked A1 on day 1", "c2 sunny in Rome", "c3 booked B2 on day 2"}
	if s := resultLines(got); !slices.Equal(s, want) {
		t.Errorf("the model got results %q, want %q", s, want)
	}

	// Second turn: D4 refused, C3 accepted, in one answer by ids.
	res, err = c.Invoke(ctx, "t", agent.Say("Book C3 for day 3 and D4 for day 4; weather in Oslo?"))
	if err != nil || res.Status != graph.StatusInterrupted || len(res.Interrupts) != 2 {
		t.Fatalf("second turn: %+v, %v", res, err)
	}
	ids = questionsBySummary(t, res.Interrupts)
	idC, idD := ids["book C3 on day 3"], ids["book D4 on day 4"]
	res, err = c.Run(ctx, "t", graph.Input[agent.State]{Answers: map[string]any{
		idD: tool.ConfirmAnswer{Accept: false, Note: "D4 is being painted"},
		idC: tool.ConfirmAnswer{Accept: true},
	}})
	if err != nil || res.Status != graph.StatusDone || res.State.Answer != "Booked C3; D4 was refused." {
		t.Fatalf("after the answers: %+v, %v", res, err)
	}
	if b := o.bookings(); b["C3"] != 1 || b["D4"] != 0 || b["A1"] != 1 || b["B2"] != 1 {
		t.Errorf("bookings %v, want C3 once and D4 never", b)
	}
	reqs = srv.Requests()
	got = toolResults(reqs[len(reqs)-1])[3:] // after the first turn's
	if len(got) != 3 || got[0].ToolCallID != "d1" || got[1].ToolCallID != "d2" || got[2].ToolCallID != "d3" {
		t.Fatalf("the model got results %q, want d1, d2, d3", resultLines(got))
	}
	if !strings.Contains(got[0].Content, "booked C3") {
		t.Errorf("accepted C3: the model was told %q", got[0].Content)
	}
	if !strings.Contains(got[1].Content, "rejected") || !strings.Contains(got[1].Content, "D4 is being painted") {
		t.Errorf("refused D4: the model was told %q, want the refusal and its reason", got[1].Content)
	}
	if n := o.weather.Load(); n != 2 {
		t.Errorf("the read calls ran %d times, want 2", n)
	}
}

// TestOneWriteCallAsksAsBefore: a single write call of a turn is one
// question, answered with a plain Resume as before.
func TestOneWriteCallAsksAsBefore(t *testing.T) {
	f := newFixture(t, true, 0,
		llmtest.ToolCalls(llm.ToolCall{ID: "c1", Name: "book", Arguments: `{"room":"A1","day":1}`},
			llm.ToolCall{ID: "c2", Name: "weather", Arguments: `{"city":"Oslo"}`}),
		llmtest.Text("Booked."))
	ctx := context.Background()
	res, err := f.graph.Invoke(ctx, "t", agent.Say("Book A1"))
	if err != nil || res.Status != graph.StatusInterrupted || res.Interrupt == nil || len(res.Interrupts) > 1 {
		t.Fatalf("want one question, got %+v, %v", res, err)
	}
	res, err = f.graph.Resume(ctx, "t", tool.ConfirmAnswer{Accept: true})
	if err != nil || res.Status != graph.StatusDone || f.booked.Load() != 1 {
		t.Fatalf("after accept: %+v, %v; booked %d", res, err, f.booked.Load())
	}
	f.checkPairing(t)
}

func resultLines(msgs []llm.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.ToolCallID + " " + m.Content
	}
	return out
}
