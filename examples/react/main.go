// Command react is a ReAct agent with two tools: a read tool that looks up
// a city's weather, and a write tool that books a meeting room, which asks
// for confirmation first.
//
// With OPENAI_API_KEY set it talks to the real endpoint (OPENAI_BASE_URL,
// LOOM_MODEL); without it, to a scripted fake endpoint (llmtest), so it runs
// anywhere:
//
//	go run ./examples/react "Is it dry in Oslo tomorrow? If so, book room A1 for day 3."
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/llm/llmtest"
	"github.com/loomkit/loom/llm/openai"
	"github.com/loomkit/loom/tool"
)

type cityArgs struct {
	City string `json:"city" jsonschema:"description=City name"`
}

type bookArgs struct {
	Room string `json:"room"`
	Day  int    `json:"day" jsonschema:"minimum=1,maximum=7"`
}

func main() {
	question := "Is it dry in Oslo tomorrow? If so, book room A1 for day 3."
	if len(os.Args) > 1 {
		question = strings.Join(os.Args[1:], " ")
	}
	if err := run(context.Background(), os.Stdout, question); err != nil {
		log.Fatal(err)
	}
}

func model(w io.Writer) (llm.Model, func(), error) {
	if os.Getenv("OPENAI_API_KEY") != "" {
		cfg := openai.FromEnv()
		m, err := openai.New(cfg)
		return m, func() {}, err
	}
	fmt.Fprintln(w, "(no OPENAI_API_KEY: using a scripted fake endpoint)")
	srv := llmtest.Start(
		llmtest.Text(`<DECISION>{"thought":"check the weather first","action":"call_tool","tool":"weather","args":{"city":"Oslo"}}</DECISION>`),
		llmtest.Text(`<DECISION>{"thought":"dry, so book","action":"call_tool","tool":"book_room","args":{"room":"A1","day":3}}</DECISION>`),
		llmtest.Text(`<DECISION>{"action":"finish","answer":"Oslo will be dry, and room A1 is booked for day 3."}</DECISION>`),
	)
	m, err := openai.New(openai.Config{BaseURL: srv.BaseURL(), APIKey: "fake", Model: "scripted"})
	return m, srv.Close, err
}

func run(ctx context.Context, w io.Writer, question string) error {
	m, done, err := model(w)
	if err != nil {
		return err
	}
	defer done()

	tools := tool.NewRegistry()
	err = tools.Register("", "",
		tool.New("weather", "Tomorrow's weather in a city", tool.Read,
			func(_ context.Context, a cityArgs) (string, error) { return "dry, 14°C in " + a.City, nil }),
		tool.New("book_room", "Book a meeting room for a day of the week (1-7)", tool.Write,
			func(_ context.Context, a bookArgs) (string, error) {
				return fmt.Sprintf("room %s booked for day %d", a.Room, a.Day), nil
			},
			tool.WithSummary(func(_ context.Context, a bookArgs) string {
				return fmt.Sprintf("book room %s for day %d", a.Room, a.Day)
			})),
	)
	if err != nil {
		return err
	}
	g, err := agent.New(agent.Config{Model: m, Tools: tools, System: "You are an office assistant."}).
		Compile(graph.WithSaver(checkpoint.NewMemory()))
	if err != nil {
		return err
	}

	in := graph.Input[agent.State]{Update: agent.Say(question)}
	for {
		var res *graph.Result[agent.State]
		for e, err := range g.Stream(ctx, "example", in) {
			if err != nil {
				return err
			}
			switch e.Kind {
			case graph.KindToolCall, graph.KindToolResult:
				b, _ := json.Marshal(e.Data)
				fmt.Fprintf(w, "  %s %s\n", e.Kind, b)
			case graph.KindRunEnd:
				res = e.Data.(*graph.Result[agent.State])
			}
		}
		if res.Status == graph.StatusDone {
			fmt.Fprintln(w, "answer:", res.State.Answer)
			return nil
		}
		// A write tool waits for a person; this example says yes.
		fmt.Fprintf(w, "confirm? %s → yes\n", res.Interrupt.Payload)
		in = graph.Input[agent.State]{Resume: tool.ConfirmAnswer{Accept: true}}
	}
}
