package graph_test

import (
	"context"
	"encoding/json"
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

type verdict struct {
	Accept bool   `json:"accept"`
	Note   string `json:"note,omitempty"`
}

type reviewState struct {
	Items    []string `json:"items"`
	Verdicts []string `json:"verdicts,omitempty"`
	Path     string   `json:"path,omitempty"`
}

// reviewNode fans out over the items; every branch asks whether to keep
// its item, and the branch of an item named "twice" asks a second time.
// calls counts the branch runs, by item.
func reviewNode(calls map[string]*atomic.Int32) graph.NodeFunc[reviewState] {
	return graph.Map(func(s reviewState) []string { return s.Items },
		func(ctx context.Context, item string) (string, error) {
			if c := calls[item]; c != nil {
				c.Add(1)
			}
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
		},
		func(s reviewState, rs []string) (reviewState, error) { s.Verdicts = rs; return s, nil })
}

// reviewGraph is reviewNode alone.
func reviewGraph(calls map[string]*atomic.Int32) *graph.Graph[reviewState] {
	return graph.New[reviewState]("review").
		Node("review", reviewNode(calls)).
		Edge(graph.Start, "review").
		Edge("review", graph.End)
}

func sqliteAt(t *testing.T, path string) *sqlite.Saver {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// pendingByBranch maps branch names to the ids of res's questions.
func pendingByBranch(t *testing.T, res *graph.Result[reviewState]) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, p := range res.Interrupts {
		if _, dup := m[p.Branch]; dup {
			t.Fatalf("two questions from branch %s", p.Branch)
		}
		m[p.Branch] = p.ID
	}
	return m
}

func TestSeveralQuestions(t *testing.T) {
	ctx := t.Context()
	db := filepath.Join(t.TempDir(), "ask.db")
	calls := map[string]*atomic.Int32{"a": {}, "b": {}, "c": {}}
	c := must(reviewGraph(calls).Compile(graph.WithSaver(sqliteAt(t, db))))(t)

	res := must(c.Invoke(ctx, "t", func(s *reviewState) { s.Items = []string{"a", "b", "c"} }))(t)
	if res.Status != graph.StatusInterrupted || len(res.Interrupts) != 3 {
		t.Fatalf("got status %s with %d questions, want interrupted with 3", res.Status, len(res.Interrupts))
	}
	ids := pendingByBranch(t, res)
	for i, b := range []string{"review[0]", "review[1]", "review[2]"} {
		q := res.Interrupts[i]
		if q.Branch != b || q.Node != "review" || ids[b] == "" || len(q.Schema) == 0 {
			t.Fatalf("question %d: %+v; want one from branch %s of review, with a schema", i, q, b)
		}
	}
	if res.Interrupt == nil || res.Interrupt.ID != res.Interrupts[0].ID {
		t.Fatalf("Interrupt is %+v, want the first of Interrupts", res.Interrupt)
	}

	// One value for three questions says which is missing; so do an
	// answer that does not fit and an id that is not pending. Nothing is
	// written.
	if _, err := c.Resume(ctx, "t", verdict{Accept: true}); !errors.Is(err, graph.ErrWhichInterrupt) {
		t.Fatalf("one value for three questions: got %v, want ErrWhichInterrupt", err)
	}
	_, err := c.Run(ctx, "t", graph.Input[reviewState]{Answers: map[string]any{ids["review[0]"]: "yes"}})
	if !errors.Is(err, graph.ErrInvalidAnswer) || !strings.Contains(err.Error(), ids["review[0]"]) {
		t.Fatalf("a string for a verdict: got %v, want ErrInvalidAnswer naming the question", err)
	}
	_, err = c.Run(ctx, "t", graph.Input[reviewState]{Answers: map[string]any{"nope": verdict{}}})
	if !errors.Is(err, checkpoint.ErrConflict) || !errors.Is(err, graph.ErrNoInterrupt) {
		t.Fatalf("an unknown id: got %v, want ErrConflict and ErrNoInterrupt", err)
	}

	// Two answered: the third stays pending, with its id, and no branch
	// runs again yet.
	res = must(c.Run(ctx, "t", graph.Input[reviewState]{Answers: map[string]any{
		ids["review[0]"]: verdict{Accept: true},
		ids["review[2]"]: verdict{Accept: false},
	}}))(t)
	if res.Status != graph.StatusInterrupted || len(res.Interrupts) != 1 || res.Interrupts[0].ID != ids["review[1]"] {
		t.Fatalf("after two answers: %s with %+v; want review[1]'s question still pending", res.Status, res.Interrupts)
	}
	for item, n := range calls {
		if n.Load() != 1 {
			t.Fatalf("branch %s ran %d times before every question was answered, want 1", item, n.Load())
		}
	}
	// An answered question cannot be answered again.
	_, err = c.Run(ctx, "t", graph.Input[reviewState]{Answers: map[string]any{ids["review[0]"]: verdict{}}})
	if !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("answering a question twice: got %v, want ErrConflict", err)
	}
	if _, err := c.Continue(ctx, "t"); !errors.Is(err, graph.ErrInterrupted) {
		t.Fatalf("continue with a question pending: got %v, want ErrInterrupted", err)
	}

	// The map form of one JSON value answers the last one.
	raw := json.RawMessage(fmt.Sprintf(`{%q: {"accept": true}}`, ids["review[1]"]))
	res = must(c.Resume(ctx, "t", raw))(t)
	if res.Status != graph.StatusDone || !slices.Equal(res.State.Verdicts, []string{"a:true", "b:true", "c:false"}) {
		t.Fatalf("after the last answer: %s with %v; want done with every branch's answer", res.Status, res.State.Verdicts)
	}
	if len(res.Interrupts) != 0 {
		t.Fatalf("done with questions pending: %+v", res.Interrupts)
	}
}

