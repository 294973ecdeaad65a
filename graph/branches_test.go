package graph_test

import (
	"context"
	"errors"
	"fmt"
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

type fanState struct {
	Items []string `json:"items"`
	Out   []string `json:"out,omitempty"`
}

// fanGraph fans out over the state's items with fn and joins the
// results into Out.
func fanGraph(fn func(ctx context.Context, item string) (string, error)) *graph.Graph[fanState] {
	return graph.New[fanState]("fan").
		Node("fan", graph.Map(func(s fanState) []string { return s.Items }, fn,
			func(s fanState, rs []string) (fanState, error) { s.Out = rs; return s, nil })).
		Edge(graph.Start, "fan").Edge("fan", graph.End)
}

// waitDone waits until thread's head keeps the results of n branches.
func waitDone(ctx context.Context, s checkpoint.Saver, thread string, n int) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if head, err := s.Get(ctx, thread, ""); err == nil && len(head.Done) >= n {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("thread %s: %d branch results not written within 30s", thread, n)
}

// branchChild starts the fan-out; its branches append their item to the
// calls file, and the third waits for the first two to be written and
// kills the process with SIGKILL.
func branchChild(db, calls string) {
	ctx := context.Background()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "branch child:", err)
		os.Exit(1)
	}
	saver, err := sqlite.Open(ctx, db)
	if err != nil {
		fail(err)
	}
	c, err := fanGraph(func(ctx context.Context, item string) (string, error) {
		f, err := os.OpenFile(calls, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return "", err
		}
		_, err = f.WriteString(item + "\n")
		if err := errors.Join(err, f.Close()); err != nil {
			return "", err
		}
		if item == "c" {
			if err := waitDone(ctx, saver, "t", 2); err != nil {
				fail(err)
			}
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		return strings.ToUpper(item), nil
	}).Compile(graph.WithSaver(saver))
	if err != nil {
		fail(err)
	}
	_, err = c.Invoke(ctx, "t", func(s *fanState) { s.Items = []string{"a", "b", "c"} })
	fail(fmt.Errorf("the run ended (%v) instead of being killed", err))
}

// Branches that finished before the process died are not run again: the
// restarted run takes their results and runs only the unfinished one.
func TestFinishedBranchesSurviveSIGKILL(t *testing.T) {
	dir := t.TempDir()
	db, calls := filepath.Join(dir, "fan.db"), filepath.Join(dir, "calls")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LOOM_BRANCH_CHILD_DB="+db, "LOOM_BRANCH_CHILD_CALLS="+calls)
	cmd.Stderr = os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child: %v, want killed by SIGKILL", err)
	}
	got, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Fields(string(got)); len(lines) != 3 {
		t.Fatalf("the child called %v, want each of a, b, c once", lines)
	}

	ctx := t.Context()
	saver := sqliteAt(t, db)
	head := must(saver.Get(ctx, "t", ""))(t)
	if head.Meta.Source != checkpoint.SourceBranch || !slices.Equal(head.Next, []string{"fan"}) || len(head.Done) != 2 {
		t.Fatalf("head after the kill: source %s, next %v, %d results; want a branch checkpoint with 2 results, fan next", head.Meta.Source, head.Next, len(head.Done))
	}

	var ran []string
	c := must(fanGraph(func(_ context.Context, item string) (string, error) {
		ran = append(ran, item) // only one branch runs
		return strings.ToUpper(item), nil
	}).Compile(graph.WithSaver(saver)))(t)
	res := must(c.Continue(ctx, "t"))(t)
	if res.Status != graph.StatusDone || !slices.Equal(res.State.Out, []string{"A", "B", "C"}) {
		t.Fatalf("after restart: %s with %v, want done with A B C", res.Status, res.State.Out)
	}
	if !slices.Equal(ran, []string{"c"}) {
		t.Fatalf("after restart the branches of %v ran, want only c's", ran)
	}
	head = must(saver.Get(ctx, "t", ""))(t)
	if head.Done != nil || head.Meta.Source != checkpoint.SourceStep {
		t.Fatalf("the node's step keeps %d branch results (source %s), want none", len(head.Done), head.Meta.Source)
	}
}

