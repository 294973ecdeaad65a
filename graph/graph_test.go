package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
)

type counter struct {
	N    int      `json:"n"`
	Log  []string `json:"log"`
	Done bool     `json:"done"`
}

func inc(name string) graph.NodeFunc[counter] {
	return func(_ context.Context, s counter) (counter, error) {
		s.N++
		s.Log = append(s.Log, name)
		return s, nil
	}
}

// must takes a call's value and error and returns a check that fails the
// test or benchmark at the caller's line on an unexpected error:
// must(g.Compile())(t). It is split in two because Go passes a
// multi-value call only as the whole argument list.
func must[T any](v T, err error) func(testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func TestCompileErrors(t *testing.T) {
	noop := func(_ context.Context, s counter) (counter, error) { return s, nil }
	tests := []struct {
		name  string
		build func(g *graph.Graph[counter])
		want  []string
	}{
		{"duplicate name", func(g *graph.Graph[counter]) {
			g.Node("a", noop).Node("a", noop).Edge(graph.Start, "a").Edge("a", graph.End)
		}, []string{`node "a": duplicate name`}},
		{"unknown target", func(g *graph.Graph[counter]) {
			g.Node("a", noop).Edge(graph.Start, "a").Route("a", func(counter) string { return "b" }, "b", graph.End)
		}, []string{`edge a → b: unknown target "b"`}},
		{"unreachable", func(g *graph.Graph[counter]) {
			g.Node("a", noop).Node("orphan", noop).Edge(graph.Start, "a").Edge("a", graph.End).Edge("orphan", graph.End)
		}, []string{"unreachable from Start: orphan"}},
		{"cannot reach end", func(g *graph.Graph[counter]) {
			g.Node("a", noop).Node("b", noop).Node("c", noop).
				Edge(graph.Start, "a").Route("a", func(counter) string { return "b" }, "b", "c").
				Edge("b", graph.End).Edge("c", "c").Loop("c", "c", 3, "c")
		}, []string{"cannot reach End: c"}},
		{"loop without bound", func(g *graph.Graph[counter]) {
			g.Node("a", noop).Node("b", noop).Edge(graph.Start, "a").Edge("a", "b").
				Route("b", func(counter) string { return "a" }, "a", graph.End)
		}, []string{"loop without a declared bound: a → b → a"}},
		{"no way out", func(g *graph.Graph[counter]) {
			g.Node("a", noop).Edge(graph.Start, "a")
		}, []string{`node "a" has no Edge or Route out of it`}},
		{"no start", func(g *graph.Graph[counter]) {
			g.Node("a", noop).Edge("a", graph.End)
		}, []string{"no edge from Start"}},
		{"two ways out", func(g *graph.Graph[counter]) {
			g.Node("a", noop).Edge(graph.Start, "a").Edge("a", graph.End).Route("a", func(counter) string { return graph.End }, graph.End)
		}, []string{`node "a": more than one Edge or Route out of it`}},
		{"loop on a missing edge", func(g *graph.Graph[counter]) {
			g.Node("a", noop).Edge(graph.Start, "a").Edge("a", graph.End).Loop("a", "a", 2, graph.End)
		}, []string{"loop a → a: no such edge"}},
		{"loop with unknown exit", func(g *graph.Graph[counter]) {
			g.Node("a", noop).Edge(graph.Start, "a").Route("a", func(counter) string { return graph.End }, "a", graph.End).Loop("a", "a", 2, "nowhere")
		}, []string{`loop a → a: unknown exit "nowhere"`}},
		{"reserved name", func(g *graph.Graph[counter]) {
			g.Node(graph.End, noop).Edge(graph.Start, graph.End)
		}, []string{`node "__end__": reserved or empty name`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := graph.New[counter]("g")
			tt.build(g)
			_, err := g.Compile()
			if err == nil {
				t.Fatal("Compile succeeded, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

func chain(n int) *graph.Graph[counter] {
	g := graph.New[counter]("chain")
	prev := graph.Start
	for i := range n {
		name := fmt.Sprintf("n%d", i)
		g.Node(name, inc(name)).Edge(prev, name)
		prev = name
	}
	return g.Edge(prev, graph.End)
}

func TestChainCheckpointsEveryStep(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory()
	c := must(chain(5).Compile(graph.WithSaver(saver)))(t)
	res := must(c.Invoke(ctx, "t1", func(s *counter) { s.N = 10 }))(t)
	if res.Status != graph.StatusDone || res.State.N != 15 || res.Steps != 5 {
		t.Fatalf("result = %+v, want done with N=15 after 5 steps", res)
	}
	hist := must(saver.List(ctx, "t1", 0))(t)
	if len(hist) != 6 { // input + 5 steps
		t.Fatalf("history has %d checkpoints, want 6", len(hist))
	}
	if hist[5].Meta.Source != checkpoint.SourceInput || hist[5].Next[0] != "n0" {
		t.Errorf("first checkpoint = %+v, want the input with next n0", hist[5])
	}
	for i, cp := range hist[:5] {
		if cp.Meta.Source != checkpoint.SourceStep || cp.Meta.Node != fmt.Sprintf("n%d", 4-i) || cp.Step != 5-i {
			t.Errorf("checkpoint %d = source %s node %s step %d", i, cp.Meta.Source, cp.Meta.Node, cp.Step)
		}
	}
	if len(hist[0].Next) != 0 || res.Checkpoint != hist[0].ID {
		t.Errorf("head next = %v (want none), result checkpoint %s, head %s", hist[0].Next, res.Checkpoint, hist[0].ID)
	}
	// A second run on the thread starts from its latest state.
	res = must(c.Invoke(ctx, "t1", nil))(t)
	if res.State.N != 20 {
		t.Errorf("second run N = %d, want 20", res.State.N)
	}
}

// seed000 is the report designer's loop: validate → explain → correct,
// back to validate at most 5 times, then finalize.
func seed000(failures int, extra ...graph.CompileOption) *graph.Graph[counter] {
	g := graph.New[counter]("report")
	g.Node("generate", inc("generate")).
		Node("validate", inc("validate")).
		Node("explain", inc("explain")).
		Node("correct", func(_ context.Context, s counter) (counter, error) {
			s.Log = append(s.Log, "correct")
			return s, nil
		}).
		Node("finalize", inc("finalize")).
		Edge(graph.Start, "generate").
		Edge("generate", "validate").
		Route("validate", func(s counter) string {
			if strings.Count(strings.Join(s.Log, ","), "validate") > failures {
				return "finalize"
			}
			return "explain"
		}, "finalize", "explain").
		Edge("explain", "correct").
		Edge("correct", "validate").
		Loop("correct", "validate", 5, "finalize").
		Edge("finalize", graph.End)
	return g
}

func TestBoundedLoop(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		failures  int
		validates int
	}{{0, 1}, {2, 3}, {5, 6}, {50, 6}} {
		c := must(seed000(tt.failures).Compile(graph.WithSaver(checkpoint.NewMemory())))(t)
		res := must(c.Invoke(ctx, "t", nil))(t)
		got := strings.Count(strings.Join(res.State.Log, ","), "validate")
		if got != tt.validates || res.State.Log[len(res.State.Log)-1] != "finalize" {
			t.Errorf("failures %d: log %v, want %d validates then finalize", tt.failures, res.State.Log, tt.validates)
		}
	}
}

func TestLoopCounterSurvivesResume(t *testing.T) {
	// The loop bound counts across an interrupt: correct asks a person
	// each time, and the loop still ends after 2 rounds.
	ctx := context.Background()
	saver := checkpoint.NewMemory()
	g := graph.New[counter]("asks")
	g.Node("work", inc("work")).
		Node("ask", func(ctx context.Context, s counter) (counter, error) {
			if _, err := graph.Ask[bool](ctx, "again?"); err != nil {
				return s, err
			}
			return s, nil
		}).
		Node("out", inc("out")).
		Edge(graph.Start, "work").Edge("work", "ask").Edge("ask", "work").Loop("ask", "work", 2, "out").Edge("out", graph.End)
	c := must(g.Compile(graph.WithSaver(saver)))(t)
	res := must(c.Invoke(ctx, "t", nil))(t)
	for res.Status == graph.StatusInterrupted {
		// A new compiled graph stands for a new process.
		c2 := must(g.Compile(graph.WithSaver(saver)))(t)
		res = must(c2.Resume(ctx, "t", true))(t)
	}
	if want := []string{"work", "work", "work", "out"}; !slices.Equal(res.State.Log, want) {
		t.Errorf("log = %v, want %v", res.State.Log, want)
	}
}

type approval struct {
	Accept bool   `json:"accept"`
	Reason string `json:"reason"`
}

type order struct {
	Item     string   `json:"item"`
	Charged  bool     `json:"charged"`
	Shipped  bool     `json:"shipped"`
	Rejected string   `json:"rejected,omitempty"`
	Keys     []string `json:"keys"`
}

// orderGraph charges, then asks for approval to ship. charge counts real
// charges; the node records the charge in state before asking, so a resume
// does not charge twice.
func orderGraph(charges *atomic.Int32) *graph.Graph[order] {
	g := graph.New[order]("order")
	g.Node("confirm", func(ctx context.Context, s order) (order, error) {
		s.Keys = append(s.Keys, graph.StepKey(ctx))
		if !s.Charged {
			charges.Add(1)
			s.Charged = true
		}
		a, err := graph.Ask[approval](ctx, map[string]string{"question": "ship " + s.Item + "?"})
		if err != nil {
			return s, err
		}
		if !a.Accept {
			s.Rejected = a.Reason
			return s, nil
		}
		s.Shipped = true
		return s, nil
	}).Edge(graph.Start, "confirm").Edge("confirm", graph.End)
	return g
}

func TestInterruptResume(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory()
	var charges atomic.Int32
	c := must(orderGraph(&charges).Compile(graph.WithSaver(saver)))(t)

	res := must(c.Invoke(ctx, "o1", func(s *order) { s.Item = "book" }))(t)
	if res.Status != graph.StatusInterrupted || res.Interrupt == nil || res.Interrupt.Node != "confirm" {
		t.Fatalf("result = %+v, want interrupted at confirm", res)
	}
	if string(res.Interrupt.Payload) != `{"question":"ship book?"}` {
		t.Errorf("payload = %s", res.Interrupt.Payload)
	}
	if !res.State.Charged {
		t.Error("state returned with the interrupt was not kept")
	}
	if _, err := c.Continue(ctx, "o1"); !errors.Is(err, graph.ErrInterrupted) {
		t.Errorf("Continue on an interrupted thread: err = %v, want ErrInterrupted", err)
	}

	// Resume in "another process": a freshly compiled graph on the same saver.
	c2 := must(orderGraph(&charges).Compile(graph.WithSaver(saver)))(t)
	res = must(c2.Resume(ctx, "o1", approval{Accept: true}))(t)
	if res.Status != graph.StatusDone || !res.State.Shipped {
		t.Fatalf("after resume: %+v, want done and shipped", res)
	}
	if n := charges.Load(); n != 1 {
		t.Errorf("charged %d times, want once", n)
	}
	if len(res.State.Keys) != 2 || res.State.Keys[0] != res.State.Keys[1] || res.State.Keys[0] != "o1/1/confirm" {
		t.Errorf("step keys = %v, want the same key o1/1/confirm twice", res.State.Keys)
	}
	if _, err := c2.Resume(ctx, "o1", approval{}); !errors.Is(err, graph.ErrNoInterrupt) {
		t.Errorf("resume with nothing pending: err = %v, want ErrNoInterrupt", err)
	}

	// Rejection is a value.
	if res = must(c.Invoke(ctx, "o2", func(s *order) { s.Item = "lamp" }))(t); res.Status != graph.StatusInterrupted {
		t.Fatalf("o2: status %s, want interrupted at the approval", res.Status)
	}
	res = must(c.Resume(ctx, "o2", approval{Accept: false, Reason: "too dear"}))(t)
	if res.Status != graph.StatusDone || res.State.Shipped || res.State.Rejected != "too dear" {
		t.Errorf("after reject: %+v", res.State)
	}
}

func TestSeveralQuestionsInOneNode(t *testing.T) {
	ctx := context.Background()
	type form struct {
		Name, City string
		Asked      int
	}
	g := graph.New[form]("form")
	g.Node("fill", func(ctx context.Context, s form) (form, error) {
		s.Asked++
		name, err := graph.Ask[string](ctx, "name?")
		if err != nil {
			return s, err
		}
		city, err := graph.Ask[string](ctx, "city?")
		if err != nil {
			return s, err
		}
		s.Name, s.City = name, city
		return s, nil
	}).Edge(graph.Start, "fill").Edge("fill", graph.End)
	c := must(g.Compile(graph.WithSaver(checkpoint.NewMemory())))(t)
	res := must(c.Invoke(ctx, "f", nil))(t)
	if string(res.Interrupt.Payload) != `"name?"` {
		t.Fatalf("first question = %s", res.Interrupt.Payload)
	}
	res = must(c.Resume(ctx, "f", "Ada"))(t)
	if res.Status != graph.StatusInterrupted || string(res.Interrupt.Payload) != `"city?"` {
		t.Fatalf("second question: %+v", res)
	}
	res = must(c.Resume(ctx, "f", "London"))(t)
	if res.State.Name != "Ada" || res.State.City != "London" || res.State.Asked != 3 {
		t.Errorf("state = %+v, want Ada, London, asked 3 (node ran three times)", res.State)
	}
}

// gatedSaver holds every Get until n of them have arrived, so that n
// resumes all read the same head before any of them writes.
type gatedSaver struct {
	checkpoint.Saver
	gate sync.WaitGroup
}

func (g *gatedSaver) Get(ctx context.Context, thread, id string) (*checkpoint.Checkpoint, error) {
	cp, err := g.Saver.Get(ctx, thread, id)
	g.gate.Done()
	g.gate.Wait()
	return cp, err
}

func TestConcurrentResumeOneWins(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory()
	var charges atomic.Int32
	must(must(orderGraph(&charges).Compile(graph.WithSaver(saver)))(t).Invoke(ctx, "race", func(s *order) { s.Item = "x" }))(t)
	gated := &gatedSaver{Saver: saver}
	gated.gate.Add(50)
	c := must(orderGraph(&charges).Compile(graph.WithSaver(gated)))(t)
	var wins, conflicts atomic.Int32
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			_, err := c.Resume(ctx, "race", approval{Accept: true})
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, checkpoint.ErrConflict):
				conflicts.Add(1)
			default:
				t.Errorf("unexpected error: %v", err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 || conflicts.Load() != 49 {
		t.Errorf("wins %d, conflicts %d; want 1 and 49", wins.Load(), conflicts.Load())
	}
	hist := must(saver.List(ctx, "race", 0))(t)
	if len(hist) != 4 { // input, interrupt, resume, step
		t.Errorf("history has %d checkpoints, want 4", len(hist))
	}
}

func TestResumeNamingAnAnsweredInterrupt(t *testing.T) {
	ctx := context.Background()
	var charges atomic.Int32
	c := must(orderGraph(&charges).Compile(graph.WithSaver(checkpoint.NewMemory())))(t)
	res := must(c.Invoke(ctx, "t", func(s *order) { s.Item = "x" }))(t)
	id := res.Interrupt.ID
	must(c.Run(ctx, "t", graph.Input[order]{Resume: approval{Accept: true}, Interrupt: id}))(t)
	_, err := c.Run(ctx, "t", graph.Input[order]{Resume: approval{Accept: true}, Interrupt: id})
	if !errors.Is(err, checkpoint.ErrConflict) || !strings.Contains(err.Error(), "interrupt "+id+" is no longer pending") {
		t.Errorf("second answer: err = %v, want a conflict naming the interrupt", err)
	}
}

func TestFanOut(t *testing.T) {
	ctx := context.Background()
	type doc struct {
		Bands []string `json:"bands"`
		Out   []string `json:"out"`
	}
	refine := graph.Map(func(s doc) []string { return s.Bands },
		func(ctx context.Context, band string) (string, error) {
			time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
			graph.Emit(ctx, "status", "refined "+band)
			return strings.ToUpper(band), nil
		},
		func(s doc, rs []string) (doc, error) { s.Out = rs; return s, nil })
	g := graph.New[doc]("fan").Node("refine", refine).Edge(graph.Start, "refine").Edge("refine", graph.End)
	c := must(g.Compile())(t)
	bands := []string{"title", "header", "detail", "footer", "summary"}
	for range 20 {
		var statuses []string
		for e, err := range c.Stream(ctx, "t", graph.Input[doc]{Update: func(s *doc) { s.Bands = bands }}) {
			if err != nil {
				t.Fatal(err)
			}
			if e.Kind == "status" {
				statuses = append(statuses, e.Node)
			}
			if e.Kind == graph.KindRunEnd {
				res := e.Data.(*graph.Result[doc])
				if want := []string{"TITLE", "HEADER", "DETAIL", "FOOTER", "SUMMARY"}; !slices.Equal(res.State.Out, want) {
					t.Fatalf("merged %v, want %v", res.State.Out, want)
				}
			}
		}
		slices.Sort(statuses)
		if want := []string{"refine[0]", "refine[1]", "refine[2]", "refine[3]", "refine[4]"}; !slices.Equal(statuses, want) {
			t.Fatalf("branch events from %v, want %v", statuses, want)
		}
	}
}

func TestFanOutErrorCancelsSiblings(t *testing.T) {
	var cancelled atomic.Int32
	boom := errors.New("boom")
	node := graph.Parallel(func(s counter, rs []counter) (counter, error) { return s, nil },
		func(ctx context.Context, s counter) (counter, error) {
			select {
			case <-ctx.Done():
				cancelled.Add(1)
				return s, ctx.Err()
			case <-time.After(10 * time.Second):
				return s, nil
			}
		},
		func(ctx context.Context, s counter) (counter, error) { return s, boom },
		func(ctx context.Context, s counter) (counter, error) {
			<-ctx.Done()
			cancelled.Add(1)
			return s, ctx.Err()
		})
	c := must(graph.New[counter]("p").Node("p", node).Edge(graph.Start, "p").Edge("p", graph.End).Compile())(t)
	_, err := c.Invoke(context.Background(), "t", nil)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "node p: branch 1: boom") {
		t.Errorf("err = %v, want branch 1's boom", err)
	}
	if cancelled.Load() != 2 {
		t.Errorf("%d siblings saw cancellation, want 2", cancelled.Load())
	}
}

func TestSubgraph(t *testing.T) {
	ctx := context.Background()
	type inner struct {
		X      int
		Answer string
	}
	ig := graph.New[inner]("inner").
		Node("double", func(_ context.Context, s inner) (inner, error) { s.X *= 2; return s, nil }).
		Node("ask", func(ctx context.Context, s inner) (inner, error) {
			a, err := graph.Ask[string](ctx, "ok?")
			s.Answer = a
			return s, err
		}).
		Edge(graph.Start, "double").Edge("double", "ask").Edge("ask", graph.End)
	ic := must(ig.Compile())(t)
	outer := graph.New[counter]("outer").
		Node("sub", graph.Subgraph(ic,
			func(s counter) inner { return inner{X: s.N} },
			func(s counter, i inner) counter { s.N = i.X; s.Log = append(s.Log, i.Answer); return s })).
		Edge(graph.Start, "sub").Edge("sub", graph.End)
	c := must(outer.Compile(graph.WithSaver(checkpoint.NewMemory())))(t)
	var nodes []string
	for e, err := range c.Stream(ctx, "t", graph.Input[counter]{Update: func(s *counter) { s.N = 21 }}) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Kind == graph.KindNodeStart {
			nodes = append(nodes, e.Node)
		}
		if e.Kind == graph.KindInterrupt && e.Node != "sub" {
			t.Errorf("interrupt from %q, want the outer node sub", e.Node)
		}
	}
	if want := []string{"sub", "sub/double", "sub/ask"}; !slices.Equal(nodes, want) {
		t.Errorf("node starts %v, want %v", nodes, want)
	}
	res := must(c.Resume(ctx, "t", "yes"))(t)
	if res.State.N != 42 || !slices.Equal(res.State.Log, []string{"yes"}) {
		t.Errorf("state = %+v, want N=42 and the answer", res.State)
	}
}

func TestStepLimitThenContinue(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory()
	c := must(chain(10).Compile(graph.WithSaver(saver), graph.WithStepLimit(4)))(t)
	_, err := c.Invoke(ctx, "t", nil)
	if !errors.Is(err, graph.ErrStepLimit) {
		t.Fatalf("err = %v, want ErrStepLimit", err)
	}
	var res *graph.Result[counter]
	for range 3 {
		if res, err = c.Continue(ctx, "t"); err == nil {
			break
		}
	}
	if err != nil || res.State.N != 10 {
		t.Fatalf("after continuing: %+v, %v; want N=10", res, err)
	}
}

func TestCancelStopsAtStepBoundary(t *testing.T) {
	saver := checkpoint.NewMemory()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := chain(6)
	// Node n2 cancels the run while it works, and still finishes its step.
	g2 := graph.New[counter]("c")
	for i := range 6 {
		name := fmt.Sprintf("n%d", i)
		fn := inc(name)
		if i == 2 {
			fn = func(c context.Context, s counter) (counter, error) { cancel(); return inc(name)(c, s) }
		}
		g2.Node(name, fn)
		if i == 0 {
			g2.Edge(graph.Start, name)
		} else {
			g2.Edge(fmt.Sprintf("n%d", i-1), name)
		}
	}
	g2.Edge("n5", graph.End)
	c := must(g2.Compile(graph.WithSaver(saver)))(t)
	_, err := c.Invoke(ctx, "t", nil)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "stopped before n3") {
		t.Fatalf("err = %v, want cancelled before n3", err)
	}
	head := must(saver.Get(context.Background(), "t", ""))(t)
	if head.Meta.Node != "n2" || head.Next[0] != "n3" {
		t.Fatalf("head after n%s, next %v; want n2's step checkpointed, next n3", head.Meta.Node, head.Next)
	}
	want := must(must(g.Compile())(t).Invoke(context.Background(), "x", nil))(t)
	res := must(c.Continue(context.Background(), "t"))(t)
	if !slices.Equal(res.State.Log, want.State.Log) {
		t.Errorf("log %v, want %v", res.State.Log, want.State.Log)
	}
}

func TestRetryAndTimeout(t *testing.T) {
	ctx := context.Background()
	var tries atomic.Int32
	flaky := func(_ context.Context, s counter) (counter, error) {
		if tries.Add(1) < 3 {
			return s, errors.New("flaky")
		}
		s.N++
		return s, nil
	}
	c := must(graph.New[counter]("r").Node("f", flaky, graph.Retry(graph.RetryPolicy{Attempts: 3, Backoff: time.Millisecond})).
		Edge(graph.Start, "f").Edge("f", graph.End).Compile())(t)
	res, err := c.Invoke(ctx, "t", nil)
	if err != nil || res.State.N != 1 || tries.Load() != 3 {
		t.Errorf("retry: %v, N=%v, tries %d; want success on try 3", err, res, tries.Load())
	}

	permanent := errors.New("permanent")
	tries.Store(0)
	c = must(graph.New[counter]("r").Node("f", func(_ context.Context, s counter) (counter, error) {
		tries.Add(1)
		return s, permanent
	}, graph.Retry(graph.RetryPolicy{Attempts: 5, If: func(err error) bool { return !errors.Is(err, permanent) }})).
		Edge(graph.Start, "f").Edge("f", graph.End).Compile())(t)
	if _, err := c.Invoke(ctx, "t", nil); !errors.Is(err, permanent) || tries.Load() != 1 {
		t.Errorf("non-retryable: err %v after %d tries, want 1 try", err, tries.Load())
	}

	c = must(graph.New[counter]("t").Node("slow", func(ctx context.Context, s counter) (counter, error) {
		<-ctx.Done()
		return s, ctx.Err()
	}, graph.Timeout(5*time.Millisecond)).Edge(graph.Start, "slow").Edge("slow", graph.End).Compile())(t)
	_, err = c.Invoke(ctx, "t", nil)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "node slow: timed out after 5ms") {
		t.Errorf("timeout err = %v", err)
	}
}

func TestNodeErrorsAreClear(t *testing.T) {
	ctx := context.Background()
	c := must(graph.New[counter]("p").Node("bad", func(context.Context, counter) (counter, error) {
		panic("kaboom")
	}).Edge(graph.Start, "bad").Edge("bad", graph.End).Compile())(t)
	if _, err := c.Invoke(ctx, "t", nil); err == nil || !strings.Contains(err.Error(), "node bad: panic: kaboom") {
		t.Errorf("panic err = %v", err)
	}
	c = must(graph.New[counter]("r").Node("a", inc("a")).Edge(graph.Start, "a").
		Route("a", func(counter) string { return "elsewhere" }, graph.End).Compile())(t)
	if _, err := c.Invoke(ctx, "t", nil); err == nil || !strings.Contains(err.Error(), `route from a returned "elsewhere", which is not among its declared targets`) {
		t.Errorf("route err = %v", err)
	}
	c = must(chain(1).Compile())(t)
	if _, err := c.Resume(ctx, "t", 1); !errors.Is(err, graph.ErrNoSaver) {
		t.Errorf("resume without saver: %v", err)
	}
}

func TestEvents(t *testing.T) {
	ctx := context.Background()
	g := graph.New[counter]("ev").
		Node("a", func(ctx context.Context, s counter) (counter, error) {
			graph.Emit(ctx, graph.KindToken, "hello")
			s.N++
			return s, nil
		}).
		Node("b", func(ctx context.Context, s counter) (counter, error) {
			_, err := graph.Ask[bool](ctx, "ok?")
			return s, err
		}).
		Edge(graph.Start, "a").Edge("a", "b").Edge("b", graph.End)
	c := must(g.Compile(graph.WithSaver(checkpoint.NewMemory())))(t)
	var got []string
	var run string
	for e, err := range c.Stream(ctx, "th", graph.Input[counter]{Update: func(*counter) {}}) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Thread != "th" || e.Run == "" || (run != "" && e.Run != run) {
			t.Errorf("event %+v: wrong thread or run", e)
		}
		run = e.Run
		got = append(got, fmt.Sprintf("%s:%s:%d", e.Kind, e.Node, e.Step))
		switch e.Kind {
		case graph.KindState:
			if e.Data.(counter).N != 1 || e.Checkpoint == "" {
				t.Errorf("state event %+v", e)
			}
		case graph.KindToken:
			if e.Data.(string) != "hello" {
				t.Errorf("token %v", e.Data)
			}
		case graph.KindInterrupt:
			if string(e.Data.(*checkpoint.Interrupt).Payload) != `"ok?"` {
				t.Errorf("interrupt %v", e.Data)
			}
		}
	}
	want := []string{"run_start::0", "node_start:a:1", "token:a:1", "node_end:a:1", "state:a:1",
		"node_start:b:2", "interrupt:b:1", "run_end::1"}
	if !slices.Equal(got, want) {
		t.Errorf("events\n got %v\nwant %v", got, want)
	}
}

func TestStreamErrorIsLastEvent(t *testing.T) {
	boom := errors.New("boom")
	c := must(graph.New[counter]("e").Node("a", func(context.Context, counter) (counter, error) { return counter{}, boom }).
		Edge(graph.Start, "a").Edge("a", graph.End).Compile())(t)
	var last graph.Event
	var lastErr error
	for e, err := range c.Stream(context.Background(), "t", graph.Input[counter]{Update: func(*counter) {}}) {
		last, lastErr = e, err
	}
	if last.Kind != graph.KindError || !errors.Is(lastErr, boom) || !errors.Is(last.Err, boom) {
		t.Errorf("last event %+v err %v, want the error", last, lastErr)
	}
}

func TestBreakingOutOfStreamStopsTheRun(t *testing.T) {
	saver := checkpoint.NewMemory()
	c := must(chain(10).Compile(graph.WithSaver(saver)))(t)
	for e := range c.Stream(context.Background(), "t", graph.Input[counter]{Update: func(*counter) {}}) {
		if e.Kind == graph.KindState && e.Node == "n3" {
			break
		}
	}
	head := must(saver.Get(context.Background(), "t", ""))(t)
	if head.Meta.Node != "n3" {
		t.Fatalf("head after %s, want n3", head.Meta.Node)
	}
	res := must(c.Continue(context.Background(), "t"))(t)
	if res.State.N != 10 {
		t.Errorf("N = %d after continue, want 10", res.State.N)
	}
}

func TestUndoThenRunAgain(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory()
	c := must(chain(3).Compile(graph.WithSaver(saver)))(t)
	must(c.Invoke(ctx, "t", nil))(t)
	hist := must(saver.List(ctx, "t", 0))(t)
	// Undo to the checkpoint after n0 and continue: n1 and n2 run again.
	must(checkpoint.Undo(ctx, saver, "t", hist[2].ID))(t)
	res := must(c.Continue(ctx, "t"))(t)
	if want := []string{"n0", "n1", "n2"}; !slices.Equal(res.State.Log, want) || res.State.N != 3 {
		t.Errorf("after undo and continue: %+v", res.State)
	}
	if n := len(must(saver.List(ctx, "t", 0))(t)); n != 7 {
		t.Errorf("history has %d checkpoints, want 7 (undo keeps history)", n)
	}
}

func TestMermaidAndScenarios(t *testing.T) {
	c := must(seed000(0).Compile())(t)
	wantMermaid := `flowchart TD
	__start__([START])
	n0["generate"]
	n1["validate"]
	n2["explain"]
	n3["correct"]
	n4["finalize"]
	__end__([END])
	__start__ --> n0
	n0 --> n1
	n1 -.-> n4
	n1 -.-> n2
	n2 --> n3
	n3 -->|"at most 5×"| n1
	n3 -.->|"after 5×"| n4
	n4 --> __end__
`
	if got := c.Mermaid(); got != wantMermaid {
		t.Errorf("Mermaid:\n%s\nwant:\n%s", got, wantMermaid)
	}
	var got []string
	for _, s := range c.Scenarios() {
		got = append(got, s.String())
	}
	want := []string{
		"START → generate → validate → finalize → END",
		"START → generate → validate → explain → correct → validate (loop, at most 5×)",
		"START → generate → validate → explain → correct → finalize (after 5×) → END",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Scenarios:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A node's name is a quoted Mermaid label: a quote in it would end the
// label, and #…; would be read as an entity, so both are written as
// entities.
func TestMermaidEscapesNames(t *testing.T) {
	g := graph.New[counter]("odd").
		Node(`say "hi" #1`, func(_ context.Context, c counter) (counter, error) { return c, nil }).
		Edge(graph.Start, `say "hi" #1`).Edge(`say "hi" #1`, graph.End)
	want := "flowchart TD\n\t__start__([START])\n\tn0[\"say #quot;hi#quot; #35;1\"]\n\t__end__([END])\n\t__start__ --> n0\n\tn0 --> __end__\n"
	if got := must(g.Compile())(t).Mermaid(); got != want {
		t.Errorf("Mermaid:\n%s\nwant:\n%s", got, want)
	}
}

func TestNestedLoopsCountInARow(t *testing.T) {
	// inner repeats itself at most 2 times in a row; each time the outer
	// loop comes round, inner's count starts again.
	always := func(to string) graph.RouteFunc[counter] { return func(counter) string { return to } }
	g := graph.New[counter]("nested").
		Node("outer", inc("outer")).
		Node("inner", inc("inner")).
		Node("next", inc("next")).
		Edge(graph.Start, "outer").
		Edge("outer", "inner").
		Route("inner", always("inner"), "inner").Loop("inner", "inner", 2, "next").
		Route("next", always("outer"), "outer").Loop("next", "outer", 2, graph.End)
	res := must(must(g.Compile())(t).Invoke(context.Background(), "t", nil))(t)
	got := strings.Join(res.State.Log, " ")
	round := "outer inner inner inner next"
	if want := strings.Join([]string{round, round, round}, " "); got != want {
		t.Errorf("log\n got %s\nwant %s", got, want)
	}
}

// An answer of the wrong shape is refused before anything is written: the
// question stays pending and a proper answer still resumes it.
func TestResumeWithTheWrongShape(t *testing.T) {
	ctx := context.Background()
	var charges atomic.Int32
	saver := checkpoint.NewMemory()
	c := must(orderGraph(&charges).Compile(graph.WithSaver(saver)))(t)
	res := must(c.Invoke(ctx, "t", func(s *order) { s.Item = "x" }))(t)
	if !strings.Contains(string(res.Interrupt.Schema), `"accept"`) {
		t.Fatalf("interrupt schema = %s, want the answer type's fields", res.Interrupt.Schema)
	}
	before := must(saver.Get(ctx, "t", ""))(t)
	for _, bad := range []any{"yes", []int{1, 2}, map[string]any{"accept": "yes"}, 3} {
		_, err := c.Resume(ctx, "t", bad)
		if !errors.Is(err, graph.ErrInvalidAnswer) {
			t.Errorf("Resume(%v): err = %v, want ErrInvalidAnswer", bad, err)
		}
		if raw, _ := json.Marshal(bad); graph.CheckAnswer(res.Interrupt, raw) == nil {
			t.Errorf("CheckAnswer(%s) passed", raw)
		}
	}
	if head := must(saver.Get(ctx, "t", ""))(t); head.ID != before.ID || head.Interrupt == nil {
		t.Fatalf("head after refused answers = %s (interrupt %v), want %s unchanged", head.ID, head.Interrupt, before.ID)
	}
	// Fields may be left out: they decode to their zero value.
	if err := graph.CheckAnswer(res.Interrupt, json.RawMessage(`{}`)); err != nil {
		t.Errorf("CheckAnswer({}) = %v, want nil", err)
	}
	if res = must(c.Resume(ctx, "t", map[string]any{"accept": true}))(t); res.Status != graph.StatusDone || !res.State.Shipped {
		t.Errorf("after a proper answer: %+v", res)
	}
}

// A route that panics fails the run with the panic and its stack, as a
// node's panic does, instead of taking the process down.
func TestRoutePanicFailsTheRun(t *testing.T) {
	g := graph.New[int]("p").
		Node("a", func(_ context.Context, s int) (int, error) { return s + 1, nil }).
		Node("b", func(_ context.Context, s int) (int, error) { return s, nil }).
		Edge(graph.Start, "a").
		Route("a", func(s int) string { panic("no way out of " + fmt.Sprint(s)) }, "b", graph.End).
		Edge("b", graph.End)
	c, err := g.Compile(graph.WithSaver(checkpoint.NewMemory()))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Invoke(context.Background(), "t", nil)
	var pe *graph.PanicError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "route from a") || !strings.Contains(err.Error(), "no way out of 1") {
		t.Fatalf("err %v, want a PanicError from the route", err)
	}
}

// A thread whose state was sealed, read by a saver without the keys,
// fails with an error that says so rather than a JSON decoding error.
func TestSealedStateWithoutKeys(t *testing.T) {
	saver := checkpoint.NewMemory()
	cp := checkpoint.Next("t", nil, checkpoint.SourceInput)
	cp.State = json.RawMessage(`"sealed:aes256gcm:k1:AAAA"`)
	cp.Next = []string{"a"}
	if err := saver.Put(context.Background(), cp); err != nil {
		t.Fatal(err)
	}
	c, err := graph.New[int]("s").
		Node("a", func(_ context.Context, s int) (int, error) { return s, nil }).
		Edge(graph.Start, "a").Edge("a", graph.End).
		Compile(graph.WithSaver(saver))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Continue(context.Background(), "t")
	if !errors.Is(err, checkpoint.ErrCorrupt) || !strings.Contains(err.Error(), "sealed") || !strings.Contains(err.Error(), "LOOM_ENCRYPTION_KEYS") {
		t.Fatalf("err %v, want one saying the state is sealed and naming the keys' variable", err)
	}
}