func TestBranchAsksTwice(t *testing.T) {
	ctx := t.Context()
	c := must(reviewGraph(nil).Compile(graph.WithSaver(&checkpoint.Memory{})))(t)
	res := must(c.Invoke(ctx, "t", func(s *reviewState) { s.Items = []string{"once", "twice"} }))(t)
	ids := pendingByBranch(t, res)
	res = must(c.Run(ctx, "t", graph.Input[reviewState]{Answers: map[string]any{ids["review[0]"]: verdict{Accept: true}, ids["review[1]"]: verdict{Accept: true}}}))(t)
	// The node ran again with both answers; the second branch asked its
	// second question, and only that is pending.
	if res.Status != graph.StatusInterrupted || len(res.Interrupts) != 1 || res.Interrupts[0].Branch != "review[1]" {
		t.Fatalf("got %s with %+v, want review[1]'s second question", res.Status, res.Interrupts)
	}
	if got := string(res.Interrupts[0].Payload); got != `{"sure":"twice"}` {
		t.Fatalf("second question %s, want the branch's second", got)
	}
	res = must(c.Resume(ctx, "t", verdict{Accept: false}))(t)
	if res.Status != graph.StatusDone || !slices.Equal(res.State.Verdicts, []string{"once:true", "twice:true:false"}) {
		t.Fatalf("got %s with %v", res.Status, res.State.Verdicts)
	}
}

// TestBranchAnswersBelongToTheirStep: a fan-out that runs again on a
// loop asks its questions again; the answers of its first step are not
// reused.
func TestBranchAnswersBelongToTheirStep(t *testing.T) {
	ctx := t.Context()
	g := graph.New[reviewState]("loop").
		Node("review", reviewNode(nil)).
		Node("again", func(_ context.Context, s reviewState) (reviewState, error) { s.Path = "again"; return s, nil }).
		Edge(graph.Start, "review").
		Route("review", func(s reviewState) string {
			if s.Path == "" {
				return "again"
			}
			return graph.End
		}, "again", graph.End).
		Edge("again", "review").Loop("again", "review", 1, graph.End)
	c := must(g.Compile(graph.WithSaver(&checkpoint.Memory{})))(t)
	res := must(c.Invoke(ctx, "t", func(s *reviewState) { s.Items = []string{"a", "b"} }))(t)
	ids := pendingByBranch(t, res)
	res = must(c.Run(ctx, "t", graph.Input[reviewState]{Answers: map[string]any{ids["review[0]"]: verdict{Accept: true}, ids["review[1]"]: verdict{Accept: true}}}))(t)
	if res.Status != graph.StatusInterrupted || len(res.Interrupts) != 2 || res.State.Path != "again" {
		t.Fatalf("second visit: %s with %d questions (state %+v); want both asked again", res.Status, len(res.Interrupts), res.State)
	}
	for _, q := range res.Interrupts {
		if q.ID == ids["review[0]"] || q.ID == ids["review[1]"] {
			t.Fatalf("second visit reuses question %s", q.ID)
		}
	}
	ids = pendingByBranch(t, res)
	res = must(c.Run(ctx, "t", graph.Input[reviewState]{Answers: map[string]any{ids["review[0]"]: verdict{Accept: false}, ids["review[1]"]: verdict{Accept: false}}}))(t)
	if res.Status != graph.StatusDone || !slices.Equal(res.State.Verdicts, []string{"a:false", "b:false"}) {
		t.Fatalf("got %s with %v, want the second visit's answers", res.Status, res.State.Verdicts)
	}
}

