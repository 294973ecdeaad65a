package contract

import (
	"fmt"
	"strings"
	"testing"
)

// answer2KB is a 2 KB decision wrapped in prose and a code fence.
var answer2KB = func() string {
	var steps []string
	for i := range 12 {
		steps = append(steps, fmt.Sprintf(`{"content": "Review chapter %d of the algebra notes and do the exercises", "done_when": "exercises %d.1 to %d.5 checked"}`, i+1, i+1, i+1))
	}
	obj := `{
  "speak": "I'll place the review sessions on the free evenings this week, starting with the hardest chapters.",
  "action": "continue",
  "reason": "The user asked for a weekly review plan and the free slots are known.",
  "day": 3,
  "tool_call": {"name": "place", "arguments": {"task_id": 42, "day": 3, "slot": 5}},
  "plan_steps": [` + strings.Join(steps, ",\n    ") + `]
}`
	return "Let me think about this. The user wants a plan, so I will continue.\n```json\n" + obj + "\n```\nThat is my decision."
}()

func BenchmarkDecode2KB(b *testing.B) {
	if _, err := Decode[decision](answer2KB); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(answer2KB)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode[decision](answer2KB); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExtract2KB(b *testing.B) {
	b.SetBytes(int64(len(answer2KB)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Extract(answer2KB); err != nil {
			b.Fatal(err)
		}
	}
}
