package openai_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/llm/openai"
)

// Configure from the environment and ask for a whole answer, e.g. with
//
//	OPENAI_BASE_URL=https://api.deepseek.com OPENAI_API_KEY=sk-... LOOM_MODEL=deepseek-chat
func Example() {
	m, err := openai.New(openai.FromEnv())
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resp, err := m.Generate(ctx, []llm.Message{
		llm.System("Answer in one sentence."),
		llm.User("What is a state graph?"),
	}, llm.WithTemperature(0.3), llm.WithMaxTokens(200))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Message.Content)
	fmt.Println("tokens:", resp.Usage.TotalTokens)
}

// Stream thinking and answer to a user as they arrive, and keep the whole
// message for the chat history.
func ExampleModel_Stream() {
	m, err := openai.New(openai.FromEnv())
	if err != nil {
		log.Fatal(err)
	}
	msgs := []llm.Message{llm.User("Is 1001 prime?")}
	var acc llm.Accumulator
	for chunk, err := range m.Stream(context.Background(), msgs, llm.WithThinking(true)) {
		if err != nil {
			log.Fatal(err) // a cut stream ends here, never as a quiet half answer
		}
		if chunk.Reasoning != "" {
			fmt.Print("[thinking] ", chunk.Reasoning)
		}
		fmt.Print(chunk.Content)
		acc.Add(chunk)
	}
	msgs = append(msgs, acc.Response().Message)
	fmt.Println("\nturns:", len(msgs))
}
