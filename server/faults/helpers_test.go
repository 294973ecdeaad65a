package faults

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/server"
)

// A test binary started with LOOM_FAULTS_REPLICA=1 is a replica: a
// server of the chain agent on LOOM_DATABASE_URL, which prints
// "listening URL" and serves until SIGTERM.
func TestMain(m *testing.M) {
	if os.Getenv("LOOM_FAULTS_REPLICA") == "1" {
		os.Exit(replica())
	}
	os.Exit(m.Run())
}

func replica() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	lease, _ := time.ParseDuration(os.Getenv("LOOM_FAULTS_LEASE"))
	rescue, _ := time.ParseDuration(os.Getenv("LOOM_FAULTS_RESCUE"))
	agents, err := chainAgents()
	if err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		return 1
	}
	srv, err := server.New(ctx, server.Options{
		Agents:      agents,
		Database:    os.Getenv("LOOM_DATABASE_URL"),
		Logger:      slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Lease:       lease,
		RescueAfter: rescue,
		Grace:       2 * time.Second,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		return 1
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		return 1
	}
	fmt.Printf("listening http://%s\n", ln.Addr())
	if err := srv.Serve(ctx, ln); err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		return 1
	}
	return 0
}

// gate skips a test that restarts shared services unless asked for.
func gate(t *testing.T) {
	t.Helper()
	if os.Getenv("LOOM_TEST_FAULTS") != "1" && os.Getenv("CI") != "true" {
		t.Skip("restarts shared services and kills processes; set LOOM_TEST_FAULTS=1 (CI=true does too) and run alone: go test -p 1 ./server/faults/")
	}
	if testing.Short() {
		t.Skip("fault tests take a minute or more; skipped with -short")
	}
}

// local fails the test when url does not name a server on this machine,
// which the test could restart.
func local(t *testing.T, env, rawURL string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil || (u.Hostname() != "127.0.0.1" && u.Hostname() != "localhost") {
		t.Skipf("%s=%s is not a local server this test can restart", env, rawURL)
	}
}

// sh runs a command, failing the test when it fails.
func sh(t testing.TB, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// until polls cond every 50 ms until it holds or d passes.
func until(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// chainLen is the chain agent's number of steps.
const chainLen = 50

// chainState is the chain agent's state: each step folds its number into
// Acc, so the final Acc says that every step ran, in order, once on top
// of the one before (a step run again after a crash starts from the last
// checkpoint, and gives the same result).
type chainState struct {
	Seed  int    `json:"seed"`
	MS    int    `json:"ms"`
	Acc   uint64 `json:"acc"`
	Steps int    `json:"steps"`
}

func chainGraph() *graph.Graph[chainState] {
	g := graph.New[chainState]("chain")
	prev := graph.Start
	for i := 1; i <= chainLen; i++ {
		name := fmt.Sprintf("s%02d", i)
		g.Node(name, func(ctx context.Context, s chainState) (chainState, error) {
			select {
			case <-time.After(time.Duration(s.MS) * time.Millisecond):
			case <-ctx.Done():
				return s, ctx.Err()
			}
			s.Acc = (s.Acc^uint64(s.Seed*1000+i))*1099511628211 + 1
			s.Steps++
			return s, nil
		})
		g.Edge(prev, name)
		prev = name
	}
	g.Edge(prev, graph.End)
	return g
}

// chainAgents serves the chain agent and the review agent.
func chainAgents() (*server.Registry, error) {
	var r server.Registry
	for _, a := range []server.Agent{
		{Name: "chain", Description: "fifty steps in a line", Build: server.Compile(chainGraph())},
		{Name: "review", Description: "drafts slowly, asks, applies the answer", Build: server.Compile(reviewGraph())},
	} {
		if err := r.Register(a); err != nil {
			return nil, err
		}
	}
	return &r, nil
}

// reviewState is the review agent's state.
type reviewState struct {
	Title  string   `json:"title"`
	MS     int      `json:"ms"`
	Drafts int      `json:"drafts"`
	Note   string   `json:"note"`
	Done   bool     `json:"done"`
	Trail  []string `json:"trail"`
}

// reviewAnswer is what the review agent asks for.
type reviewAnswer struct {
	Accept bool   `json:"accept"`
	Note   string `json:"note"`
}

// reviewGraph drafts in three slow steps (as a model would answer),
// asks for approval, and applies the answer.
func reviewGraph() *graph.Graph[reviewState] {
	draft := func(ctx context.Context, s reviewState) (reviewState, error) {
		select {
		case <-time.After(time.Duration(s.MS) * time.Millisecond):
		case <-ctx.Done():
			return s, ctx.Err()
		}
		s.Drafts++
		s.Trail = append(s.Trail, fmt.Sprintf("draft%d", s.Drafts))
		return s, nil
	}
	return graph.New[reviewState]("review").
		Node("draft1", draft).Node("draft2", draft).Node("draft3", draft).
		Node("confirm", func(ctx context.Context, s reviewState) (reviewState, error) {
			a, err := graph.Ask[reviewAnswer](ctx, map[string]string{"question": "publish " + s.Title + "?"})
			if err != nil {
				return s, err
			}
			s.Note, s.Done = a.Note, a.Accept
			s.Trail = append(s.Trail, "confirm")
			return s, nil
		}).
		Edge(graph.Start, "draft1").Edge("draft1", "draft2").Edge("draft2", "draft3").
		Edge("draft3", "confirm").Edge("confirm", graph.End)
}

// want is the chain's final state for a seed, run without interruption.
func want(t testing.TB, seed, ms int) chainState {
	t.Helper()
	c, err := chainGraph().Compile(graph.WithSaver(checkpoint.NewMemory()))
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Invoke(context.Background(), "t", func(s *chainState) { s.Seed, s.MS = seed, 0 })
	if err != nil {
		t.Fatal(err)
	}
	res.State.MS = ms
	return res.State
}

// checkHistory asserts that a chain thread's checkpoints are the input
// and the fifty steps, in order, once each, all of run id, with no gap.
func checkHistory(t testing.TB, saver checkpoint.Saver, thread, run string) {
	t.Helper()
	hist, err := saver.List(context.Background(), thread, 0)
	if err != nil {
		t.Fatalf("history of %s: %v", thread, err)
	}
	if len(hist) != chainLen+1 {
		t.Fatalf("thread %s: %d checkpoints, want %d", thread, len(hist), chainLen+1)
	}
	for i, cp := range hist { // newest first
		seq := len(hist) - 1 - i
		switch {
		case cp.Seq != int64(seq):
			t.Fatalf("thread %s: checkpoint %d has seq %d, want %d", thread, i, cp.Seq, seq)
		case i+1 < len(hist) && cp.ParentID != hist[i+1].ID:
			t.Fatalf("thread %s: checkpoint seq %d: parent %s, want %s", thread, seq, cp.ParentID, hist[i+1].ID)
		case cp.Meta.Run != run:
			t.Fatalf("thread %s: checkpoint seq %d is of run %s, want %s", thread, seq, cp.Meta.Run, run)
		case seq == 0 && cp.Meta.Source != checkpoint.SourceInput:
			t.Fatalf("thread %s: first checkpoint has source %s", thread, cp.Meta.Source)
		case seq > 0 && (cp.Meta.Source != checkpoint.SourceStep || cp.Step != seq || cp.Meta.Node != fmt.Sprintf("s%02d", seq)):
			t.Fatalf("thread %s: checkpoint seq %d: source %s, step %d, node %s", thread, seq, cp.Meta.Source, cp.Step, cp.Meta.Node)
		}
	}
}
