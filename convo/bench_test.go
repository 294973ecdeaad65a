package convo

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/loomkit/loom/llm"
)

// history1000 is 1,000 messages of a scheduling conversation whose tool
// observations are JSON lists of 60 slots.
func history1000() []Message {
	h := conversation(1000)
	for i := range h {
		if h[i].Role == llm.RoleTool {
			slots := make([]map[string]any, 60)
			for j := range slots {
				slots[j] = map[string]any{"day": j%7 + 1, "slot": j, "free": j%3 == 0, "note": fmt.Sprintf("message %d slot %d", i, j)}
			}
			b, _ := json.Marshal(map[string]any{"slots": slots, "total": 60})
			h[i].Content = string(b)
		}
	}
	return h
}

func BenchmarkModelView1000(b *testing.B) {
	h := history1000()
	pins := Pins{}.Set("plan", "1. find free evenings\n2. place the review sessions").Set("rules", "No sessions after 22:00.")
	builder := New(Config{System: "You are a scheduling assistant.", MaxTokens: 8000})
	var cache Summary
	ctx := context.Background()
	if _, err := builder.Build(ctx, h, pins, &cache); err != nil { // fills the summary cache
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		v, err := builder.Build(ctx, h, pins, &cache)
		if err != nil || v.OverBudget {
			b.Fatal(err, v.OverBudget)
		}
	}
}
