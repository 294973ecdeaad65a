package faults

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/loomkit/loom/checkpoint/postgres"
	"github.com/loomkit/loom/store"
	"github.com/loomkit/loom/store/storetest"
)

// cluster is a set of replicas, each a process of this test binary.
type cluster struct {
	t      testing.TB
	env    []string
	logs   string
	client *http.Client

	mu    sync.Mutex
	nodes []*node
}

type node struct {
	cmd    *exec.Cmd
	url    string // "" while down
	exited chan struct{}
}

func newCluster(t testing.TB, n int, env ...string) *cluster {
	c := &cluster{t: t, env: env, logs: t.TempDir(), client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		nodes: make([]*node, n)}
	t.Cleanup(c.stop)
	for i := range n {
		c.start(i)
	}
	return c
}

// start starts replica i and waits until it serves.
func (c *cluster) start(i int) {
	c.t.Helper()
	bin, err := os.Executable()
	if err != nil {
		c.t.Fatal(err)
	}
	logf, err := os.OpenFile(filepath.Join(c.logs, fmt.Sprintf("replica-%d.log", i)), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(append(os.Environ(), "LOOM_FAULTS_REPLICA=1"), c.env...)
	cmd.Stderr = logf
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	nd := &node{cmd: cmd, exited: make(chan struct{})}
	go func() { cmd.Wait(); logf.Close(); close(nd.exited) }()
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case l := <-line:
		nd.url = strings.TrimPrefix(l, "listening ")
	case <-nd.exited:
		b, _ := os.ReadFile(filepath.Join(c.logs, fmt.Sprintf("replica-%d.log", i)))
		c.t.Fatalf("replica %d exited at start:\n%s", i, b)
	case <-time.After(30 * time.Second):
		c.t.Fatalf("replica %d did not start in 30 s", i)
	}
	c.mu.Lock()
	c.nodes[i] = nd
	c.mu.Unlock()
}

// kill SIGKILLs replica i.
func (c *cluster) kill(i int) {
	c.mu.Lock()
	nd := c.nodes[i]
	nd.url = ""
	c.mu.Unlock()
	nd.cmd.Process.Signal(syscall.SIGKILL)
	<-nd.exited
}

// busy returns the replicas that are up and executing runs now.
func (c *cluster) busy() []int {
	c.mu.Lock()
	urls := make([]string, len(c.nodes))
	for i, nd := range c.nodes {
		if nd != nil {
			urls[i] = nd.url
		}
	}
	c.mu.Unlock()
	var out []int
	for i, u := range urls {
		if u == "" {
			continue
		}
		resp, err := c.client.Get(u + "/metrics")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "loom_runs_active{") && !strings.HasSuffix(l, " 0") {
				out = append(out, i)
				break
			}
		}
	}
	return out
}

