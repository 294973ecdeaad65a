package main

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loomkit/loom/server/servertest"
)

// benchJSON runs loom bench with args and --json and returns its report
// and error.
func benchJSON(t *testing.T, args ...string) (BenchReport, error) {
	t.Helper()
	var out bytes.Buffer
	err := run(context.Background(), append([]string{"bench", "--json"}, args...), &out)
	var r BenchReport
	if jerr := json.Unmarshal(out.Bytes(), &r); jerr != nil {
		t.Fatalf("bench printed no report (%v, error %v): %s", jerr, err, out.String())
	}
	return r, err
}

// The turns loom bench reports are the runs the server made: 3
// conversations of 5 turns are 3 threads of 5 runs each, run, resumed, run,
// resumed and run again, so each ends waiting for its approval.
func TestBenchMakesTheTurnsItReports(t *testing.T) {
	l := servertest.Start(t, filepath.Join(t.TempDir(), "bench.db"), nil, demoAgent())
	r, err := benchJSON(t, "--url", l.Base, "--clients", "3", "--turns", "5")
	if err != nil {
		t.Fatalf("bench: %v (%+v)", err, r)
	}
	if r.Turns != 15 || r.ErrorCount != 0 || len(r.Errors) != 0 || r.Conversations != 3 || r.Agent != "demo" {
		t.Fatalf("report %+v, want 15 turns of 3 conversations with demo and no errors", r)
	}
	if l := r.Latency; l.P50 <= 0 || l.P50 > l.P90 || l.P90 > l.P99 || l.P99 > l.Max || r.TurnsPerSecond <= 0 {
		t.Errorf("latency %+v, %.1f turns/s: not ordered or not measured", l, r.TurnsPerSecond)
	}
	// Each conversation started a run three times and answered twice.
	if r.Starts.Turns != 9 || r.Resumes.Turns != 6 {
		t.Errorf("%d turns that start a run and %d that answer, want 9 and 6", r.Starts.Turns, r.Resumes.Turns)
	}
	for _, k := range []BenchKind{r.Starts, r.Resumes} {
		if l := k.Latency; l.P50 <= 0 || l.P50 > l.P99 || l.P99 > r.Latency.Max {
			t.Errorf("latency of %d turns %+v: not ordered, not measured, or past the max of all (%v)", k.Turns, l, r.Latency.Max)
		}
	}

	code, b := l.Do("", "POST", "/threads/search", map[string]any{"metadata": map[string]string{"loom_bench": "demo"}, "limit": 100})
	var threads []struct {
		ThreadID string `json:"thread_id"`
		Status   string `json:"status"`
	}
	if err := json.Unmarshal(b, &threads); code != 200 || err != nil {
		t.Fatalf("search threads: %d %s", code, b)
	}
	if len(threads) != 3 {
		t.Fatalf("%d threads on the server, want 3: %s", len(threads), b)
	}
	runs := 0
	for _, th := range threads {
		code, b := l.Do("", "GET", "/threads/"+th.ThreadID+"/runs?limit=100", nil)
		var rs []struct {
			Status string `json:"status"`
		}
		if err := json.Unmarshal(b, &rs); code != 200 || err != nil {
			t.Fatalf("runs of %s: %d %s", th.ThreadID, code, b)
		}
		statuses := map[string]int{}
		for _, run := range rs {
			statuses[run.Status]++
		}
		// The runs that stopped at the approval are interrupted, the
		// approvals success.
		if want := map[string]int{"interrupted": 3, "success": 2}; !maps.Equal(statuses, want) {
			t.Errorf("runs of %s: %v, want %v", th.ThreadID, statuses, want)
		}
		runs += len(rs)
		if th.Status != "interrupted" {
			t.Errorf("thread %s is %s after run, resume, run, resume, run; want interrupted", th.ThreadID, th.Status)
		}
	}
	if runs != r.Turns {
		t.Errorf("the server made %d runs, bench reports %d turns", runs, r.Turns)
	}
}

