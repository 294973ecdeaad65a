package intent_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/loomkit/loom/intent"
	"github.com/loomkit/loom/intent/dataset"
)

// benchRoute routes texts in turn, one per op, and reports the 50th and
// 99th percentile of the time one Route took.
func benchRoute(b *testing.B, e *intent.Engine, texts []string) {
	ctx := context.Background()
	var times []time.Duration
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		start := time.Now()
		if _, err := e.Route(ctx, texts[i%len(texts)]); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
		i++
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkRoute routes one utterance through the cabin assistant's
// keyword, classifier and retrieval stages.
func BenchmarkRoute(b *testing.B) {
	e, err := intent.New(context.Background(), cabinConfig())
	if err != nil {
		b.Fatal(err)
	}
	benchRoute(b, e, []string{"把空调调到22度", "风再大一点", "帮我导航去虹桥机场", "今天股市怎么样", "play some jazz please",
		"打开车窗然后播放音乐", "座椅有点冷", "给老婆打个电话", "close the window", "我想听周杰伦的晴天"})
}

func clinc(b *testing.B) *dataset.Set {
	s, err := dataset.Load(filepath.Join(dataDir(b), "clinc150", "clinc150_train_val.json"), "")
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkRouteCLINC150 routes CLINC150's val utterances through an
// engine trained on its 15,100 training examples (151 intents).
func BenchmarkRouteCLINC150(b *testing.B) {
	s := clinc(b)
	e, err := intent.New(context.Background(), intent.Config{Intents: intent.IntentsFrom(s.Train)})
	if err != nil {
		b.Fatal(err)
	}
	texts := make([]string, len(s.Val))
	for i, ex := range s.Val {
		texts[i] = ex.Text
	}
	benchRoute(b, e, texts)
}

// BenchmarkNewCLINC150 builds an engine from CLINC150's 15,100 training
// examples: training the classifier and indexing the examples.
func BenchmarkNewCLINC150(b *testing.B) {
	cfg := intent.Config{Intents: intent.IntentsFrom(clinc(b).Train)}
	for b.Loop() {
		if _, err := intent.New(context.Background(), cfg); err != nil {
			b.Fatal(err)
		}
	}
}
