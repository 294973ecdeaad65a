package graph_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
)

// fixState drives a correction loop: Unchanged[i] says whether the i-th
// fix changed nothing (and so costs 2).
type fixState struct {
	Unchanged []bool   `json:"unchanged"`
	Fixes     int      `json:"fixes"`
	Log       []string `json:"log"`
	Left      int      `json:"left"` // what give_up read with Left
	AskAt     int      `json:"ask_at"`
}

func (s fixState) unchanged() bool {
	return s.Fixes > 0 && s.Fixes <= len(s.Unchanged) && s.Unchanged[s.Fixes-1]
}

// fixGraph: draft → check ⟲ fix, with a budget "tries" of 5 that the
// check → fix edge checks and fix → check spends (2 for a fix that changed
// nothing); when spent the run goes to give_up.
func fixGraph() *graph.Graph[fixState] {
	log := func(name string, f func(ctx context.Context, s *fixState) error) graph.NodeFunc[fixState] {
		return func(ctx context.Context, s fixState) (fixState, error) {
			s.Log = append(s.Log, name)
			if f != nil {
				return s, f(ctx, &s)
			}
			return s, nil
		}
	}
	g := graph.New[fixState]("fix")
	g.Node("draft", log("draft", nil)).
		Node("check", log("check", nil)).
		Node("fix", log("fix", func(ctx context.Context, s *fixState) error {
			if s.Fixes+1 == s.AskAt {
				if _, err := graph.Ask[bool](ctx, "go on?"); err != nil {
					return err
				}
			}
			s.Fixes++
			return nil
		})).
		Node("give_up", log("give_up", func(ctx context.Context, s *fixState) error {
			left, ok := graph.Left(ctx, "tries")
			if !ok {
				return errors.New("no budget tries")
			}
			s.Left = left
			return nil
		})).
		Edge(graph.Start, "draft").Edge("draft", "check").
		Route("check", func(fixState) string { return "fix" }, "fix", graph.End).
		Edge("fix", "check").
		Edge("give_up", graph.End)
	g.Budget("tries", 5, "give_up").
		Count("check", "fix", 0).
		CountBy("fix", "check", func(s fixState) int {
			if s.unchanged() {
				return 2
			}
			return 1
		})
	return g
}

func TestBudgetWeighsEdgesAndTakesItsExit(t *testing.T) {
	c := must(fixGraph().Compile(graph.WithSaver(checkpoint.NewMemory())))(t)
	ctx := context.Background()
	for _, tt := range []struct {
		name      string
		unchanged []bool
		fixes     int
		end       []string
		left      int
	}{
		// Five changed fixes are each checked; the sixth check finds the
		// budget spent and gives up without a fix.
		{"changed", nil, 5, []string{"fix", "check", "give_up"}, 0},
		// Fixes that change nothing cost 2: 2, 4, and the third cannot
		// be paid, so the run leaves from fix.
		{"unchanged", []bool{true, true, true}, 3, []string{"check", "fix", "give_up"}, 1},
		// 1 + 2 + 1 + 1 = 5: the last fix is still checked.
		{"mixed", []bool{false, true, false, false}, 4, []string{"fix", "check", "give_up"}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := c.Invoke(ctx, tt.name, func(s *fixState) { s.Unchanged = tt.unchanged })
			if err != nil {
				t.Fatal(err)
			}
			s := res.State
			if s.Fixes != tt.fixes || !slices.Equal(s.Log[len(s.Log)-3:], tt.end) || s.Left != tt.left {
				t.Errorf("fixes %d, log %v, left %d; want %d fixes, ending %v, %d left", s.Fixes, s.Log, s.Left, tt.fixes, tt.end, tt.left)
			}
		})
	}
}

// TestBudgetSurvivesRestart: the count is checkpointed by name, so a run
// resumed by another compiled graph (a restarted process) spends the
// same budget.
func TestBudgetSurvivesRestart(t *testing.T) {
	saver := checkpoint.NewMemory()
	ctx := context.Background()
	first := must(fixGraph().Compile(graph.WithSaver(saver)))(t)
	res, err := first.Invoke(ctx, "t", func(s *fixState) { s.AskAt = 3 })
	if err != nil || res.Status != graph.StatusInterrupted {
		t.Fatalf("%+v, %v; want a question at the third fix", res, err)
	}
	cp, err := saver.Get(ctx, "t", "")
	if err != nil {
		t.Fatal(err)
	}
	if cp.Counters["tries"] != 2 {
		t.Errorf("checkpointed counters %v, want tries 2", cp.Counters)
	}
	second := must(fixGraph().Compile(graph.WithSaver(saver)))(t)
	res, err = second.Resume(ctx, "t", true)
	if err != nil {
		t.Fatal(err)
	}
	if res.State.Fixes != 5 || res.State.Log[len(res.State.Log)-1] != "give_up" {
		t.Errorf("after the restart: %d fixes, log %v; want 5 and give_up", res.State.Fixes, res.State.Log)
	}
}

