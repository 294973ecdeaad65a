package graph_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/checkpoint/sqlite"
	"github.com/loomkit/loom/graph"
)

type count struct {
	N int `json:"n"`
}

func incCount(_ context.Context, s count) (count, error) {
	s.N++
	return s, nil
}

func countChain(n int) *graph.Graph[count] {
	g := graph.New[count]("chain")
	prev := graph.Start
	for i := range n {
		name := fmt.Sprintf("n%d", i)
		g.Node(name, incCount).Edge(prev, name)
		prev = name
	}
	return g.Edge(prev, graph.End)
}

func benchInvoke(b *testing.B, c *graph.Compiled[count], want int) {
	b.Helper()
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		res, err := c.Invoke(ctx, fmt.Sprint("t", i), nil)
		if err != nil {
			b.Fatal(err)
		}
		if res.State.N != want {
			b.Fatalf("N = %d, want %d", res.State.N, want)
		}
	}
}

func BenchmarkChain3(b *testing.B) {
	benchInvoke(b, must(countChain(3).Compile())(b), 3)
}

func BenchmarkChain100(b *testing.B) {
	benchInvoke(b, must(countChain(100).Compile())(b), 100)
}

func BenchmarkChain100Memory(b *testing.B) {
	benchInvoke(b, must(countChain(100).Compile(graph.WithSaver(checkpoint.NewMemory())))(b), 100)
}

func BenchmarkLoop1000(b *testing.B) {
	g := graph.New[count]("loop").
		Node("spin", incCount).
		Edge(graph.Start, "spin").
		Route("spin", func(s count) string {
			if s.N < 1000 {
				return "spin"
			}
			return graph.End
		}, "spin", graph.End).
		Loop("spin", "spin", 1000, graph.End)
	benchInvoke(b, must(g.Compile())(b), 1000)
}

func BenchmarkFanOut5(b *testing.B) {
	branch := func(_ context.Context, s count) (count, error) { s.N = 1; return s, nil }
	join := func(s count, rs []count) (count, error) {
		for _, r := range rs {
			s.N += r.N
		}
		return s, nil
	}
	g := graph.New[count]("fan").
		Node("fan", graph.Parallel(join, branch, branch, branch, branch, branch)).
		Edge(graph.Start, "fan").Edge("fan", graph.End)
	benchInvoke(b, must(g.Compile())(b), 5)
}

func openSQLite(b *testing.B) (*sqlite.Saver, string) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "bench.db")
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s, path
}

func BenchmarkChain100SQLite(b *testing.B) {
	s, _ := openSQLite(b)
	benchInvoke(b, must(countChain(100).Compile(graph.WithSaver(s)))(b), 100)
}

type history struct {
	Messages []string `json:"messages"`
}

// BenchmarkCheckpointGrowth keeps a conversation of about 200 messages
// of ≈200 bytes in state and appends one message per step, checkpointing
// every step to SQLite. It reports how many bytes the database file grows
// by per step. Each thread starts with 200 messages and takes 50 steps, so
// the state stays between 40 and 50 KB; starting a thread is not measured.
func BenchmarkCheckpointGrowth(b *testing.B) {
	const perThread = 50
	s, path := openSQLite(b)
	msg := strings.Repeat("x", 190)
	g := graph.New[history]("grow").
		Node("add", func(_ context.Context, h history) (history, error) {
			h.Messages = append(h.Messages, fmt.Sprintf("%s %08d", msg, len(h.Messages)))
			return h, nil
		}).
		Edge(graph.Start, "add").
		Route("add", func(history) string { return "add" }, "add").
		Loop("add", "add", 1<<30, graph.End)
	ctx := context.Background()
	start := must(g.Compile(graph.WithSaver(s), graph.WithStepLimit(0)))(b)
	run := must(g.Compile(graph.WithSaver(s), graph.WithStepLimit(perThread)))(b)
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	size := func() int64 {
		if _, err := raw.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			b.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		return fi.Size()
	}
	var grown int64
	b.ReportAllocs()
	b.ResetTimer()
	for steps := 0; steps < b.N; steps += perThread {
		b.StopTimer()
		thread := fmt.Sprint("grow-", steps)
		// The input checkpoint holds 200 messages; the step limit of 0
		// stops the run right after writing it.
		_, err := start.Invoke(ctx, thread, func(h *history) {
			for i := range 200 {
				h.Messages = append(h.Messages, fmt.Sprintf("%s %08d", msg, i))
			}
		})
		if !errors.Is(err, graph.ErrStepLimit) {
			b.Fatal(err)
		}
		base := size()
		b.StartTimer()
		if _, err := run.Continue(ctx, thread); !errors.Is(err, graph.ErrStepLimit) {
			b.Fatal(err)
		}
		b.StopTimer()
		grown += size() - base
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(grown)/float64((b.N+perThread-1)/perThread*perThread), "B/step")
}
