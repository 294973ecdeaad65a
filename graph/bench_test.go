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
	benchInvoke(b, must(countChain(3).Compile()), 3)
}

func BenchmarkChain100(b *testing.B) {
	benchInvoke(b, must(countChain(100).Compile()), 100)
}

func BenchmarkChain100Memory(b *testing.B) {
	benchInvoke(b, must(countChain(100).Compile(graph.WithSaver(checkpoint.NewMemory()))), 100)
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
	benchInvoke(b, must(g.Compile()), 1000)
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
	benchInvoke(b, must(g.Compile()), 5)
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
	benchInvoke(b, must(countChain(100).Compile(graph.WithSaver(s))), 100)
}

type history struct {
	Messages []string `json:"messages"`
}

// BenchmarkCheckpointGrowth appends one ≈200-byte message per step to a
// state that starts with 200 of them, checkpointing every step to SQLite,
// and reports the bytes the database file grew by per step.
func BenchmarkCheckpointGrowth(b *testing.B) {
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
	// The input checkpoint holds 200 messages; the run then takes b.N
	// steps, one message each, and stops at its step limit.
	_, err := must(g.Compile(graph.WithSaver(s), graph.WithStepLimit(0))).Invoke(ctx, "grow", func(h *history) {
		for i := range 200 {
			h.Messages = append(h.Messages, fmt.Sprintf("%s %08d", msg, i))
		}
	})
	if !errors.Is(err, graph.ErrStepLimit) {
		b.Fatal(err)
	}
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
	before := size()
	c := must(g.Compile(graph.WithSaver(s), graph.WithStepLimit(b.N)))
	b.ReportAllocs()
	b.ResetTimer()
	if _, err := c.Continue(ctx, "grow"); !errors.Is(err, graph.ErrStepLimit) {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(size()-before)/float64(b.N), "B/step")
}