// spinState spins; the route rests once after two spins.
type spinState struct {
	Spins, Rests int
	Log          []string
}

func spinGraph(reset bool) *graph.Graph[spinState] {
	step := func(name string) graph.NodeFunc[spinState] {
		return func(_ context.Context, s spinState) (spinState, error) {
			if name == "spin" {
				s.Spins++
			} else if name == "rest" {
				s.Rests++
			}
			s.Log = append(s.Log, name)
			return s, nil
		}
	}
	g := graph.New[spinState]("spin")
	g.Node("spin", step("spin")).Node("rest", step("rest")).Node("done", step("done")).
		Edge(graph.Start, "spin").
		Route("spin", func(s spinState) string {
			switch {
			case s.Spins >= 4:
				return graph.End
			case s.Spins == 2 && s.Rests == 0:
				return "rest"
			}
			return "spin"
		}, "spin", "rest", graph.End).
		Edge("rest", "spin").Edge("done", graph.End).
		Loop("spin", "rest", 1, "done")
	b := g.Budget("spins", 1, "done").Count("spin", "spin", 1)
	if reset {
		b.Reset("rest", "spin")
	}
	return g
}

// TestBudgetResetsOnDeclaredEdge: without the reset the fourth spin has
// no budget left; with rest → spin declared as a reset it has.
func TestBudgetResetsOnDeclaredEdge(t *testing.T) {
	ctx := context.Background()
	res := must(must(spinGraph(false).Compile())(t).Invoke(ctx, "t", nil))(t)
	if got := strings.Join(res.State.Log, " "); got != "spin spin rest spin done" {
		t.Errorf("without the reset: %s", got)
	}
	res = must(must(spinGraph(true).Compile())(t).Invoke(ctx, "t", nil))(t)
	if got := strings.Join(res.State.Log, " "); got != "spin spin rest spin spin" {
		t.Errorf("with the reset: %s", got)
	}
}

// TestBudgetResetEntering: entering the loop from outside starts the
// count again at the declared start, which counts the entry itself.
func TestBudgetResetEntering(t *testing.T) {
	g := graph.New[counter]("rounds")
	g.Node("plan", inc("plan")).Node("think", inc("think")).Node("pause", inc("pause")).
		Edge(graph.Start, "plan").Edge("plan", "think").
		Route("think", func(s counter) string { return "think" }, "think").
		Route("pause", func(s counter) string {
			if s.N > 6 {
				return graph.End
			}
			return "think"
		}, "think", graph.End)
	g.Budget("rounds", 3, "pause").Count("think", "think", 1).ResetEntering("think", 1)
	g.Loop("pause", "think", 5, graph.End)
	res := must(must(g.Compile())(t).Invoke(context.Background(), "t", nil))(t)
	if got := strings.Join(res.State.Log, " "); got != "plan think think think pause think think think pause" {
		t.Errorf("log %s; want three rounds, a pause, three rounds again", got)
	}
}

func TestBudgetViews(t *testing.T) {
	c := must(fixGraph().Compile())(t)
	sp := c.Spec()
	if len(sp.Budgets) != 1 || sp.Budgets[0].Name != "tries" || sp.Budgets[0].Max != 5 || sp.Budgets[0].Exit != "give_up" || len(sp.Budgets[0].Counts) != 2 {
		t.Errorf("budgets %+v", sp.Budgets)
	}
	m := c.Mermaid()
	for _, want := range []string{
		`n1 -.->|"while tries lasts"| n2`,
		`n2 -->|"tries +n/5"| n1`,
		`n1 -.->|"tries spent (5)"| n3`,
		`n2 -.->|"tries spent (5)"| n3`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("mermaid lacks %s:\n%s", want, m)
		}
	}
	var paths []string
	for _, s := range c.Scenarios() {
		paths = append(paths, s.String())
	}
	want := "START → draft → check → fix (while tries lasts) → give_up (tries spent (5)) → END"
	if !slices.Contains(paths, want) {
		t.Errorf("scenarios %q lack %q", paths, want)
	}
}

