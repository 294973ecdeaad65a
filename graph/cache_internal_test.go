package graph

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// cachedInc is a graph of one cached pure node that adds 1 to its input,
// with the node's in-memory cache on a clock the test moves.
func cachedInc(t *testing.T, p CachePolicy) (c *Compiled[int], calls *int, clock *time.Time) {
	t.Helper()
	calls, clock = new(int), new(time.Time)
	*clock = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c, err := New[int]("inc").
		Node("inc", func(_ context.Context, n int) (int, error) { *calls++; return n + 1, nil }, Pure(), Cache(p)).
		Edge(Start, "inc").Edge("inc", End).
		Compile()
	if err != nil {
		t.Fatal(err)
	}
	c.nodes[0].memo.store.(*lru).now = func() time.Time { return *clock }
	return c, calls, clock
}

func runInc(t *testing.T, c *Compiled[int], n int) {
	t.Helper()
	res, err := c.Invoke(context.Background(), "t", func(s *int) { *s = n })
	if err != nil {
		t.Fatal(err)
	}
	if res.State != n+1 {
		t.Fatalf("inc(%d) = %d", n, res.State)
	}
}

func TestCacheTTL(t *testing.T) {
	c, calls, clock := cachedInc(t, CachePolicy{TTL: time.Minute})
	runInc(t, c, 1)
	*clock = clock.Add(time.Minute - time.Second)
	runInc(t, c, 1)
	if *calls != 1 {
		t.Fatalf("%d calls within the TTL, want 1", *calls)
	}
	*clock = clock.Add(time.Second)
	runInc(t, c, 1)
	if *calls != 2 {
		t.Fatalf("%d calls once the TTL passed, want 2", *calls)
	}
	// The new result lives a TTL from when it was computed.
	*clock = clock.Add(time.Minute - time.Second)
	runInc(t, c, 1)
	if *calls != 2 {
		t.Fatalf("%d calls within the new result's TTL, want 2", *calls)
	}
}

func TestCacheBoundedSize(t *testing.T) {
	c, calls, _ := cachedInc(t, CachePolicy{TTL: time.Hour, Size: 3})
	store := c.nodes[0].memo.store.(*lru)
	for n := range 10 {
		runInc(t, c, n)
	}
	if got := store.order.Len(); got != 3 {
		t.Fatalf("the cache holds %d results, want its size 3", got)
	}
	// 7, 8 and 9 are kept; using 7 makes 8 the least recently used.
	runInc(t, c, 7)
	runInc(t, c, 10)
	if *calls != 11 {
		t.Fatalf("%d calls, want 11 (10 misses, a hit on 7, a miss on 10)", *calls)
	}
	for _, tt := range []struct {
		n    int
		kept bool
	}{{9, true}, {10, true}, {7, true}, {8, false}} {
		before := *calls
		runInc(t, c, tt.n)
		if hit := *calls == before; hit != tt.kept {
			t.Errorf("input %d: hit %v, want %v", tt.n, hit, tt.kept)
		}
	}
}

// The default size bounds a cache whose policy does not say.
func TestCacheDefaultSize(t *testing.T) {
	c, _, _ := cachedInc(t, CachePolicy{TTL: time.Hour})
	store := c.nodes[0].memo.store.(*lru)
	if store.size != defaultCacheSize {
		t.Fatalf("size %d, want %d", store.size, defaultCacheSize)
	}
	for n := range defaultCacheSize + 5 {
		if err := store.Set(context.Background(), fmt.Sprint(n), nil, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if got := store.order.Len(); got != defaultCacheSize {
		t.Fatalf("holds %d, want %d", got, defaultCacheSize)
	}
}
