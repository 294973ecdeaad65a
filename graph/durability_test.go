package graph_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/checkpoint/sqlite"
	"github.com/loomkit/loom/graph"
)

var durabilities = []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit}

// savers gives each test a fresh saver of each kind.
var savers = []struct {
	name string
	open func(t *testing.T) checkpoint.Saver
}{
	{"memory", func(*testing.T) checkpoint.Saver { return checkpoint.NewMemory() }},
	{"sqlite", func(t *testing.T) checkpoint.Saver {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "dur.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}},
}

// lineOf returns thread's checkpoints oldest first, after checking that
// they form one unbroken line.
func lineOf(t *testing.T, s checkpoint.Saver, thread string) []*checkpoint.Checkpoint {
	t.Helper()
	hist := must(s.List(context.Background(), thread, 0))(t)
	slices.Reverse(hist)
	for i, cp := range hist {
		if cp.Seq != int64(i) || (i > 0 && cp.ParentID != hist[i-1].ID) {
			t.Fatalf("checkpoint %d: seq %d, parent %s; the history is broken", i, cp.Seq, cp.ParentID)
		}
	}
	return hist
}

// describe lists a history as source:node:step.
func describe(hist []*checkpoint.Checkpoint) string {
	var parts []string
	for _, cp := range hist {
		parts = append(parts, fmt.Sprintf("%s:%s:%d", cp.Meta.Source, cp.Meta.Node, cp.Step))
	}
	return strings.Join(parts, " ")
}

func TestDurabilityCheckpoints(t *testing.T) {
	want := map[graph.Durability]string{
		graph.DurabilitySync:  "input::0 step:n0:1 step:n1:2 step:n2:3 step:n3:4 step:n4:5",
		graph.DurabilityAsync: "input::0 step:n0:1 step:n1:2 step:n2:3 step:n3:4 step:n4:5",
		graph.DurabilityExit:  "input::0 step:n4:5",
	}
	ctx := context.Background()
	for _, sv := range savers {
		for _, d := range durabilities {
			for _, how := range []string{"input", "compiled"} {
				t.Run(sv.name+"/"+string(d)+"/"+how, func(t *testing.T) {
					saver := sv.open(t)
					opts := []graph.CompileOption{graph.WithSaver(saver)}
					in := graph.Input[counter]{Update: func(s *counter) { s.N = 10 }}
					if how == "input" {
						in.Durability = d
						// The run's choice wins over the graph's.
						opts = append(opts, graph.WithDurability(graph.DurabilitySync))
						if d == graph.DurabilitySync {
							opts[1] = graph.WithDurability(graph.DurabilityExit)
						}
					} else {
						opts = append(opts, graph.WithDurability(d))
					}
					c := must(chain(5).Compile(opts...))(t)
					res := must(c.Run(ctx, "t", in))(t)
					if res.Status != graph.StatusDone || res.State.N != 15 {
						t.Fatalf("result %+v, want done with N=15", res)
					}
					hist := lineOf(t, saver, "t")
					if got := describe(hist); got != want[d] {
						t.Fatalf("checkpoints %s\nwant        %s", got, want[d])
					}
					head := hist[len(hist)-1]
					var st counter
					if err := json.Unmarshal(head.State, &st); err != nil {
						t.Fatal(err)
					}
					if res.Checkpoint != head.ID || len(head.Next) != 0 || st.N != 15 || len(st.Log) != 5 {
						t.Fatalf("head %s (next %v, state %+v); want the result's %s, done, N=15", head.ID, head.Next, st, res.Checkpoint)
					}
				})
			}
		}
	}
}

// stopChain is chain(5) whose node n2 or n3 does what stop says first.
func stopChain(stop func(ctx context.Context, node string) error) *graph.Graph[counter] {
	g := graph.New[counter]("stops")
	prev := graph.Start
	for i := range 5 {
		name := fmt.Sprintf("n%d", i)
		g.Node(name, func(ctx context.Context, s counter) (counter, error) {
			if err := stop(ctx, name); err != nil {
				return s, err
			}
			return inc(name)(ctx, s)
		}).Edge(prev, name)
		prev = name
	}
	return g.Edge(prev, graph.End)
}

// TestExitWritesWhereTheRunStopped: a run with exit durability writes its
// input and the state it stopped with, however it stopped; the thread
// goes on from there.
func TestExitWritesWhereTheRunStopped(t *testing.T) {
	errFlaky := errors.New("flaky")
	for _, tc := range []struct {
		name string
		// stop is what node n2 or n3 does first; opts the graph's options.
		stop func(ctx context.Context, node string, cancel func(), first bool) error
		opts []graph.CompileOption
		in   graph.Input[counter]
		// The run's error, and the second checkpoint it writes.
		err  error
		want string
		// again goes on to the end.
		again func(c *graph.Compiled[counter]) (*graph.Result[counter], error)
	}{
		{name: "failed", err: errFlaky, want: "step:n2:3 next n3",
			stop: func(_ context.Context, node string, _ func(), first bool) error {
				if node == "n3" && first {
					return errFlaky
				}
				return nil
			}},
		{name: "cancelled", err: context.Canceled, want: "step:n2:3 next n3",
			stop: func(_ context.Context, node string, cancel func(), _ bool) error {
				if node == "n2" {
					cancel()
				}
				return nil
			}},
		{name: "step limit", err: graph.ErrStepLimit, want: "step:n1:2 next n2", opts: []graph.CompileOption{graph.WithStepLimit(2)}},
		{name: "breakpoint", want: "step:n2:3 next n3", in: graph.Input[counter]{InterruptBefore: []string{"n3"}}},
		{name: "interrupted", want: "step:n3:3 next n3 asks",
			stop: func(ctx context.Context, node string, _ func(), _ bool) error {
				if node == "n3" {
					_, err := graph.Ask[bool](ctx, "go on?")
					return err
				}
				return nil
			},
			again: func(c *graph.Compiled[counter]) (*graph.Result[counter], error) {
				return c.Resume(context.Background(), "t", true)
			}},
	} {
		for _, sv := range savers {
			t.Run(tc.name+"/"+sv.name, func(t *testing.T) {
				saver := sv.open(t)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				seen := map[string]bool{}
				stop := func(ctx context.Context, node string) error {
					first := !seen[node]
					seen[node] = true
					if tc.stop == nil {
						return nil
					}
					return tc.stop(ctx, node, cancel, first)
				}
				opts := append([]graph.CompileOption{graph.WithSaver(saver), graph.WithDurability(graph.DurabilityExit)}, tc.opts...)
				c := must(stopChain(stop).Compile(opts...))(t)
				in := tc.in
				in.Update = func(*counter) {}
				res, err := c.Run(ctx, "t", in)
				if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				hist := lineOf(t, saver, "t")
				if len(hist) != 2 {
					t.Fatalf("checkpoints %s, want the input and where the run stopped", describe(hist))
				}
				last := hist[1]
				got := fmt.Sprintf("%s:%s:%d next %s", last.Meta.Source, last.Meta.Node, last.Step, strings.Join(last.Next, ","))
				if last.Interrupt != nil {
					got += " asks"
				}
				if got != tc.want || res == nil || res.Checkpoint != last.ID {
					t.Fatalf("stopped at %s (result %+v), want %s written and named", got, res, tc.want)
				}
				// The state written is the one after the last step
				// taken: nothing runs twice.
				var st counter
				if err := json.Unmarshal(last.State, &st); err != nil {
					t.Fatal(err)
				}
				if st.N != last.Step {
					t.Fatalf("state %+v at step %d", st, last.Step)
				}
				again := tc.again
				if again == nil {
					again = func(c *graph.Compiled[counter]) (*graph.Result[counter], error) {
						return c.Continue(context.Background(), "t")
					}
				}
				for range 3 {
					if res, err = again(c); !errors.Is(err, graph.ErrStepLimit) {
						break
					}
				}
				if err != nil || res.Status != graph.StatusDone {
					t.Fatalf("going on: %+v, %v", res, err)
				}
				if want := []string{"n0", "n1", "n2", "n3", "n4"}; !slices.Equal(res.State.Log, want) {
					t.Fatalf("log %v, want %v: every step once", res.State.Log, want)
				}
			})
		}
	}
}

// TestExitKeepsTheBranchesOfAFailedNode: with exit durability, a node
// whose fan-out fails after some branches finished is written with them
// at the end; going on, only the others run again.
func TestExitKeepsTheBranchesOfAFailedNode(t *testing.T) {
	ctx := context.Background()
	var calls [3]atomic.Int32
	finished := make(chan struct{}, 2)
	branch := func(i int) graph.NodeFunc[counter] {
		return func(_ context.Context, s counter) (counter, error) {
			if calls[i].Add(1) == 1 && i == 2 {
				<-finished
				<-finished
				return s, errors.New("branch 2 failed")
			}
			if i < 2 {
				finished <- struct{}{}
			}
			s.N = 1
			return s, nil
		}
	}
	join := func(s counter, rs []counter) (counter, error) {
		for _, r := range rs {
			s.N += r.N
		}
		return s, nil
	}
	saver := checkpoint.NewMemory()
	c := must(graph.New[counter]("fan").
		Node("first", inc("first")).
		Node("fan", graph.Parallel(join, branch(0), branch(1), branch(2))).
		Edge(graph.Start, "first").Edge("first", "fan").Edge("fan", graph.End).
		Compile(graph.WithSaver(saver), graph.WithDurability(graph.DurabilityExit)))(t)
	if _, err := c.Invoke(ctx, "t", nil); err == nil || !strings.Contains(err.Error(), "branch 2 failed") {
		t.Fatalf("err = %v, want branch 2's", err)
	}
	hist := lineOf(t, saver, "t")
	last := hist[len(hist)-1]
	if got := describe(hist); got != "input::0 step:first:1" || len(last.Done) != 2 {
		t.Fatalf("checkpoints %s, the last with %d branches done; want the input and first's step with 2", got, len(last.Done))
	}
	res := must(c.Continue(ctx, "t"))(t)
	if res.State.N != 4 || calls[0].Load() != 1 || calls[1].Load() != 1 || calls[2].Load() != 2 {
		t.Fatalf("N = %d after branches ran %d, %d, %d times; want 4, and only branch 2 again", res.State.N, calls[0].Load(), calls[1].Load(), calls[2].Load())
	}
}

// heldSaver holds every step's write until release is closed, and counts
// the writes done.
type heldSaver struct {
	checkpoint.Saver
	release chan struct{}
	written atomic.Int64
}

func (h *heldSaver) Put(ctx context.Context, cp *checkpoint.Checkpoint) error {
	if cp.Meta.Source == checkpoint.SourceStep {
		<-h.release
	}
	err := h.Saver.Put(ctx, cp)
	h.written.Add(1)
	return err
}

// TestAsyncStepsGoOnWhileWritesWait: with async durability, steps run
// while the writes of the steps before them wait, up to AsyncBehind
// steps (and the one being written); the run returns with all written.
func TestAsyncStepsGoOnWhileWritesWait(t *testing.T) {
	const n = 2*graph.AsyncBehind + 10
	saver := &heldSaver{Saver: checkpoint.NewMemory(), release: make(chan struct{})}
	lags := make([]int64, n)
	reached := make(chan struct{})
	g := graph.New[counter]("held")
	prev := graph.Start
	for i := range n {
		name := fmt.Sprintf("n%d", i)
		g.Node(name, func(ctx context.Context, s counter) (counter, error) {
			// Before node i, the input and i steps were handed over.
			lags[i] = int64(i+1) - saver.written.Load()
			if i == graph.AsyncBehind+1 {
				close(reached)
			}
			return inc(name)(ctx, s)
		}).Edge(prev, name)
		prev = name
	}
	g.Edge(prev, graph.End)
	c := must(g.Compile(graph.WithSaver(saver), graph.WithDurability(graph.DurabilityAsync)))(t)
	type outcome struct {
		res *graph.Result[counter]
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := c.Invoke(context.Background(), "t", nil)
		done <- outcome{res, err}
	}()
	select {
	case <-reached:
	case <-time.After(time.Minute):
		close(saver.release)
		t.Fatalf("node n%d did not start while the first step's write waited", graph.AsyncBehind+1)
	}
	close(saver.release)
	out := <-done
	if out.err != nil || out.res.State.N != n {
		t.Fatalf("run: %+v, %v", out.res, out.err)
	}
	for i, lag := range lags {
		if lag > graph.AsyncBehind+1 {
			t.Fatalf("node n%d ran %d steps ahead of the writes, more than %d", i, lag, graph.AsyncBehind+1)
		}
	}
	if lags[graph.AsyncBehind+1] != graph.AsyncBehind+1 {
		t.Fatalf("node n%d ran %d steps ahead of the writes, want %d: the steps waited", graph.AsyncBehind+1, lags[graph.AsyncBehind+1], graph.AsyncBehind+1)
	}
	hist := lineOf(t, saver.Saver, "t")
	if len(hist) != n+1 || hist[n].ID != out.res.Checkpoint || len(hist[n].Next) != 0 {
		t.Fatalf("%d checkpoints, head %s; want %d, the last the result's %s", len(hist), hist[len(hist)-1].ID, n+1, out.res.Checkpoint)
	}
}

// failingSaver fails the write of step failAt.
type failingSaver struct {
	checkpoint.Saver
	failAt int
}

var errDiskFull = errors.New("disk full")

func (f *failingSaver) Put(ctx context.Context, cp *checkpoint.Checkpoint) error {
	if cp.Meta.Source == checkpoint.SourceStep && cp.Step == f.failAt {
		return errDiskFull
	}
	return f.Saver.Put(ctx, cp)
}

// TestAsyncWriteErrorFailsTheRun: a write behind the run that fails fails
// the run, which names the last checkpoint written; the thread goes on
// from it.
func TestAsyncWriteErrorFailsTheRun(t *testing.T) {
	for _, failAt := range []int{3, 10} { // a middle step, and the last
		t.Run(fmt.Sprint("step ", failAt), func(t *testing.T) {
			ctx := context.Background()
			saver := &failingSaver{Saver: checkpoint.NewMemory(), failAt: failAt}
			c := must(chain(10).Compile(graph.WithSaver(saver), graph.WithDurability(graph.DurabilityAsync)))(t)
			res, err := c.Invoke(ctx, "t", nil)
			if !errors.Is(err, errDiskFull) || !strings.Contains(err.Error(), fmt.Sprintf("write step %d", failAt)) {
				t.Fatalf("err = %v, want the failed write of step %d", err, failAt)
			}
			head := must(saver.Get(ctx, "t", ""))(t)
			if head.Step != failAt-1 || res == nil || res.Checkpoint != head.ID || res.Status != "" {
				t.Fatalf("head at step %d, result %+v; want step %d, named by the failed result", head.Step, res, failAt-1)
			}
			saver.failAt = -1
			res = must(c.Continue(ctx, "t"))(t)
			if want := must(must(chain(10).Compile())(t).Invoke(ctx, "x", nil))(t).State.Log; !slices.Equal(res.State.Log, want) {
				t.Fatalf("log %v, want %v", res.State.Log, want)
			}
		})
	}
}

func TestBadDurability(t *testing.T) {
	_, err := chain(2).Compile(graph.WithSaver(checkpoint.NewMemory()), graph.WithDurability("never"))
	if err == nil || !strings.Contains(err.Error(), `durability "never": want sync, async or exit`) {
		t.Fatalf("compile: err = %v, want the durability named", err)
	}
	c := must(chain(2).Compile(graph.WithSaver(checkpoint.NewMemory())))(t)
	_, err = c.Run(context.Background(), "t", graph.Input[counter]{Update: func(*counter) {}, Durability: "Sync"})
	if err == nil || !strings.Contains(err.Error(), `durability "Sync": want sync, async or exit`) {
		t.Fatalf("run: err = %v, want the durability named", err)
	}
	if _, err := c.Saver().Get(context.Background(), "t", ""); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("a refused run wrote the thread: %v", err)
	}
}

const (
	envDurabilityDB   = "LOOM_DURABILITY_CHILD_DB"
	envDurabilityMode = "LOOM_DURABILITY_CHILD_MODE"
)

// durabilityChild runs (or continues) thread "kill" of a crashSteps chain
// with the durability of its environment; node i prints "ran i" first.
// It ends the process.
func durabilityChild(db string) {
	ctx := context.Background()
	err := func() error {
		saver, err := sqlite.Open(ctx, db)
		if err != nil {
			return err
		}
		defer saver.Close()
		g := graph.New[listState]("append")
		prev := graph.Start
		for i := range crashSteps {
			name := fmt.Sprintf("s%03d", i)
			g.Node(name, func(_ context.Context, s listState) (listState, error) {
				fmt.Printf("ran %d\n", i)
				time.Sleep(time.Millisecond)
				s.Items = append(s.Items, i)
				return s, nil
			}).Edge(prev, name)
			prev = name
		}
		c, err := g.Edge(prev, graph.End).Compile(graph.WithSaver(saver), graph.WithDurability(graph.Durability(os.Getenv(envDurabilityMode))))
		if err != nil {
			return err
		}
		fmt.Println("ready")
		if _, err := saver.Get(ctx, "kill", ""); errors.Is(err, checkpoint.ErrNotFound) {
			_, err = c.Invoke(ctx, "kill", nil)
			return err
		}
		_, err = c.Continue(ctx, "kill")
		return err
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "durability child:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// TestDurabilityUnderKill kills processes that run a 200-step chain on
// SQLite, each after it started a random step, and checks what each
// durability kept: sync every step taken before the one running; async a
// line of steps at most AsyncBehind+1 short of it; exit only the input,
// so that the next process runs the chain from its start. After the kills
// a last process finishes the thread: every step once, in order.
func TestDurabilityUnderKill(t *testing.T) {
	for _, d := range durabilities {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			killAndFinish(t, d)
		})
	}
}

func killAndFinish(t *testing.T, d graph.Durability) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "kill.db")
	head := func() *checkpoint.Checkpoint {
		saver, err := sqlite.Open(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		defer saver.Close()
		cp, err := saver.Get(ctx, "kill", "")
		if errors.Is(err, checkpoint.ErrNotFound) {
			return nil
		} else if err != nil {
			t.Fatal(err)
		}
		return cp
	}
	// child starts a process and returns its lines from its first "ran"
	// on, after checking that it starts where the thread stands.
	child := func() (*exec.Cmd, func() (int, error)) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envDurabilityDB+"="+db, envDurabilityMode+"="+string(d))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		from := 0
		if h := head(); h != nil && d != graph.DurabilityExit {
			from = h.Step
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewReader(out)
		if l, err := lines.ReadString('\n'); err != nil || l != "ready\n" {
			t.Fatalf("child did not start: %q, %v", l, err)
		}
		next := from
		return cmd, func() (int, error) {
			l, err := lines.ReadString('\n')
			if err != nil {
				return 0, err
			}
			var i int
			if _, err := fmt.Sscanf(l, "ran %d\n", &i); err != nil {
				return 0, fmt.Errorf("child said %q", l)
			}
			if i != next {
				return 0, fmt.Errorf("child ran step %d, want %d (the thread stood at %d)", i, next, from)
			}
			next++
			return i, nil
		}
	}
	var points []string
	for range 5 {
		cmd, ran := child()
		first, err := ran()
		if err != nil {
			t.Fatal(err)
		}
		k := first + 1
		if k < crashSteps-20 {
			k += rand.IntN(crashSteps - 20 - k)
		}
		for i := first; i < k; {
			if i, err = ran(); err != nil {
				t.Fatal(err)
			}
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		h := head()
		if h == nil {
			// Async writes the input behind the run too.
			if d != graph.DurabilityAsync || k > graph.AsyncBehind+1 {
				t.Fatalf("killed in step %d, nothing written", k)
			}
			points = append(points, fmt.Sprintf("%d→none", k))
			continue
		}
		if len(h.Next) == 0 {
			break // the run ended before the kill
		}
		var st listState
		if err := json.Unmarshal(h.State, &st); err != nil {
			t.Fatal(err)
		}
		// The head is a whole step: its items are the steps before it,
		// and it names the next.
		if !slices.Equal(st.Items, seq(h.Step)) || len(h.Next) != 1 || h.Next[0] != fmt.Sprintf("s%03d", h.Step) {
			t.Fatalf("after a kill in step %d the head is step %d with %d items, next %v", k, h.Step, len(st.Items), h.Next)
		}
		switch d {
		case graph.DurabilitySync:
			if h.Step < k {
				t.Fatalf("killed in step %d, the head is step %d: written steps were lost", k, h.Step)
			}
		case graph.DurabilityAsync:
			if h.Step < k-graph.AsyncBehind-1 {
				t.Fatalf("killed in step %d, the head is step %d: more than %d steps behind", k, h.Step, graph.AsyncBehind+1)
			}
		case graph.DurabilityExit:
			if h.Step != 0 || h.Meta.Source != checkpoint.SourceInput {
				t.Fatalf("killed in step %d, the head is %s step %d; want the input only", k, h.Meta.Source, h.Step)
			}
		}
		points = append(points, fmt.Sprintf("%d→%d", k, h.Step))
	}
	t.Logf("killed in step → head at: %v", points)
	if len(points) == 0 {
		t.Fatal("no kill landed in the middle of the run")
	}
	// A last process finishes the thread, from where it stands.
	cmd, ran := child()
	for {
		if _, err := ran(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("last child: %v", err)
	}
	h := head()
	var st listState
	if err := json.Unmarshal(h.State, &st); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.Items, seq(crashSteps)) || len(h.Next) != 0 {
		t.Fatalf("%d items, next %v; want the %d items of a whole run, finished", len(st.Items), h.Next, crashSteps)
	}
	saver, err := sqlite.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer saver.Close()
	hist := lineOf(t, saver, "kill")
	if d == graph.DurabilityExit {
		if got := describe(hist); got != fmt.Sprintf("input::0 step:s%03d:%d", crashSteps-1, crashSteps) {
			t.Fatalf("checkpoints %s, want the input and the end", got)
		}
		return
	}
	steps := 0
	for _, cp := range hist[1:] {
		steps++
		if cp.Step != steps || cp.Meta.Node != fmt.Sprintf("s%03d", steps-1) {
			t.Fatalf("checkpoint %d is step %d of %s, want step %d: a gap or a step twice", cp.Seq, cp.Step, cp.Meta.Node, steps)
		}
	}
	if steps != crashSteps {
		t.Fatalf("%d steps written, want %d", steps, crashSteps)
	}
}

// seq returns 0, 1, …, n-1.
func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// BenchmarkChain100Durability runs the 100-node counter chain with each
// durability, in memory and in SQLite (sync is BenchmarkChain100Memory and
// BenchmarkChain100SQLite).
func BenchmarkChain100Durability(b *testing.B) {
	for _, backend := range []string{"memory", "sqlite"} {
		for _, d := range durabilities {
			b.Run(backend+"/"+string(d), func(b *testing.B) {
				var s checkpoint.Saver = checkpoint.NewMemory()
				if backend == "sqlite" {
					s, _ = openSQLite(b)
				}
				benchInvoke(b, must(countChain(100).Compile(graph.WithSaver(s), graph.WithDurability(d)))(b), 100)
				reportPerStep(b, 100)
			})
		}
	}
}