func TestBudgetCompileErrors(t *testing.T) {
	noop := func(_ context.Context, s counter) (counter, error) { return s, nil }
	base := func() *graph.Graph[counter] {
		g := graph.New[counter]("g")
		return g.Node("a", noop).Node("b", noop).Edge(graph.Start, "a").
			Route("a", func(counter) string { return "b" }, "b", graph.End).Edge("b", "a")
	}
	tests := []struct {
		name  string
		build func(g *graph.Graph[counter])
		want  string
	}{
		{"no edges", func(g *graph.Graph[counter]) {
			g.Budget("x", 2, graph.End).Count("b", "a", 1)
			g.Budget("y", 2, graph.End)
		}, "budget y: counts no edge"},
		{"missing edge", func(g *graph.Graph[counter]) { g.Budget("x", 2, graph.End).Count("a", "a", 1) }, "budget x: counts a → a, which is no edge"},
		{"unknown exit", func(g *graph.Graph[counter]) { g.Budget("x", 2, "nowhere").Count("b", "a", 1) }, `budget x: unknown exit "nowhere"`},
		{"bad name", func(g *graph.Graph[counter]) { g.Budget("a>b", 2, graph.End).Count("b", "a", 1) }, `budget "a>b": the name`},
		{"twice", func(g *graph.Graph[counter]) {
			g.Budget("x", 2, graph.End).Count("b", "a", 1)
			g.Budget("x", 2, graph.End).Count("b", "a", 1)
		}, "budget x: declared twice"},
		{"reset not an edge", func(g *graph.Graph[counter]) { g.Budget("x", 2, graph.End).Count("b", "a", 1).Reset("b", "b") }, "budget x: resets on b → b, which is no edge"},
		// A check spends nothing, so it bounds no cycle.
		{"only a check", func(g *graph.Graph[counter]) { g.Budget("x", 2, graph.End).Count("b", "a", 0) }, "loop without a declared bound"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := base()
			tt.build(g)
			_, err := g.Compile()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

var errRefused = errors.New("no route for this state")

// TestDecideRefuses: a route that returns an error fails the run with it;
// the state keeps no trace of it, and a route that picks reads budgets.
func TestDecideRefuses(t *testing.T) {
	g := graph.New[counter]("decide")
	g.Node("a", inc("a")).Node("b", inc("b")).
		Edge(graph.Start, "a").
		Decide("a", func(ctx context.Context, s counter) (string, error) {
			if s.N > 2 {
				return "", errRefused
			}
			if left, ok := graph.Left(ctx, "again"); !ok || left < 0 {
				return "", errors.New("budget again is not readable")
			}
			return "b", nil
		}, "b", graph.End).
		Edge("b", "a")
	g.Budget("again", 5, graph.End).Count("b", "a", 1)
	c := must(g.Compile(graph.WithSaver(checkpoint.NewMemory())))(t)
	res, err := c.Invoke(context.Background(), "t", nil)
	if !errors.Is(err, errRefused) || !strings.Contains(err.Error(), "route from a") {
		t.Fatalf("err %v, want the route's error, naming where", err)
	}
	if res == nil || res.State.N != 3 || res.Status != "" {
		t.Errorf("result %+v", res)
	}
	// The drawing keeps the declared targets.
	if m := c.Mermaid(); !strings.Contains(m, `n0 -.-> __end__`) || !strings.Contains(m, `n0 -.-> n1`) {
		t.Errorf("mermaid:\n%s", m)
	}
}

func boom(_ context.Context, s counter) (counter, error) {
	if s.N >= 0 {
		panic("the node broke")
	}
	return s, nil
}

// TestPanicKeepsItsStack: a panic in a node or a fan-out branch fails the
// run with an error that carries the stack from the panicking function,
// and the log has it too.
func TestPanicKeepsItsStack(t *testing.T) {
	var logged bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	defer slog.SetDefault(prev)

	branch := graph.Parallel(func(s counter, _ []counter) (counter, error) { return s, nil }, inc("ok"), boom)
	for name, fn := range map[string]graph.NodeFunc[counter]{"node": boom, "branch": branch} {
		logged.Reset()
		g := graph.New[counter](name)
		g.Node("x", fn).Edge(graph.Start, "x").Edge("x", graph.End)
		_, err := must(g.Compile())(t).Invoke(context.Background(), "t", nil)
		var pe *graph.PanicError
		if !errors.As(err, &pe) {
			t.Fatalf("%s: err %v, want a PanicError", name, err)
		}
		if !strings.Contains(err.Error(), "the node broke") || !strings.Contains(string(pe.Stack), "graph_test.boom") || !strings.Contains(err.Error(), "budget_test.go") {
			t.Errorf("%s: error without the panic's stack:\n%v", name, err)
		}
		if strings.HasPrefix(string(pe.Stack), "goroutine") {
			t.Errorf("%s: the stack starts with the recovering frames:\n%s", name, pe.Stack)
		}
		if l := logged.String(); !strings.Contains(l, "recovered a panic") || !strings.Contains(l, "graph_test.boom") {
			t.Errorf("%s: log %q", name, l)
		}
	}
}
