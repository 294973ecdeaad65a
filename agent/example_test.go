package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/llm/llmtest"
	"github.com/loomkit/loom/llm/openai"
	"github.com/loomkit/loom/tool"
)

// A ReAct loop with a read tool, which runs at once, and a write tool,
// which waits for a person's confirmation. The model here is a scripted
// fake endpoint; any OpenAI-compatible one works the same way.
func Example() {
	srv := llmtest.Start(
		llmtest.Text(`{"action":"call_tool","tool":"weather","args":{"city":"Oslo"}}`),
		llmtest.Text(`{"action":"call_tool","tool":"book_room","args":{"room":"A1"}}`),
		llmtest.Text(`{"action":"finish","answer":"Dry tomorrow; room A1 is booked."}`),
	)
	defer srv.Close()
	model, err := openai.New(openai.Config{BaseURL: srv.BaseURL(), APIKey: "fake", Model: "scripted"})
	if err != nil {
		log.Fatal(err)
	}
	type city struct {
		City string `json:"city"`
	}
	type room struct {
		Room string `json:"room"`
	}
	tools := tool.NewRegistry()
	err = tools.Register("", "",
		tool.New("weather", "Tomorrow's weather in a city", tool.Read,
			func(_ context.Context, a city) (string, error) { return "dry in " + a.City, nil }),
		tool.New("book_room", "Book a meeting room", tool.Write,
			func(_ context.Context, a room) (string, error) { return "room " + a.Room + " booked", nil },
			tool.WithSummary(func(_ context.Context, a room) string { return "book room " + a.Room })),
	)
	if err != nil {
		log.Fatal(err)
	}
	g, err := agent.New(agent.Config{Model: model, Tools: tools, System: "You are an office assistant."}).
		Compile(graph.WithSaver(checkpoint.NewMemory()))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	res, err := g.Invoke(ctx, "t1", agent.Say("Is it dry in Oslo tomorrow? Then book room A1."))
	if err != nil {
		log.Fatal(err)
	}
	var ask tool.ConfirmRequest
	if err := json.Unmarshal(res.Interrupt.Payload, &ask); err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, "—", ask.Summary)
	res, err = g.Resume(ctx, "t1", tool.ConfirmAnswer{Accept: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, "—", res.State.Answer)
	// Output:
	// interrupted — book room A1
	// done — Dry tomorrow; room A1 is booked.
}
