package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/tool"
)

// TestAnswerCall answers open calls of write tools inside a graph run, as
// an app does when a person's answer comes as a chat message: a rejection
// never calls the tool, an acceptance calls it once and emits the call
// event, bad calls come back as results for the model, the view in ctx
// decides what resolves, and an interrupt from the tool is an error.
func TestAnswerCall(t *testing.T) {
	var booked, asked int
	reg := tool.NewRegistry()
	err := reg.Register("", "",
		tool.New("book", "Book a room for a day", tool.Write, func(_ context.Context, a bookArgs) (string, error) {
			booked++
			return fmt.Sprintf("booked %s on day %d", a.Room, a.Day), nil
		}, tool.WithSummary(func(_ context.Context, a bookArgs) string { return fmt.Sprintf("book %s on day %d", a.Room, a.Day) })),
		tool.New("ask", "Ask the person", tool.Write, func(ctx context.Context, _ struct{}) (string, error) {
			asked++
			return graph.Ask[string](ctx, "which room?")
		}),
	)
	if err == nil {
		err = reg.Register("rooms", "", tool.New("cancel", "Cancel a booking", tool.Write, func(_ context.Context, a bookArgs) (string, error) {
			booked++
			return "cancelled " + a.Room, nil
		}))
	}
	if err != nil {
		t.Fatal(err)
	}
	book := llm.ToolCall{ID: "c1", Name: "book", Arguments: `{"room":"A1","day":3}`}
	cancel := llm.ToolCall{ID: "c2", Name: "cancel", Arguments: `{"room":"A1","day":3}`}
	rooms := &tool.View{}
	rooms.Add("rooms")

	for _, tc := range []struct {
		name      string
		call      llm.ToolCall
		view      *tool.View
		ans       tool.ConfirmAnswer
		want      string // the result, or its prefix when it ends in "…"
		runs      int
		interrupt bool
	}{
		{name: "accept", call: book, ans: tool.ConfirmAnswer{Accept: true}, want: "booked A1 on day 3", runs: 1},
		{name: "reject with a reason", call: book, ans: tool.ConfirmAnswer{Note: " too late "},
			want: "The user rejected book A1 on day 3; it did not run. Reason: too late"},
		{name: "reject", call: book, want: "The user rejected book A1 on day 3; it did not run."},
		{name: "bad arguments", call: llm.ToolCall{ID: "c3", Name: "book", Arguments: `{"room":"A1","day":"x"}`},
			ans: tool.ConfirmAnswer{Accept: true}, want: "error: …"},
		{name: "unknown tool", call: llm.ToolCall{ID: "c4", Name: "fly", Arguments: `{}`},
			ans: tool.ConfirmAnswer{Accept: true}, want: "error: …"},
		{name: "outside the view", call: cancel, ans: tool.ConfirmAnswer{Accept: true}, want: "error: …"},
		{name: "in the view", call: cancel, view: rooms, ans: tool.ConfirmAnswer{Accept: true}, want: "cancelled A1", runs: 1},
		{name: "the tool asks", call: llm.ToolCall{ID: "c5", Name: "ask", Arguments: `{}`},
			ans: tool.ConfirmAnswer{Accept: true}, interrupt: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			booked, asked = 0, 0
			var result string
			var callErr error
			g := graph.New[struct{}]("answer").
				Node("n", func(ctx context.Context, s struct{}) (struct{}, error) {
					if tc.view != nil {
						ctx = tool.WithView(ctx, tc.view)
					}
					result, callErr = agent.AnswerCall(ctx, reg, tc.call, tc.ans)
					return s, callErr
				}).
				Edge(graph.Start, "n").
				Edge("n", graph.End)
			c, err := g.Compile(graph.WithSaver(checkpoint.NewMemory()))
			if err != nil {
				t.Fatal(err)
			}
			events := map[graph.Kind]int{}
			for ev, err := range c.Stream(context.Background(), "t", graph.Input[struct{}]{Update: func(*struct{}) {}}) {
				if err != nil {
					t.Fatal(err)
				}
				events[ev.Kind]++
			}
			if tc.interrupt {
				if !graph.IsInterrupt(callErr) || asked != 1 || events[graph.KindInterrupt] != 1 {
					t.Fatalf("err %v, tool ran %d times, %d interrupt events; want the tool's question passed on", callErr, asked, events[graph.KindInterrupt])
				}
				return
			}
			if callErr != nil {
				t.Fatalf("AnswerCall: %v", callErr)
			}
			if prefix, ok := strings.CutSuffix(tc.want, "…"); ok && !strings.HasPrefix(result, prefix) || !ok && result != tc.want {
				t.Errorf("result %q, want %q", result, tc.want)
			}
			if booked != tc.runs || events[graph.KindToolCall] != tc.runs {
				t.Errorf("the tool ran %d times with %d call events, want %d", booked, events[graph.KindToolCall], tc.runs)
			}
		})
	}
}
