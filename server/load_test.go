package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
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
// interrupt, resume.
func conversation(ctx context.Context, c *http.Client, base string) error {
	var t struct {
		ThreadID string `json:"thread_id"`
	}
	if err := post(ctx, c, base+"/threads", `{}`, &t); err != nil {
		return err
	}
	var v map[string]json.RawMessage
	if err := post(ctx, c, base+"/threads/"+t.ThreadID+"/runs/wait", `{"assistant_id":"demo","input":{"title":"load"}}`, &v); err != nil {
		return err
	}
	if _, ok := v["__interrupt__"]; !ok {
		return fmt.Errorf("run ended without the interrupt: %v", v)
	}
	if err := post(ctx, c, base+"/threads/"+t.ThreadID+"/runs/wait", `{"assistant_id":"demo","command":{"resume":{"accept":true}}}`, &v); err != nil {
		return err
	}
	if string(v["approved"]) != "true" {
		return fmt.Errorf("resume did not approve: %v", v)
	}
	return nil
}

// loadLevels are the concurrent conversations the load benchmarks measure:
// 20 for latency, 200 for throughput. With closed loops latency is
// conversations / throughput (Little's law), so the two are measured apart.
var loadLevels = []int{20, 200}

// BenchmarkServeLoad measures the server on a SQLite file with the load
// from another process: it builds cmd/loom, serves the demo agent here on
// a loopback port, and runs `loom bench` against it, at 20 and at 200
// concurrent conversations (sub-benchmarks clients=20, clients=200). A
// conversation is a thread and a closed loop of turns on it; a turn is one
// POST /threads/{id}/runs/wait, alternately a run to the demo's approval
// (10 checkpoints) and the approval (2). b.N is the number of turns
// (rounded up to a multiple of the conversations); ns/op is the wall time
// of a turn at that concurrency (1/throughput), and it reports turns/s
// and the p50 and p99 latency of a turn as loom bench measured them, so
// the client's cost is not in the server's figures. For the figure:
//
//	go test -run '^$' -bench 'BenchmarkServeLoad$' -benchtime 10000x ./server/
//
// `loom bench` against `loom serve` (see the README's Load section) is the
// same measurement of the binary as deployed.
func BenchmarkServeLoad(b *testing.B) {
	bin := buildLoom(b)
	for _, clients := range loadLevels {
		ts := startServer(b, server.Options{})
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) { serveLoad(b, bin, clients, ts.URL) })
	}
}

// BenchmarkServeLoadPostgres is BenchmarkServeLoad against two replicas
// sharing Postgres (LOOM_TEST_POSTGRES_URL, a fresh schema), the runs
// River jobs that either replica executes. Each request of a
// conversation goes to the next replica in turn, so a run is waited for
// on a replica other than the one that made the thread. For the figure:
//
//	go test -run '^$' -bench BenchmarkServeLoadPostgres -benchtime 2000x ./server/
func BenchmarkServeLoadPostgres(b *testing.B) {
	bin := buildLoom(b)
	for _, clients := range loadLevels {
		rs := startReplicas(b, 2, server.Options{})
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) { serveLoad(b, bin, clients, rs[0].URL, rs[1].URL) })
	}
}

// buildLoom builds cmd/loom into the benchmark's temporary directory and
// returns the binary's path.
func buildLoom(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "loom")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/loomkit/loom/cmd/loom").CombinedOutput(); err != nil {
		b.Fatalf("build loom for the load: %v\n%s", err, out)
	}
	return bin
}

// benchReport is the part of `loom bench --json`'s report the benchmarks
// read.
type benchReport struct {
	Seconds        float64 `json:"seconds"`
	Turns          int     `json:"turns"`
	TurnsPerSecond float64 `json:"turns_per_second"`
	Latency        struct {
		P50 float64 `json:"p50"`
		P99 float64 `json:"p99"`
	} `json:"latency_ms"`
	Errors      map[string]int `json:"errors"`
	ErrorCount  int            `json:"error_count"`
	FirstErrors []string       `json:"first_errors"`
}

// serveLoad runs `loom bench` (the binary bin) with clients conversations
// of b.N/clients turns against the servers at urls, each request of a
// conversation to the next, and reports what it measured.
func serveLoad(b *testing.B, bin string, clients int, urls ...string) {
	turns := max(1, (b.N+clients-1)/clients)
	cmd := exec.Command(bin, "bench", "--json", "--url", strings.Join(urls, ","),
		"--clients", strconv.Itoa(clients), "--turns", strconv.Itoa(turns))
	cmd.Env = append(os.Environ(), "LOOM_API_KEY=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	b.ResetTimer()
	err := cmd.Run()
	b.StopTimer()
	var r benchReport
	if jerr := json.Unmarshal(stdout.Bytes(), &r); jerr != nil {
		b.Fatalf("loom bench: %v, and no report (%v): %s%s", err, jerr, stdout.Bytes(), stderr.Bytes())
	}
	if err != nil || r.ErrorCount > 0 || r.Turns != turns*clients {
		b.Fatalf("loom bench: %v: %d of %d turns made, errors %v, e.g. %q", err, r.Turns, turns*clients, r.Errors, r.FirstErrors)
	}
	b.ReportMetric(r.Seconds*1e9/float64(r.Turns), "ns/op")
	b.ReportMetric(r.TurnsPerSecond, "turns/s")
	b.ReportMetric(r.Latency.P50, "p50-ms")
	b.ReportMetric(r.Latency.P99, "p99-ms")
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
	if err := conversation(ctx, c, ts.URL); err != nil {
		t.Fatal(err)
	}
	c.CloseIdleConnections()
	heap0, rss0 := heapInuse(), vmRSS()

	var (
		next   atomic.Int64
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed error // the first error of a worker
	)
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
					mu.Lock()
					if failed == nil {
						failed = err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if failed != nil {
		t.Fatal(failed)
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
