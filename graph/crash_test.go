package graph_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/checkpoint/sqlite"
	"github.com/loomkit/loom/graph"
)

// The crash test re-runs this test binary as a child process that works on
// a 200-step graph in a SQLite file; TestMain sends the child here.
func TestMain(m *testing.M) {
	if db := os.Getenv("LOOM_CRASH_CHILD_DB"); db != "" {
		if err := crashChild(db); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if db := os.Getenv("LOOM_ASK_CHILD_DB"); db != "" {
		askChild(db) // ends the process
	}
	if db := os.Getenv(envDurabilityDB); db != "" {
		durabilityChild(db) // ends the process
	}
	if db := os.Getenv("LOOM_BRANCH_CHILD_DB"); db != "" {
		// A child that fans out over three items and kills itself in the
		// third branch once the first two are written.
		branchChild(db, os.Getenv("LOOM_BRANCH_CHILD_CALLS")) // ends the process
	}
	os.Exit(m.Run())
}

type listState struct {
	Items []int `json:"items"`
}

const crashSteps = 200

// appendChain is a chain of crashSteps nodes; node i appends i.
func appendChain(pause time.Duration) *graph.Graph[listState] {
	g := graph.New[listState]("append")
	prev := graph.Start
	for i := range crashSteps {
		name := fmt.Sprintf("s%03d", i)
		g.Node(name, func(_ context.Context, s listState) (listState, error) {
			if pause > 0 {
				time.Sleep(pause)
			}
			s.Items = append(s.Items, i)
			return s, nil
		}).Edge(prev, name)
		prev = name
	}
	return g.Edge(prev, graph.End)
}

// crashChild starts the thread, or continues it where the last (killed)
// child left it.
func crashChild(db string) error {
	ctx := context.Background()
	saver, err := sqlite.Open(ctx, db)
	if err != nil {
		return err
	}
	defer saver.Close()
	c, err := appendChain(5 * time.Millisecond).Compile(graph.WithSaver(saver))
	if err != nil {
		return err
	}
	fmt.Println("ready") // the parent kills at a random time after this
	if _, err := saver.Get(ctx, "crash", ""); errors.Is(err, checkpoint.ErrNotFound) {
		_, err = c.Invoke(ctx, "crash", nil)
		return err
	}
	_, err = c.Continue(ctx, "crash")
	return err
}

func TestCrashAndResume(t *testing.T) {
	db := filepath.Join(t.TempDir(), "crash.db")
	child := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "LOOM_CRASH_CHILD_DB="+db)
		cmd.Stderr = os.Stderr
		return cmd
	}
	// Kill children until 20 kills have landed in the middle of the run
	// (the thread started and not finished), at random times.
	progress := func() int {
		saver, err := sqlite.Open(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		defer saver.Close()
		head, err := saver.Get(context.Background(), "crash", "")
		if errors.Is(err, checkpoint.ErrNotFound) {
			return 0
		} else if err != nil {
			t.Fatal(err)
		}
		return head.Step
	}
	kills := 0
	var points []int
	for attempt := 0; kills < 20 && attempt < 100; attempt++ {
		cmd := child()
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait until the child is about to run (process start-up varies a
		// lot, under -race especially), then kill it at a random point.
		if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
			t.Fatalf("child did not start: %v", err)
		}
		time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		if p := progress(); p > 0 && p < crashSteps && !slices.Contains(points, p) {
			kills++
			points = append(points, p)
		}
	}
	t.Logf("killed mid-run after steps %v", points)
	// Let the last child run to the end.
	if err := child().Run(); err != nil {
		t.Fatalf("final child: %v", err)
	}

	ctx := context.Background()
	saver, err := sqlite.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer saver.Close()
	head, err := saver.Get(ctx, "crash", "")
	if err != nil {
		t.Fatal(err)
	}
	c := must(appendChain(0).Compile())(t)
	want := must(c.Invoke(ctx, "x", nil))(t).State
	var got listState
	if err := json.Unmarshal(head.State, &got); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Items, want.Items) || len(head.Next) != 0 {
		t.Fatalf("after %d kills: %d items, next %v; want the %d items of an uninterrupted run, finished", kills, len(got.Items), head.Next, len(want.Items))
	}
	// The history is one unbroken line: every step once, in order.
	hist, err := saver.List(ctx, "crash", 0)
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(hist)
	steps := 0
	for i, cp := range hist {
		if cp.Seq != int64(i) || (i > 0 && cp.ParentID != hist[i-1].ID) {
			t.Fatalf("checkpoint %d: seq %d parent %s; history broken", i, cp.Seq, cp.ParentID)
		}
		if cp.Meta.Source == checkpoint.SourceStep {
			steps++
			if cp.Step != steps || cp.Meta.Node != fmt.Sprintf("s%03d", steps-1) {
				t.Fatalf("checkpoint %d is step %d of %s, want step %d", i, cp.Step, cp.Meta.Node, steps)
			}
		}
	}
	if steps != crashSteps || kills < 20 {
		t.Fatalf("%d step checkpoints after %d kills, want %d after at least 20", steps, kills, crashSteps)
	}
	t.Logf("survived %d kills; %d checkpoints", kills, len(hist))
}