// Failed turns are counted by kind, reported, and make loom bench exit 1:
// a server that answers 500, one whose runs fail, and one that is down.
func TestBenchCountsErrors(t *testing.T) {
	fake := func(wait func(w http.ResponseWriter)) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/threads" {
				w.Write([]byte(`{"thread_id":"t1"}`))
				return
			}
			wait(w)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	down, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downURL := "http://" + down.Addr().String()
	down.Close()

	for _, c := range []struct {
		name, url string
		want      map[string]int
	}{
		{"500", fake(func(w http.ResponseWriter) { http.Error(w, `{"error":{"code":"internal"}}`, 500) }), map[string]int{"HTTP 500": 6}},
		{"run error", fake(func(w http.ResponseWriter) { w.Write([]byte(`{"__error__":{"error":"panic","message":"boom"}}`)) }), map[string]int{"run error panic": 6}},
		{"not a result", fake(func(w http.ResponseWriter) { w.Write([]byte(`<html>`)) }), map[string]int{"bad answer": 6}},
		// Each conversation fails to make its thread before the clock
		// starts, then once a turn.
		{"down", downURL, map[string]int{"thread connection": 8}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := benchJSON(t, "--url", c.url, "--clients", "2", "--turns", "3")
			if code, msg := exitStatus(err); err == nil || code != 1 || !strings.Contains(msg, "turns failed") {
				t.Errorf("exit %d %q, want 1", code, msg)
			}
			if r.Turns != 0 || r.ErrorCount != sum(c.want) || !maps.Equal(r.Errors, c.want) || len(r.FirstErrors) == 0 {
				t.Errorf("report %+v, want errors %v", r, c.want)
			}
		})
	}
}

// With several servers (replicas), each request of a conversation goes to
// the next: the thread to the first, then the turns in turn.
func TestBenchReplicas(t *testing.T) {
	var got [2]atomic.Int64
	var urls []string
	for i := range got {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got[i].Add(1)
			w.Write([]byte(`{"thread_id":"t1"}`))
		}))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	r, err := benchJSON(t, "--url", strings.Join(urls, ","), "--clients", "1", "--turns", "4")
	if err != nil || r.Turns != 4 {
		t.Fatalf("bench: %v %+v", err, r)
	}
	if a, b := got[0].Load(), got[1].Load(); a != 3 || b != 2 {
		t.Errorf("requests %d and %d, want 3 (the thread and two turns) and 2", a, b)
	}
}

// The text report says the figures and the errors by kind.
func TestBenchText(t *testing.T) {
	l := servertest.Start(t, filepath.Join(t.TempDir(), "bench.db"), nil, demoAgent())
	var out bytes.Buffer
	if err := run(context.Background(), []string{"bench", "--url", l.Base, "--clients", "2", "--turns", "2"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2 conversations with demo at " + l.Base, "turns    4 in ", " turns/s", "p99 ", "errors   0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
}

// Percentiles are by nearest rank: of 1 ms to 100 ms, p50 is 50 ms.
func TestPercentiles(t *testing.T) {
	var lat []time.Duration
	for i := 100; i >= 1; i-- {
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	if got, want := percentiles(lat), (BenchLatency{P50: 50, P90: 90, P99: 99, Max: 100, Mean: 50.5}); got != want {
		t.Errorf("percentiles = %+v, want %+v", got, want)
	}
	if got := percentiles([]time.Duration{3 * time.Millisecond}); got.P50 != 3 || got.P99 != 3 || got.Max != 3 {
		t.Errorf("percentiles of one = %+v", got)
	}
	if got := percentiles(nil); got != (BenchLatency{}) {
		t.Errorf("percentiles of none = %+v", got)
	}
}

func TestBenchUsage(t *testing.T) {
	for _, args := range [][]string{{"--clients", "0"}, {"--turns", "0", "--duration", "0"}, {"--input", "{"}, {"extra"}} {
		err := run(context.Background(), append([]string{"bench"}, args...), &bytes.Buffer{})
		if code, _ := exitStatus(err); code != 2 {
			t.Errorf("bench %q: exit %d (%v), want 2", args, code, err)
		}
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