// A branch that finished while others asked is not run again when the
// node runs with the answers, nor when a branch asks a second time.
func TestFinishedBranchWaitsForTheQuestions(t *testing.T) {
	ctx := t.Context()
	db := filepath.Join(t.TempDir(), "ask.db")
	calls := map[string]*atomic.Int32{}
	for _, it := range []string{"a", "b", "c", "quiet", "once", "twice"} {
		calls[it] = &atomic.Int32{}
	}
	g := func() *graph.Graph[reviewState] {
		return graph.New[reviewState]("review").
			Node("review", graph.Map(func(s reviewState) []string { return s.Items },
				func(ctx context.Context, item string) (string, error) {
					calls[item].Add(1)
					if item == "quiet" {
						return "quiet:done", nil
					}
					return reviewItem(ctx, item)
				},
				func(s reviewState, rs []string) (reviewState, error) { s.Verdicts = rs; return s, nil })).
			Edge(graph.Start, "review").Edge("review", graph.End)
	}
	c := must(g().Compile(graph.WithSaver(sqliteAt(t, db))))(t)
	res := must(c.Invoke(ctx, "t", func(s *reviewState) { s.Items = []string{"a", "b", "c", "quiet"} }))(t)
	if res.Status != graph.StatusInterrupted || len(res.Interrupts) != 3 {
		t.Fatalf("got %s with %d questions, want 3", res.Status, len(res.Interrupts))
	}
	ids := pendingByBranch(t, res)
	res = must(c.Run(ctx, "t", graph.Input[reviewState]{Answers: map[string]any{
		ids["review[0]"]: verdict{Accept: true}, ids["review[1]"]: verdict{Accept: false}}}))(t)
	if res.Status != graph.StatusInterrupted || len(res.Interrupts) != 1 {
		t.Fatalf("after two answers: %s with %d questions, want one pending", res.Status, len(res.Interrupts))
	}
	// The last answer comes to a new process: a new Compiled on the file.
	c = must(g().Compile(graph.WithSaver(sqliteAt(t, db))))(t)
	res = must(c.Resume(ctx, "t", verdict{Accept: true}))(t)
	if res.Status != graph.StatusDone || !slices.Equal(res.State.Verdicts, []string{"a:true", "b:false", "c:true", "quiet:done"}) {
		t.Fatalf("got %s with %v", res.Status, res.State.Verdicts)
	}
	if n := calls["quiet"].Load(); n != 1 {
		t.Errorf("the branch that finished first ran %d times, want 1", n)
	}
	for _, it := range []string{"a", "b", "c"} {
		if n := calls[it].Load(); n != 2 {
			t.Errorf("branch %s ran %d times, want 2 (asked, then answered)", it, n)
		}
	}

	// A branch whose answer came is not run again when another asks its
	// second question.
	res = must(c.Invoke(ctx, "u", func(s *reviewState) { s.Items = []string{"once", "twice"} }))(t)
	ids = pendingByBranch(t, res)
	res = must(c.Run(ctx, "u", graph.Input[reviewState]{Answers: map[string]any{ids["review[0]"]: verdict{Accept: true}, ids["review[1]"]: verdict{Accept: true}}}))(t)
	if res.Status != graph.StatusInterrupted || len(res.Interrupts) != 1 || res.Interrupts[0].Branch != "review[1]" {
		t.Fatalf("got %s with %+v, want twice's second question", res.Status, res.Interrupts)
	}
	res = must(c.Resume(ctx, "u", verdict{Accept: false}))(t)
	if res.Status != graph.StatusDone || !slices.Equal(res.State.Verdicts, []string{"once:true", "twice:true:false"}) {
		t.Fatalf("got %s with %v", res.Status, res.State.Verdicts)
	}
	if o, tw := calls["once"].Load(), calls["twice"].Load(); o != 2 || tw != 3 {
		t.Errorf("once ran %d times and twice %d; want 2 (asked, answered) and 3 (asked, asked again, answered)", o, tw)
	}
}

// reviewItem is reviewNode's branch: it asks whether to keep item, and
// asks twice for "twice".
func reviewItem(ctx context.Context, item string) (string, error) {
	v, err := graph.Ask[verdict](ctx, map[string]string{"keep": item})
	if err != nil {
		return "", err
	}
	out := fmt.Sprintf("%s:%v", item, v.Accept)
	if item == "twice" {
		again, err := graph.Ask[verdict](ctx, map[string]string{"sure": item})
		if err != nil {
			return "", err
		}
		out += fmt.Sprintf(":%v", again.Accept)
	}
	return out, nil
}

// A Parallel whose branch fails keeps the branches that finished: the
// run continued after the fault runs only the failed branch; the state
// each kept branch returned comes back through JSON.
func TestParallelKeepsFinishedBranches(t *testing.T) {
	ctx := t.Context()
	saver := checkpoint.NewMemory()
	var runs [3]atomic.Int32
	var broken atomic.Bool
	broken.Store(true)
	branch := func(i int) graph.NodeFunc[fanState] {
		return func(ctx context.Context, s fanState) (fanState, error) {
			runs[i].Add(1)
			if i == 2 && broken.Load() {
				if err := waitDone(ctx, saver, "p", 2); err != nil {
					return s, err
				}
				return s, errors.New("the model is down")
			}
			s.Out = []string{fmt.Sprint("branch ", i)}
			return s, nil
		}
	}
	join := func(s fanState, rs []fanState) (fanState, error) {
		for _, r := range rs {
			s.Out = append(s.Out, r.Out...)
		}
		return s, nil
	}
	c := must(graph.New[fanState]("par").
		Node("par", graph.Parallel(join, branch(0), branch(1), branch(2))).
		Edge(graph.Start, "par").Edge("par", graph.End).
		Compile(graph.WithSaver(saver)))(t)
	if _, err := c.Invoke(ctx, "p", nil); err == nil || !strings.Contains(err.Error(), "the model is down") {
		t.Fatalf("first run: %v, want branch 2's error", err)
	}
	broken.Store(false)
	res := must(c.Continue(ctx, "p"))(t)
	if want := []string{"branch 0", "branch 1", "branch 2"}; res.Status != graph.StatusDone || !slices.Equal(res.State.Out, want) {
		t.Fatalf("got %s with %v, want done with %v", res.Status, res.State.Out, want)
	}
	for i, want := range []int32{1, 1, 2} {
		if n := runs[i].Load(); n != want {
			t.Errorf("branch %d ran %d times, want %d", i, n, want)
		}
	}
}
