package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loomkit/loom/server"
)

// loadClient is a keep-alive HTTP client for many concurrent threads.
func loadClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}}
}

// post sends a JSON body and decodes the JSON answer into out (if not nil).
func post(ctx context.Context, c *http.Client, url string, body string, out any) error {
	req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != 200 {
		return fmt.Errorf("POST %s: %d %s", url, resp.StatusCode, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// conversation drives one thread through the demo: create it, run to the
// interrupt, resume. It returns the latencies of the two runs. The run
// goes to other, when given, and the rest to base.
func conversation(ctx context.Context, c *http.Client, base string, other ...string) (run, resume time.Duration, err error) {
	var t struct {
		ThreadID string `json:"thread_id"`
	}
	if err = post(ctx, c, base+"/threads", `{}`, &t); err != nil {
		return
	}
	var v map[string]json.RawMessage
	began := time.Now()
	first := base
	if len(other) > 0 {
		first = other[0]
	}
	if err = post(ctx, c, first+"/threads/"+t.ThreadID+"/runs/wait", `{"assistant_id":"demo","input":{"title":"load"}}`, &v); err != nil {
		return
	}
	run = time.Since(began)
	if _, ok := v["__interrupt__"]; !ok {
		return run, 0, fmt.Errorf("run ended without the interrupt: %v", v)
	}
	began = time.Now()
	if err = post(ctx, c, base+"/threads/"+t.ThreadID+"/runs/wait", `{"assistant_id":"demo","command":{"resume":{"accept":true}}}`, &v); err != nil {
		return
	}
	resume = time.Since(began)
	if string(v["approved"]) != "true" {
		return run, resume, fmt.Errorf("resume did not approve: %v", v)
	}
	return run, resume, nil
}

// BenchmarkServeLoad drives 200 concurrent threads through the demo agent
// over HTTP on loopback against the SQLite file: each conversation creates
// a thread, runs to the interrupt (10 checkpoints) and resumes (2 more).
// A turn is one run request (to the interrupt, or the resume); b.N is the
// number of turns. It reports turns/s (thread creation included in the
// wall time) and the p50 and p99 latency of a turn. For the figure:
//
//	go test -run '^$' -bench BenchmarkServeLoad -benchtime 30s ./server/
func BenchmarkServeLoad(b *testing.B) {
	ts := startServer(b, server.Options{})
	serveLoad(b, []string{ts.URL})
}

// BenchmarkServeLoadPostgres is BenchmarkServeLoad against two replicas
// sharing Postgres (LOOM_TEST_POSTGRES_URL, a fresh schema), the runs
// River jobs that either replica executes. Each request of a
// conversation goes to the next replica in turn, so a run is waited for
// on a replica other than the one that made the thread. For the figure:
//
//	go test -run '^$' -bench BenchmarkServeLoadPostgres -benchtime 30s ./server/
func BenchmarkServeLoadPostgres(b *testing.B) {
	rs := startReplicas(b, 2, server.Options{})
	serveLoad(b, []string{rs[0].URL, rs[1].URL})
}

// serveLoad drives 200 concurrent conversations against the servers at
// urls, each request to the next in turn.
func serveLoad(b *testing.B, urls []string) {
	const workers = 200
	c := loadClient(workers)
	ctx := context.Background()
	var (
		left = int64(b.N)
		mu   sync.Mutex
		lat  = make([]time.Duration, 0, b.N+1)
		wg   sync.WaitGroup
		errs atomic.Value
	)
	b.ResetTimer()
	began := time.Now()
	for w := range workers {
		wg.Go(func() {
			for atomic.AddInt64(&left, -2) > -2 {
				run, resume, err := conversation(ctx, c, urls[w%len(urls)], urls[(w+1)%len(urls)])
				if err != nil {
					errs.Store(err)
					return
				}
				mu.Lock()
				lat = append(lat, run, resume)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	took := time.Since(began)
	b.StopTimer()
	if err, _ := errs.Load().(error); err != nil {
		b.Fatal(err)
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(float64(len(lat))/took.Seconds(), "turns/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}

// vmRSS reads the process's resident set size from /proc (0 elsewhere).
func vmRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// heapInuse returns the live heap after a full collection.
func heapInuse() int64 {
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// Idle threads live in the store, not in memory: 10,000 threads, each run
// to its interrupt and left waiting, grow the heap and the RSS by at most
// 50 MB.
func TestIdleThreadsMemory(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("creates 10,000 threads and measures memory; skipped with -short and under the race detector")
	}
	const threads, workers, bound = 10_000, 16, 50 << 20
	ts := startServer(t, server.Options{})
	c := loadClient(workers)
	ctx := context.Background()
	// Warm up: one conversation, so that pools, caches and code are in place.
	if _, _, err := conversation(ctx, c, ts.URL); err != nil {
		t.Fatal(err)
	}
	c.CloseIdleConnections()
	heap0, rss0 := heapInuse(), vmRSS()

	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= threads {
				var th struct {
					ThreadID string `json:"thread_id"`
				}
				err := post(ctx, c, ts.URL+"/threads", `{"metadata":{"memory":"test"}}`, &th)
				if err == nil {
					err = post(ctx, c, ts.URL+"/threads/"+th.ThreadID+"/runs/wait", `{"assistant_id":"demo","input":{"title":"idle"}}`, nil)
				}
				if err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
	c.CloseIdleConnections()
	time.Sleep(100 * time.Millisecond) // let the server's connections close
	heap1, rss1 := heapInuse(), vmRSS()

	var n int
	if err := post(ctx, c, ts.URL+"/threads/count", `{"status":"interrupted","metadata":{"memory":"test"}}`, &n); err != nil || n != threads {
		t.Fatalf("%d interrupted threads (%v), want %d", n, err, threads)
	}
	t.Logf("%d idle threads: heap in use %+.1f MB, RSS %+.1f MB", threads, float64(heap1-heap0)/(1<<20), float64(rss1-rss0)/(1<<20))
	if heap1-heap0 > bound {
		t.Errorf("heap in use grew by %d bytes for %d idle threads, bound %d", heap1-heap0, threads, bound)
	}
	if rss0 > 0 && rss1-rss0 > bound {
		t.Errorf("RSS grew by %d bytes for %d idle threads, bound %d", rss1-rss0, threads, bound)
	}
}