// stop stops every replica gracefully.
func (c *cluster) stop() {
	c.mu.Lock()
	nodes := c.nodes
	c.mu.Unlock()
	for _, nd := range nodes {
		if nd != nil {
			nd.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, nd := range nodes {
		if nd == nil {
			continue
		}
		select {
		case <-nd.exited:
		case <-time.After(15 * time.Second):
			nd.cmd.Process.Kill()
			<-nd.exited
		}
	}
}

// pick returns a replica that is up.
func (c *cluster) pick() string {
	for {
		c.mu.Lock()
		var up []string
		for _, nd := range c.nodes {
			if nd != nil && nd.url != "" {
				up = append(up, nd.url)
			}
		}
		c.mu.Unlock()
		if len(up) > 0 {
			return up[rand.IntN(len(up))]
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// call makes a request to some replica, and to another when the first
// cannot be reached (it was killed).
func (c *cluster) call(method, path string, body any) (int, []byte, error) {
	var b []byte
	if body != nil {
		b, _ = json.Marshal(body)
	}
	var err error
	for range 50 {
		req, _ := http.NewRequest(method, c.pick()+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		var resp *http.Response
		if resp, err = c.client.Do(req); err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		out, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		if rerr != nil {
			err = rerr
			continue
		}
		return resp.StatusCode, out, nil
	}
	return 0, nil, err
}

// follow streams a run from replica to replica as they die, resuming
// each time after the last event id, and returns the ids in the order
// received and whether the stream reached the run's end.
func (c *cluster) follow(ctx context.Context, thread, run string) (ids []int, ended bool) {
	last := 0
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, "GET", c.pick()+"/threads/"+thread+"/runs/"+run+"/stream?stream_mode=values&stream_mode=events", nil)
		if last > 0 {
			req.Header.Set("Last-Event-ID", strconv.Itoa(last))
		}
		resp, err := c.client.Do(req)
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		id, name := 0, ""
		for sc.Scan() {
			l := sc.Text()
			switch {
			case strings.HasPrefix(l, "id: "):
				id, _ = strconv.Atoi(l[4:])
			case strings.HasPrefix(l, "event: "):
				name = l[7:]
			case strings.HasPrefix(l, "data: "):
				if id > 0 {
					ids = append(ids, id)
					last = id
				}
				if name == "error" || (name == "events" && strings.Contains(l, `"event":"on_chain_end"`) && strings.Contains(l, `"name":"chain"`)) {
					resp.Body.Close()
					return ids, name != "error"
				}
			case l == "":
				id, name = 0, ""
			}
		}
		resp.Body.Close()
	}
	return ids, false
}

// Three replicas share Postgres; 100 runs of the fifty-step chain start
// across them while one replica after another is SIGKILLed and started
// again. Every run completes with the state of an uninterrupted run, its
// checkpoints are the input and the fifty steps with no gap and no step
// twice, its events are numbered without a gap with one state event per
// step, and clients that follow a run from replica to replica with
// Last-Event-ID get each event once, in order, to the end.
func TestReplicasKilled(t *testing.T) {
	gate(t)
	const runs, followed, replicas, maxKills = 100, 6, 3, 8
	dbURL := storetest.PostgresURL(t)
	ctx := context.Background()
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	c := newCluster(t, replicas, "LOOM_DATABASE_URL="+dbURL, "LOOM_FAULTS_LEASE=300ms", "LOOM_FAULTS_RESCUE=2s")

	type job struct{ thread, run string }
	jobs := make([]job, runs)
	ms := func(i int) int { return 30 + 10*(i%5) }
	began := time.Now()
	for i := range jobs {
		st, b, err := c.call("POST", "/threads", map[string]any{})
		if err != nil || st != 200 {
			t.Fatalf("create thread: %d %s %v", st, b, err)
		}
		var th struct {
			ThreadID string `json:"thread_id"`
		}
		json.Unmarshal(b, &th)
		st, b, err = c.call("POST", "/threads/"+th.ThreadID+"/runs", map[string]any{"assistant_id": "chain",
			"input": map[string]int{"seed": i, "ms": ms(i)}})
		if err != nil || st != 200 {
			t.Fatalf("start run %d: %d %s %v", i, st, b, err)
		}
		var r struct {
			RunID string `json:"run_id"`
		}
		json.Unmarshal(b, &r)
		jobs[i] = job{th.ThreadID, r.RunID}
	}
	t.Logf("%d runs started in %v", runs, time.Since(began).Round(time.Millisecond))

	// Clients following some of the runs.
	fctx, stopFollowing := context.WithTimeout(ctx, 4*time.Minute)
	defer stopFollowing()
	type followed_ struct {
		ids   []int
		ended bool
	}
	streams := make([]followed_, followed)
	var fwg sync.WaitGroup
	for i := range streams {
		fwg.Go(func() {
			ids, ended := c.follow(fctx, jobs[i].thread, jobs[i].run)
			streams[i] = followed_{ids, ended}
		})
	}

	// Kill a replica every second or two (one at random among those
	// executing runs), and start it again, while runs are going.
	var done sync.Map
	left := func() int {
		n := 0
		for _, j := range jobs {
			if _, ok := done.Load(j.run); !ok {
				n++
			}
		}
		return n
	}
	kills := 0
	stopChaos := make(chan struct{})
	chaosDone := make(chan struct{})
	go func() {
		defer close(chaosDone)
		for kills < maxKills {
			select {
			case <-stopChaos:
				return
			case <-time.After(time.Duration(1000+rand.IntN(1500)) * time.Millisecond):
			}
			i := rand.IntN(replicas)
			if busy := c.busy(); len(busy) > 0 {
				i = busy[rand.IntN(len(busy))]
			}
			c.kill(i)
			kills++
			t.Logf("%v: killed replica %d (%d runs left)", time.Since(began).Round(time.Millisecond), i, left())
			c.start(i)
		}
	}()

	deadline := time.Now().Add(4 * time.Minute)
	for left() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d runs did not complete in 4 minutes", left(), runs)
		}
		for _, j := range jobs {
			if _, ok := done.Load(j.run); ok {
				continue
			}
			st, b, err := c.call("GET", "/threads/"+j.thread+"/runs/"+j.run, nil)
			if err != nil || st != 200 {
				continue
			}
			var r struct{ Status string }
			json.Unmarshal(b, &r)
			switch r.Status {
			case "success":
				done.Store(j.run, true)
			case "pending", "running":
			default:
				t.Fatalf("run %s: %s", j.run, b)
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	close(stopChaos)
	<-chaosDone
	t.Logf("all %d runs completed after %v and %d kills", runs, time.Since(began).Round(time.Millisecond), kills)
	if kills < 2 {
		t.Errorf("only %d kills while the runs went on", kills)
	}

	// Final states, histories and streams.
	saver, err := postgres.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer saver.Close()
	for i, j := range jobs {
		st, b, err := c.call("GET", "/threads/"+j.thread+"/state", nil)
		var s struct{ Values chainState }
		if err != nil || st != 200 || json.Unmarshal(b, &s) != nil {
			t.Fatalf("state of run %d: %d %s %v", i, st, b, err)
		}
		if w := want(t, i, ms(i)); s.Values != w {
			t.Errorf("run %d: final state %+v, want %+v", i, s.Values, w)
		}
		checkHistory(t, saver, j.thread, j.run)
	}
	fwg.Wait()
	lens := make([]int, len(streams))
	for i, s := range streams {
		lens[i] = len(s.ids)
	}
	t.Logf("events received by the %d clients following runs: %v", followed, lens)
	for i, s := range streams {
		for k, id := range s.ids {
			if id != k+1 {
				t.Fatalf("stream of run %d: ids %v: want 1, 2, 3 … with no gap or repeat", i, s.ids)
			}
		}
		if !s.ended {
			t.Errorf("stream of run %d did not reach the run's end: ids %v", i, s.ids)
		}
		if min := 2 + 3*chainLen; len(s.ids) < min { // start, each step's start, end and state, the end
			t.Errorf("stream of run %d: %d events, want at least %d", i, len(s.ids), min)
		}
	}

	// In the table too, every run's events are numbered without a gap,
	// with one end; and the queue took jobs from killed replicas.
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var bad, rescued, restarted int
	err = conn.QueryRow(ctx, `SELECT count(*) FROM (SELECT run_id FROM loom_run_events GROUP BY run_id
		HAVING count(*) <> max(seq) OR count(*) FILTER (WHERE terminal) <> 1
		OR count(*) FILTER (WHERE convert_from(body, 'UTF8')::jsonb->>'kind' = 'state') <> $1) x`, chainLen).Scan(&bad)
	if err != nil || bad != 0 {
		t.Errorf("%d runs whose events have a gap, not one end, or not one state per step (%v)", bad, err)
	}
	err = conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE errors::text LIKE '%rescued%'), count(*) FILTER (WHERE attempt > 1) FROM river_job WHERE kind = 'loom_thread'`).Scan(&rescued, &restarted)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d thread jobs rescued from killed replicas; %d jobs took more than one attempt", rescued, restarted)
	if rescued == 0 {
		t.Errorf("no job was rescued: the kills hit no run")
	}
}
