package graph_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
)

// squareState is the input and output of a cached node.
type squareState struct {
	X   int    `json:"x"`
	Sq  int    `json:"sq"`
	Tag string `json:"tag"`
}

// squareGraph: one cached pure node, square, counting its calls.
func squareGraph(t testing.TB, calls *atomic.Int32, opts ...graph.NodeOption) *graph.Compiled[squareState] {
	square := func(_ context.Context, s squareState) (squareState, error) {
		calls.Add(1)
		s.Sq = s.X * s.X
		return s, nil
	}
	return must(graph.New[squareState]("square").
		Node("square", square, append([]graph.NodeOption{graph.Pure()}, opts...)...).
		Edge(graph.Start, "square").Edge("square", graph.End).
		Compile())(t)
}

func TestCacheSameInputRunsOnce(t *testing.T) {
	var calls atomic.Int32
	c := squareGraph(t, &calls, graph.Cache(graph.CachePolicy{TTL: time.Hour}))
	ctx := context.Background()
	run := func(thread string, x int) (squareState, []graph.Event) {
		t.Helper()
		var events []graph.Event
		var res *graph.Result[squareState]
		for e, err := range c.Stream(ctx, thread, graph.Input[squareState]{Update: func(s *squareState) { s.X = x }}) {
			if err != nil {
				t.Fatal(err)
			}
			events = append(events, e)
			if e.Kind == graph.KindRunEnd {
				res = e.Data.(*graph.Result[squareState])
			}
		}
		return res.State, events
	}
	cached := func(events []graph.Event) bool {
		for _, e := range events {
			if e.Kind == graph.KindCached && e.Node == "square" && strings.HasPrefix(e.Data.(string), "square@1/square/") {
				return true
			}
		}
		return false
	}

	s, ev := run("a", 3)
	if s.Sq != 9 || calls.Load() != 1 || cached(ev) {
		t.Fatalf("first run: state %+v, %d calls, cached %v; want 9, 1 call, not cached", s, calls.Load(), cached(ev))
	}
	s, ev = run("b", 3)
	if s.Sq != 9 || calls.Load() != 1 || !cached(ev) {
		t.Fatalf("same input: state %+v, %d calls, cached %v; want 9 from the cache, still 1 call", s, calls.Load(), cached(ev))
	}
	s, ev = run("c", 4)
	if s.Sq != 16 || calls.Load() != 2 || cached(ev) {
		t.Fatalf("other input: state %+v, %d calls, cached %v; want 16 and a second call", s, calls.Load(), cached(ev))
	}
}

// A key function keys results by what the node reads: a state that
// differs elsewhere hits.
func TestCacheKey(t *testing.T) {
	var calls atomic.Int32
	c := squareGraph(t, &calls, graph.Cache(graph.CachePolicy{TTL: time.Hour}),
		graph.CacheKey(func(s squareState) string { return fmt.Sprint(s.X) }))
	ctx := context.Background()
	must(c.Invoke(ctx, "a", func(s *squareState) { s.X, s.Tag = 5, "one" }))(t)
	res := must(c.Invoke(ctx, "b", func(s *squareState) { s.X, s.Tag = 5, "two" }))(t)
	if calls.Load() != 1 {
		t.Errorf("%d calls for two inputs with one key, want 1", calls.Load())
	}
	// The cached result is the first run's whole state.
	if res.State.Sq != 25 || res.State.Tag != "one" {
		t.Errorf("state %+v, want the cached result (25, tag one)", res.State)
	}
}

// mapStore is a CacheStore shared by two compiled graphs, as replicas
// would share one.
type mapStore struct {
	m    map[string][]byte
	sets int
}

func (s *mapStore) Get(_ context.Context, key string) ([]byte, bool, error) {
	b, ok := s.m[key]
	return b, ok, nil
}

func (s *mapStore) Set(_ context.Context, key string, value []byte, _ time.Duration) error {
	s.m[key] = value
	s.sets++
	return nil
}

func TestCacheSharedStore(t *testing.T) {
	store := &mapStore{m: map[string][]byte{}}
	var calls atomic.Int32
	p := graph.CachePolicy{TTL: time.Hour, Store: store}
	one, two := squareGraph(t, &calls, graph.Cache(p)), squareGraph(t, &calls, graph.Cache(p))
	ctx := context.Background()
	must(one.Invoke(ctx, "a", func(s *squareState) { s.X = 7 }))(t)
	res := must(two.Invoke(ctx, "a", func(s *squareState) { s.X = 7 }))(t)
	if calls.Load() != 1 || store.sets != 1 || res.State.Sq != 49 {
		t.Errorf("%d calls, %d sets, state %+v; want the second replica to read the first's result", calls.Load(), store.sets, res.State)
	}
	// A value that is not a result is a miss, not a failure.
	for k := range store.m {
		store.m[k] = []byte("not json")
	}
	res = must(two.Invoke(ctx, "b", func(s *squareState) { s.X = 7 }))(t)
	if calls.Load() != 2 || res.State.Sq != 49 {
		t.Errorf("after a corrupt entry: %d calls, state %+v; want the node run again", calls.Load(), res.State)
	}
}

