package convo_test

import (
	"context"
	"fmt"

	"github.com/loomkit/loom/convo"
	"github.com/loomkit/loom/llm"
)

func ExampleBuilder_Build() {
	// The full history, as kept in graph state for display.
	history := []convo.Message{
		{Role: llm.RoleUser, Content: "Plan my revision for next week."},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "find_free", Arguments: `{"week":12}`}}},
		{Role: llm.RoleTool, ToolCallID: "c1", Content: `{"free":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]}`},
		{Role: llm.RoleAssistant, Content: "You have 15 free slots."},
		{Role: llm.RoleUser, Content: "Use the evenings."},
	}
	pins := convo.Pins{}.Set("plan", "1. find free slots\n2. place sessions")

	b := convo.New(convo.Config{System: "You schedule study sessions.", Window: 4})
	var cache convo.Summary // lives in graph state next to the history
	v, err := b.Build(context.Background(), history, pins, &cache)
	if err != nil {
		panic(err)
	}
	for _, m := range v.Messages {
		for _, c := range m.ToolCalls {
			m.Content += "[call " + c.Name + "]"
		}
		fmt.Printf("%s: %s\n", m.Role, m.Content)
	}
	fmt.Println("summarised:", cache.Count)
	// Output:
	// system: You schedule study sessions.
	//
	// <plan>
	// 1. find free slots
	// 2. place sessions
	// </plan>
	//
	// Summary of the 1 earlier messages of this conversation:
	// user: Plan my revision for next week.
	// assistant: [call find_free]
	// tool: {"free":[1,2,3,4,5,6,7,8,9,10,"... (+5 more)"]}
	// assistant: You have 15 free slots.
	// user: Use the evenings.
	// summarised: 1
}