// askChild is a child process for TestSeveralQuestionsSurviveSIGKILL: it
// starts the review or answers the questions LOOM_ASK_ANSWERS names,
// prints the result and the number of questions it asked, and kills
// itself with SIGKILL, closing nothing.
func askChild(db string) {
	ctx := context.Background()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "ask child:", err)
		os.Exit(1)
	}
	saver, err := sqlite.Open(ctx, db)
	if err != nil {
		fail(err)
	}
	c, err := reviewGraph(nil).Compile(graph.WithSaver(saver))
	if err != nil {
		fail(err)
	}
	in := graph.Input[reviewState]{Update: func(s *reviewState) { s.Items = []string{"a", "b", "c"} }}
	if a := os.Getenv("LOOM_ASK_ANSWERS"); a != "" {
		in = graph.Input[reviewState]{}
		if err := json.Unmarshal([]byte(a), &in.Answers); err != nil {
			fail(err)
		}
	}
	asked := 0
	for e, err := range c.Stream(ctx, "k", in) {
		if err != nil {
			fail(err)
		}
		switch e.Kind {
		case graph.KindInterrupt:
			asked++
		case graph.KindRunEnd:
			b, _ := json.Marshal(map[string]any{"asked": asked, "result": e.Data})
			fmt.Println(string(b))
		}
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

func TestSeveralQuestionsSurviveSIGKILL(t *testing.T) {
	db := filepath.Join(t.TempDir(), "ask.db")
	child := func(answers map[string]any) (asked int, res graph.Result[reviewState]) {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "LOOM_ASK_CHILD_DB="+db)
		if answers != nil {
			b, _ := json.Marshal(answers)
			cmd.Env = append(cmd.Env, "LOOM_ASK_ANSWERS="+string(b))
		}
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("child: %v, want killed by SIGKILL (output %s)", err, out)
		}
		var got struct {
			Asked  int                       `json:"asked"`
			Result graph.Result[reviewState] `json:"result"`
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("child output %q: %v", out, err)
		}
		return got.Asked, got.Result
	}
	asked, res := child(nil)
	if asked != 3 || len(res.Interrupts) != 3 {
		t.Fatalf("first child asked %d, %d pending; want 3", asked, len(res.Interrupts))
	}
	ids := pendingByBranch(t, &res)
	asked, res = child(map[string]any{ids["review[0]"]: verdict{Accept: true}, ids["review[1]"]: verdict{Accept: true, Note: "ok"}})
	if asked != 0 || res.Status != graph.StatusInterrupted || len(res.Interrupts) != 1 || res.Interrupts[0].ID != ids["review[2]"] {
		t.Fatalf("second child asked %d, left %+v; want nothing asked and review[2]'s question pending", asked, res.Interrupts)
	}

	// This process, on the file the killed children left.
	ctx := t.Context()
	c := must(reviewGraph(nil).Compile(graph.WithSaver(sqliteAt(t, db))))(t)
	asked = 0
	var end *graph.Result[reviewState]
	for e, err := range c.Stream(ctx, "k", graph.Input[reviewState]{Answers: map[string]any{ids["review[2]"]: verdict{Accept: false}}}) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Kind == graph.KindInterrupt {
			asked++
		}
		if e.Kind == graph.KindRunEnd {
			end = e.Data.(*graph.Result[reviewState])
		}
	}
	if asked != 0 || end == nil || end.Status != graph.StatusDone || !slices.Equal(end.State.Verdicts, []string{"a:true", "b:true", "c:false"}) {
		t.Fatalf("last answer: asked %d, result %+v; want done with every answer and nothing asked again", asked, end)
	}
}

