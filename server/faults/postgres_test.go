package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loomkit/loom/checkpoint/postgres"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/store/storetest"
)

// postgresUp reports whether the local PostgreSQL server accepts
// connections.
func postgresUp() bool {
	return exec.Command("pg_isready", "-q", "-h", "127.0.0.1", "-p", "5432").Run() == nil
}

// cluster names the local PostgreSQL cluster's version, for pg_ctlcluster.
func pgVersion(t testing.TB) string {
	t.Helper()
	es, err := os.ReadDir("/etc/postgresql")
	if err != nil || len(es) == 0 {
		t.Skipf("no PostgreSQL cluster in /etc/postgresql to restart: %v", err)
	}
	return es[0].Name()
}

// pgctl runs pg_ctlcluster's action on the local cluster.
func pgctl(t testing.TB, action string) {
	t.Helper()
	sh(t, "pg_ctlcluster", "--skip-systemctl-redirect", pgVersion(t), "main", action)
}

// Two replicas serve runs under load while PostgreSQL restarts, down for
// three seconds. Requests
// in flight either succeed, waiting the outage out, or fail with 503 and
// the code database_unavailable (the load retries those); no request
// gets another error. Every run that was accepted completes with the
// state of an uninterrupted run and an unbroken history, and the
// replicas serve again after the restart without being restarted.
func TestPostgresRestart(t *testing.T) {
	gate(t)
	local(t, storetest.EnvURL, storetest.ServerURL(t))
	pgVersion(t)
	dbURL := storetest.PostgresURL(t)
	t.Cleanup(func() {
		if !postgresUp() {
			pgctl(t, "start")
		}
	})
	logs := filepath.Join(t.TempDir(), "replicas.log")
	logf, err := os.Create(logs)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	log := slog.New(slog.NewTextHandler(logf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	agents, err := chainAgents()
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for i := range 2 {
		srv, err := server.New(context.Background(), server.Options{Agents: agents, Database: dbURL, Logger: log.With("replica", i),
			Lease: 300 * time.Millisecond, RescueAfter: 3 * time.Second, Grace: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ctx, ln) }()
		t.Cleanup(func() { stop(); <-served; srv.Close() })
		urls = append(urls, "http://"+ln.Addr().String())
	}
	defer func() {
		if t.Failed() || os.Getenv("LOOM_FAULTS_LOGS") == "1" {
			b, _ := os.ReadFile(logs)
			t.Logf("replica logs:\n%s", b)
		}
	}()

	client := &http.Client{Timeout: time.Minute}
	var (
		mu       sync.Mutex
		statuses = map[string]int{} // "route status code" → count
		bad      []string
		okAfter  int // requests answered 200 after the restart
		restored time.Time
	)
	// req sends a request, retrying it while the answer is a 503, and
	// records every answer.
	req := func(method, url, route string, body any, out any) bool {
		var b []byte
		if body != nil {
			b, _ = json.Marshal(body)
		}
		for try := 0; try < 600; try++ {
			r, _ := http.NewRequest(method, url, bytes.NewReader(b))
			r.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(r)
			if err != nil {
				mu.Lock()
				bad = append(bad, fmt.Sprintf("%s: %v", route, err))
				mu.Unlock()
				return false
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var e struct{ Error struct{ Code string } }
			json.Unmarshal(data, &e)
			mu.Lock()
			statuses[fmt.Sprintf("%s %d %s", route, resp.StatusCode, e.Error.Code)]++
			if resp.StatusCode == 200 && !restored.IsZero() && time.Now().After(restored) {
				okAfter++
			}
			mu.Unlock()
			switch {
			case resp.StatusCode == 200:
				return out == nil || json.Unmarshal(data, out) == nil
			case resp.StatusCode == 503 && (e.Error.Code == "database_unavailable" || e.Error.Code == "closing"):
				time.Sleep(100 * time.Millisecond)
				continue
			}
			mu.Lock()
			bad = append(bad, fmt.Sprintf("%s: %d %s", route, resp.StatusCode, data))
			mu.Unlock()
			return false
		}
		return false
	}

	type job struct {
		thread, run string
		seed        int
	}
	var jobs []job
	stopLoad := make(chan struct{})
	var wg sync.WaitGroup
	var seed int
	for w := range 12 {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stopLoad:
					return
				default:
				}
				base := urls[(w+n)%2]
				var th struct {
					ThreadID string `json:"thread_id"`
				}
				if !req("POST", base+"/threads", "create-thread", map[string]any{}, &th) {
					return
				}
				mu.Lock()
				seed++
				s := seed
				mu.Unlock()
				var r struct {
					RunID string `json:"run_id"`
				}
				if !req("POST", urls[(w+n+1)%2]+"/threads/"+th.ThreadID+"/runs", "create-run",
					map[string]any{"assistant_id": "chain", "input": map[string]int{"seed": s, "ms": 2}}, &r) {
					return
				}
				mu.Lock()
				jobs = append(jobs, job{th.ThreadID, r.RunID, s})
				mu.Unlock()
				var v chainState
				if !req("GET", base+"/threads/"+th.ThreadID+"/runs/"+r.RunID+"/join", "join", nil, &v) {
					return
				}
				if v.Steps != chainLen {
					mu.Lock()
					bad = append(bad, fmt.Sprintf("join %s: %d steps", r.RunID, v.Steps))
					mu.Unlock()
				}
			}
		})
	}

	// Restart PostgreSQL, down for a few seconds in between, as a crash
	// and a failover would have it.
	time.Sleep(2 * time.Second)
	began := time.Now()
	pgctl(t, "stop")
	// While it is down, a request that needs it fails at once, clearly.
	resp, err := client.Post(urls[0]+"/threads", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), `"code":"database_unavailable"`) {
		t.Errorf("create a thread while PostgreSQL is down: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	time.Sleep(3 * time.Second)
	pgctl(t, "start")
	if !until(30*time.Second, postgresUp) {
		t.Fatal("PostgreSQL did not come back in 30 s")
	}
	mu.Lock()
	restored = time.Now()
	mu.Unlock()
	t.Logf("PostgreSQL stopped and started again in %v", time.Since(began).Round(time.Millisecond))
	time.Sleep(5 * time.Second)
	close(stopLoad)
	wg.Wait()

	var lines []string
	for k, n := range statuses {
		lines = append(lines, fmt.Sprintf("%6d %s", n, k))
	}
	sort.Strings(lines)
	t.Logf("answers:\n%s", strings.Join(lines, "\n"))
	if len(bad) > 0 {
		t.Fatalf("%d requests got an answer other than 200 or 503 database_unavailable, e.g. %s", len(bad), bad[0])
	}
	if okAfter == 0 {
		t.Fatal("no request succeeded after the restart")
	}

	// Every accepted run completes, as if nothing happened.
	saver, err := postgres.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer saver.Close()
	for _, j := range jobs {
		var v chainState
		if !req("GET", urls[0]+"/threads/"+j.thread+"/runs/"+j.run+"/join", "final-join", nil, &v) {
			t.Fatalf("join %s: %v", j.run, bad)
		}
		if w := want(t, j.seed, 2); v != w {
			t.Errorf("run %s: final state %+v, want %+v", j.run, v, w)
		}
		checkHistory(t, saver, j.thread, j.run)
	}
	t.Logf("%d runs, all complete and intact; %d requests succeeded after the restart", len(jobs), okAfter)
}