// A cached Jump node keeps where it chose to go.
func TestCacheJump(t *testing.T) {
	var calls atomic.Int32
	pick := func(_ context.Context, s triageState) (triageState, string, error) {
		calls.Add(1)
		s.Log = append(s.Log, "pick")
		return s, s.Want, nil
	}
	c := must(graph.New[triageState]("pick").
		Jump("pick", pick, []string{"fix", "ship"}, graph.Pure(), graph.Cache(graph.CachePolicy{TTL: time.Hour})).
		Node("fix", logNode("fix")).Node("ship", logNode("ship")).
		Edge(graph.Start, "pick").Edge("fix", graph.End).Edge("ship", graph.End).
		Compile())(t)
	ctx := context.Background()
	for _, thread := range []string{"a", "b"} {
		res := must(c.Invoke(ctx, thread, func(s *triageState) { s.Want = "ship" }))(t)
		if got := strings.Join(res.State.Log, " "); got != "pick ship" {
			t.Errorf("thread %s ran %q, want pick ship", thread, got)
		}
	}
	if calls.Load() != 1 {
		t.Errorf("%d calls, want 1", calls.Load())
	}
}

func TestCacheCompileErrors(t *testing.T) {
	noop := func(_ context.Context, s squareState) (squareState, error) { return s, nil }
	tests := []struct {
		name string
		opts []graph.NodeOption
		want string
	}{
		{"not pure", []graph.NodeOption{graph.Cache(graph.CachePolicy{TTL: time.Minute})},
			`node "a": Cache needs a node marked Pure`},
		{"no ttl", []graph.NodeOption{graph.Pure(), graph.Cache(graph.CachePolicy{})},
			`node "a": Cache needs a positive TTL, not 0s`},
		{"negative size", []graph.NodeOption{graph.Pure(), graph.Cache(graph.CachePolicy{TTL: time.Minute, Size: -1})},
			`node "a": Cache size -1 is negative`},
		{"key without cache", []graph.NodeOption{graph.Pure(), graph.CacheKey(func(squareState) string { return "" })},
			`node "a": CacheKey without Cache`},
		{"key of another type", []graph.NodeOption{graph.Pure(), graph.Cache(graph.CachePolicy{TTL: time.Minute}), graph.CacheKey(func(int) string { return "" })},
			`node "a": CacheKey takes func(int) string, not a func of the graph's state`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := graph.New[squareState]("g").Node("a", noop, tt.opts...).
				Edge(graph.Start, "a").Edge("a", graph.End).Compile(graph.WithSaver(checkpoint.NewMemory()))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Compile: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// BenchmarkCache runs the square graph with no cache (call), and with
// inputs that always hit or always miss its cache: for a node this cheap,
// hit − call is what a hit costs (hashing the input, decoding the result).
func BenchmarkCache(b *testing.B) {
	for _, tt := range []struct {
		name string
		opts []graph.NodeOption
		x    func(i int) int
	}{
		{"call", nil, func(i int) int { return i }},
		{"hit", []graph.NodeOption{graph.Cache(graph.CachePolicy{TTL: time.Hour})}, func(int) int { return 1 }},
		{"miss", []graph.NodeOption{graph.Cache(graph.CachePolicy{TTL: time.Hour})}, func(i int) int { return i }},
	} {
		b.Run(tt.name, func(b *testing.B) {
			var calls atomic.Int32
			c := squareGraph(b, &calls, tt.opts...)
			ctx := context.Background()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				x := tt.x(i)
				res, err := c.Invoke(ctx, "t", func(s *squareState) { s.X = x })
				if err != nil {
					b.Fatal(err)
				}
				if res.State.Sq != x*x {
					b.Fatalf("square of %d: %d", x, res.State.Sq)
				}
			}
		})
	}
}

// A key function that panics fails the run with the panic, as a node
// would.
func TestCacheKeyPanics(t *testing.T) {
	var calls atomic.Int32
	c := squareGraph(t, &calls, graph.Cache(graph.CachePolicy{TTL: time.Hour}),
		graph.CacheKey(func(s squareState) string { panic("no key for " + s.Tag) }))
	_, err := c.Invoke(context.Background(), "a", func(s *squareState) { s.Tag = "this" })
	var pe *graph.PanicError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "node square: cache key: panic: no key for this") || calls.Load() != 0 {
		t.Errorf("error %v after %d calls; want the key's panic, no call", err, calls.Load())
	}
}
