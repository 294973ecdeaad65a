package savertest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/loomkit/loom/checkpoint"
)

// BenchPut puts checkpoints in sequence on one thread of s, each with a
// small state that changes a little, as a graph step does. Every backend's
// BenchmarkPut runs it, so their figures compare.
func BenchPut(b *testing.B, s checkpoint.Saver) {
	ctx, cancel := context.WithCancel(context.Background()) // as a caller's context is
	defer cancel()
	var head *checkpoint.Checkpoint
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		cp := checkpoint.Next("bench", head, checkpoint.SourceStep)
		cp.Step = i
		cp.State = fmt.Appendf(nil, `{"messages":[{"role":"user","content":"What is the weather in Paris?"},{"role":"assistant","content":"Let me check."}],"step":%d,"done":false}`, i)
		cp.Next = []string{"agent"}
		cp.Meta.Node = "agent"
		if err := s.Put(ctx, cp); err != nil {
			b.Fatal(err)
		}
		head = cp
		i++
	}
}

// BenchGetHead reads the head of a thread of s whose head is a few deltas
// past a full state.
func BenchGetHead(b *testing.B, s checkpoint.Saver) {
	ctx := context.Background()
	var head *checkpoint.Checkpoint
	for i := range 10 {
		cp := checkpoint.Next("bench", head, checkpoint.SourceStep)
		cp.State = fmt.Appendf(nil, `{"messages":["%s"],"step":%d}`, strings.Repeat("x", 2000), i)
		if err := s.Put(ctx, cp); err != nil {
			b.Fatal(err)
		}
		head = cp
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Get(ctx, "bench", ""); err != nil {
			b.Fatal(err)
		}
	}
}