func TestQuestionExpires(t *testing.T) {
	ctx := t.Context()
	deadline := time.Now().Add(time.Hour)
	approve := func(ctx context.Context, s reviewState) (reviewState, error) {
		v, err := graph.Ask[verdict](ctx, "publish?", graph.Expires(deadline, verdict{Note: "expired"}))
		if err != nil {
			return s, err
		}
		if v.Accept {
			s.Path = "publish"
		} else {
			s.Path = "hold: " + v.Note
		}
		return s, nil
	}
	db := filepath.Join(t.TempDir(), "expire.db")
	compile := func() *graph.Compiled[reviewState] {
		g := graph.New[reviewState]("approve").Node("approve", approve).Edge(graph.Start, "approve").Edge("approve", graph.End)
		return must(g.Compile(graph.WithSaver(sqliteAt(t, db))))(t)
	}
	c := compile()
	res := must(c.Invoke(ctx, "t", nil))(t)
	if res.Status != graph.StatusInterrupted || !res.Interrupt.Deadline.Equal(deadline) || string(res.Interrupt.Default) != `{"accept":false,"note":"expired"}` {
		t.Fatalf("got %s with %+v; want a question with the deadline and default", res.Status, res.Interrupt)
	}
	// Before its deadline a question holds the thread.
	if _, err := c.Continue(ctx, "t"); !errors.Is(err, graph.ErrInterrupted) {
		t.Fatalf("continue before the deadline: %v, want ErrInterrupted", err)
	}

	// A thread whose question's deadline is past, continued by another
	// saver on the same file (as after a restart), takes the default
	// answer and says so.
	deadline = time.Now().Add(-time.Second)
	res = must(c.Invoke(ctx, "late", nil))(t)
	if res.Status != graph.StatusInterrupted {
		t.Fatalf("got %s, want interrupted", res.Status)
	}
	c = compile()
	var expired []*checkpoint.Interrupt
	var end *graph.Result[reviewState]
	for e, err := range c.Stream(ctx, "late", graph.Input[reviewState]{}) {
		if err != nil {
			t.Fatal(err)
		}
		switch e.Kind {
		case graph.KindExpired:
			expired = append(expired, e.Data.(*checkpoint.Interrupt))
		case graph.KindRunEnd:
			end = e.Data.(*graph.Result[reviewState])
		}
	}
	if len(expired) != 1 || expired[0].ID != res.Interrupt.ID || end == nil || end.State.Path != "hold: expired" {
		t.Fatalf("expired events %+v, end %+v; want the question's expiry and the default path", expired, end)
	}
	// An answer that came too late finds nothing pending.
	if _, err := c.Run(ctx, "late", graph.Input[reviewState]{Resume: verdict{Accept: true}, Interrupt: res.Interrupt.ID}); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("a late answer: %v, want ErrConflict", err)
	}

	// A default that does not fit the question fails the node.
	bad := graph.New[reviewState]("bad").Node("n", func(ctx context.Context, s reviewState) (reviewState, error) {
		_, err := graph.Ask[verdict](ctx, "?", graph.Expires(time.Now(), "no"))
		return s, err
	}).Edge(graph.Start, "n").Edge("n", graph.End)
	if _, err := must(bad.Compile(graph.WithSaver(&checkpoint.Memory{})))(t).Invoke(ctx, "t", nil); err == nil || !strings.Contains(err.Error(), "default answer") {
		t.Fatalf("a default of the wrong type: %v, want an error about the default answer", err)
	}
}

func TestGoto(t *testing.T) {
	ctx := t.Context()
	step := func(name string) graph.NodeFunc[reviewState] {
		return func(_ context.Context, s reviewState) (reviewState, error) {
			s.Verdicts = append(s.Verdicts, name)
			return s, nil
		}
	}
	g := graph.New[reviewState]("chain").Node("a", step("a")).Node("b", step("b")).Node("c", step("c")).
		Edge(graph.Start, "a").Edge("a", "b").Edge("b", "c").Edge("c", graph.End)
	c := must(g.Compile(graph.WithSaver(&checkpoint.Memory{})))(t)
	res := must(c.Run(ctx, "t", graph.Input[reviewState]{Goto: "b", Update: func(s *reviewState) { s.Path = "jumped" }}))(t)
	if !slices.Equal(res.State.Verdicts, []string{"b", "c"}) || res.State.Path != "jumped" {
		t.Fatalf("goto b: %+v, want b and c run on the updated state", res.State)
	}
	if _, err := c.Run(ctx, "t", graph.Input[reviewState]{Goto: "z", Update: func(*reviewState) {}}); err == nil || !strings.Contains(err.Error(), `"z"`) {
		t.Fatalf("goto an unknown node: %v, want an error naming it", err)
	}
}
