package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
)

// essayV1 is the state of version 1 of the essay graph; version 2 calls
// its field draft "text".
type essayV1 struct {
	Topic string `json:"topic"`
	Draft string `json:"draft"`
}

type essayV2 struct {
	Topic string `json:"topic"`
	Text  string `json:"text"`
	By    string `json:"by"` // the node that took the answer
}

// essayOne is version 1, declaring no version: plan, then draft asks
// for an approval. A budget counts plan → draft.
func essayOne(t *testing.T, s checkpoint.Saver) *graph.Compiled[essayV1] {
	t.Helper()
	g := graph.New[essayV1]("essay").
		Node("plan", func(_ context.Context, e essayV1) (essayV1, error) {
			e.Draft = "outline of " + e.Topic
			return e, nil
		}).
		Node("draft", func(ctx context.Context, e essayV1) (essayV1, error) {
			ok, err := graph.Ask[string](ctx, "approve the outline?")
			if err != nil {
				return e, err
			}
			e.Draft += " / " + ok
			return e, nil
		}).
		Edge(graph.Start, "plan").Edge("plan", "draft").Edge("draft", graph.End)
	g.Budget("tries", 3, graph.End).Count("plan", "draft", 1)
	c, err := g.Compile(graph.WithSaver(s))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// essayTwo is version 2: node draft is now write, budget tries is now
// attempts, and the state's field draft is text.
func essayTwo(t *testing.T, s checkpoint.Saver, version int, migrate ...graph.Change) *graph.Compiled[essayV2] {
	t.Helper()
	g := graph.New[essayV2]("essay").Version(version).
		Node("plan", func(_ context.Context, e essayV2) (essayV2, error) {
			e.Text = "outline of " + e.Topic
			return e, nil
		}).
		Node("write", func(ctx context.Context, e essayV2) (essayV2, error) {
			ok, err := graph.Ask[string](ctx, "approve the outline?")
			if err != nil {
				return e, err
			}
			e.Text += " / " + ok
			e.By = "write"
			return e, nil
		}).
		Edge(graph.Start, "plan").Edge("plan", "write").Edge("write", graph.End)
	g.Budget("attempts", 3, graph.End).Count("plan", "write", 1)
	if migrate != nil {
		g.Migrate(1, migrate...)
	}
	c, err := g.Compile(graph.WithSaver(s))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func renames() []graph.Change {
	return []graph.Change{graph.RenameNode("draft", "write"), graph.RenameBudget("tries", "attempts"), graph.RenameField("draft", "text")}
}

// eachSaver runs f on the memory saver and on SQLite.
func eachSaver(t *testing.T, f func(t *testing.T, s checkpoint.Saver)) {
	for _, sv := range savers {
		t.Run(sv.name, func(t *testing.T) { f(t, sv.open(t)) })
	}
}

func TestVersionMigratesStoredThread(t *testing.T) {
	eachSaver(t, func(t *testing.T, s checkpoint.Saver) {
		ctx := t.Context()
		one := essayOne(t, s)
		res, err := one.Invoke(ctx, "t1", func(e *essayV1) { e.Topic = "rivers" })
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != graph.StatusInterrupted || res.Interrupt.Node != "draft" {
			t.Fatalf("version 1 ended %s at %+v, want interrupted at draft", res.Status, res.Interrupt)
		}
		stored, err := s.Get(ctx, "t1", "")
		if err != nil {
			t.Fatal(err)
		}
		if stored.Meta.Version != 0 {
			t.Fatalf("a graph with no version wrote version %d, want 0 (read as 1)", stored.Meta.Version)
		}

		two := essayTwo(t, s, 2, renames()...)
		got, err := two.Resume(ctx, "t1", "fine")
		if err != nil {
			t.Fatalf("resume on version 2: %v", err)
		}
		want := essayV2{Topic: "rivers", Text: "outline of rivers / fine", By: "write"}
		if got.Status != graph.StatusDone || got.State != want {
			t.Fatalf("resume on version 2 ended %s with %+v, want done with %+v", got.Status, got.State, want)
		}
		head, err := s.Get(ctx, "t1", "")
		if err != nil {
			t.Fatal(err)
		}
		if head.Meta.Version != 2 {
			t.Errorf("the new head records version %d, want 2", head.Meta.Version)
		}
		if head.Counters["attempts"] != 1 || len(head.Counters) != 1 {
			t.Errorf("the new head's counters are %v, want the budget renamed: map[attempts:1]", head.Counters)
		}
		// History stays as it was stored.
		old, err := s.Get(ctx, "t1", stored.ID)
		if err != nil {
			t.Fatal(err)
		}
		if old.Next[0] != "draft" || old.Meta.Version != 0 || !strings.Contains(string(old.State), `"draft"`) {
			t.Errorf("the stored checkpoint changed: next %v, version %d, state %s", old.Next, old.Meta.Version, old.State)
		}
	})
}

// A thread forked from a checkpoint of version 1 keeps that version, so
// it is migrated too.
func TestVersionForkKeepsVersion(t *testing.T) {
	ctx := t.Context()
	s := checkpoint.NewMemory()
	if _, err := essayOne(t, s).Invoke(ctx, "src", func(e *essayV1) { e.Topic = "lakes" }); err != nil {
		t.Fatal(err)
	}
	two := essayTwo(t, s, 2, renames()...)
	// The destination's head is written by version 2.
	if _, err := two.Invoke(ctx, "dst", func(e *essayV2) { e.Topic = "seas" }); err != nil {
		t.Fatal(err)
	}
	head, err := s.Get(ctx, "src", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := checkpoint.Fork(ctx, s, "src", head.ID, "dst", nil); err != nil {
		t.Fatal(err)
	}
	res, err := two.Resume(ctx, "dst", "ok")
	if err != nil {
		t.Fatalf("resume a fork of a version 1 checkpoint: %v", err)
	}
	if res.State.Text != "outline of lakes / ok" || res.State.By != "write" {
		t.Fatalf("resumed fork: %+v", res.State)
	}
}

// A head that waits on fan-out branches, one answered, with a loop count:
// the branches, their answers and the loop's count follow the rename.
func TestVersionMigratesBranchesAndLoops(t *testing.T) {
	ctx := t.Context()
	s := checkpoint.NewMemory()
	// As version 1 stored it: node "check" fanned out two questions;
	// branch 0 is answered, branch 1 waits; the loop check → check was
	// taken twice.
	cp := checkpoint.Next("t", nil, checkpoint.SourceStep)
	cp.State = json.RawMessage(`{"answers":null}`)
	cp.Next = []string{"check"}
	cp.SetPending([]checkpoint.Interrupt{{ID: "q1", Node: "check", Branch: "check[1]"}})
	cp.Answers = map[string][]json.RawMessage{"check[0]": {json.RawMessage(`"yes"`)}}
	cp.Counters = map[string]int{"check>check": 2}
	cp.Meta.Version = 1
	if err := s.Put(ctx, cp); err != nil {
		t.Fatal(err)
	}

	type st struct {
		Answers []string `json:"answers"`
		Left    int      `json:"left"`
	}
	ask := func(ctx context.Context, s st) (st, error) {
		a, err := graph.Ask[string](ctx, "ok?")
		s.Answers = []string{a}
		return s, err
	}
	g := graph.New[st]("review").Version(2).Migrate(1, graph.RenameNode("check", "verify")).
		Node("verify", graph.Parallel(func(s st, rs []st) (st, error) {
			for _, r := range rs {
				s.Answers = append(s.Answers, r.Answers...)
			}
			return s, nil
		}, ask, ask)).
		Node("count", func(ctx context.Context, s st) (st, error) {
			s.Left, _ = graph.Left(ctx, "verify>verify")
			return s, nil
		}).
		Edge(graph.Start, "verify").
		Route("verify", func(st) string { return "verify" }, "verify").
		Loop("verify", "verify", 3, "count").
		Edge("count", graph.End)
	c, err := g.Compile(graph.WithSaver(s))
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Run(ctx, "t", graph.Input[st]{Answers: map[string]any{"q1": "no"}})
	if err != nil {
		t.Fatalf("answer the migrated question: %v", err)
	}
	// verify ends with both branches' answers, takes the loop once more
	// (its third time), asks again there and stops.
	if res.Status != graph.StatusInterrupted || len(res.Interrupts) != 2 {
		t.Fatalf("ended %s with %d questions, want interrupted with 2", res.Status, len(res.Interrupts))
	}
	for _, q := range res.Interrupts {
		if q.Node != "verify" || !strings.HasPrefix(q.Branch, "verify[") {
			t.Errorf("question %+v: want node verify, branch verify[i]", q)
		}
	}
	if got := res.State.Answers; len(got) != 2 || got[0] != "yes" || got[1] != "no" {
		t.Fatalf("answers after the migrated branches ran: %q, want [yes no]", got)
	}
	head, err := s.Get(ctx, "t", "")
	if err != nil {
		t.Fatal(err)
	}
	if head.Counters["verify>verify"] != 3 || len(head.Counters) != 1 {
		t.Fatalf("loop counts %v, want the migrated 2 plus the one taken: map[verify>verify:3]", head.Counters)
	}
	// The bound is spent: answering both goes to count with nothing left.
	res, err = c.Run(ctx, "t", graph.Input[st]{Answers: map[string]any{res.Interrupts[0].ID: "a", res.Interrupts[1].ID: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != graph.StatusDone || res.State.Left != 0 {
		t.Fatalf("ended %s with %+v, want done with nothing left", res.Status, res.State)
	}
}

func TestVersionRefusesNewerThread(t *testing.T) {
	eachSaver(t, func(t *testing.T, s checkpoint.Saver) {
		ctx := t.Context()
		five := essayTwo(t, s, 5)
		if _, err := five.Invoke(ctx, "t5", func(e *essayV2) { e.Topic = "hills" }); err != nil {
			t.Fatal(err)
		}
		before, err := s.List(ctx, "t5", 0)
		if err != nil {
			t.Fatal(err)
		}
		two := essayTwo(t, s, 2, renames()...)
		_, err = two.Resume(ctx, "t5", "fine")
		if !errors.Is(err, graph.ErrVersion) {
			t.Fatalf("resume a version 5 thread on version 2: %v, want ErrVersion", err)
		}
		for _, want := range []string{"version 5", "version 2", "t5"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %q", err, want)
			}
		}
		after, err := s.List(ctx, "t5", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(after) != len(before) {
			t.Errorf("the refused run wrote %d checkpoints", len(after)-len(before))
		}
		// A new run on the thread is refused too: its state is version 5's.
		if _, err := two.Invoke(ctx, "t5", nil); !errors.Is(err, graph.ErrVersion) {
			t.Errorf("invoke on a version 5 thread: %v, want ErrVersion", err)
		}
	})
}

func TestVersionRefusesWithoutMigration(t *testing.T) {
	ctx := t.Context()
	s := checkpoint.NewMemory()
	if _, err := essayOne(t, s).Invoke(ctx, "t1", nil); err != nil {
		t.Fatal(err)
	}
	// Version 3 migrates threads of version 2, not of version 1.
	g := graph.New[essayV2]("essay").Version(3).Migrate(2).
		Node("write", func(_ context.Context, e essayV2) (essayV2, error) { return e, nil }).
		Edge(graph.Start, "write").Edge("write", graph.End)
	three, err := g.Compile(graph.WithSaver(s))
	if err != nil {
		t.Fatal(err)
	}
	_, err = three.Resume(ctx, "t1", "fine")
	if !errors.Is(err, graph.ErrVersion) || !strings.Contains(err.Error(), "version 1") || !strings.Contains(err.Error(), "version 3") {
		t.Fatalf("resume a version 1 thread on version 3 with no migration from 1: %v", err)
	}
}

// A node renamed with no new version is refused naming the version, not
// with a bare "not in this graph"; so is a migration that leaves the next
// node out of the graph, and one whose state change fails.
func TestVersionRefusesWhatItCannotRun(t *testing.T) {
	ctx := t.Context()
	s := checkpoint.NewMemory()
	if _, err := essayOne(t, s).Invoke(ctx, "t1", nil); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*graph.Compiled[essayV2]{
		"renamed with no version": essayTwo(t, s, 1),
		"migration misses a node": essayTwo(t, s, 2, graph.RenameField("draft", "text")),
		"state change fails": essayTwo(t, s, 2, graph.RenameNode("draft", "write"), graph.MapState(func(json.RawMessage) (json.RawMessage, error) {
			return nil, errors.New("the outline is gone")
		})),
	} {
		_, err := c.Resume(ctx, "t1", "fine")
		if !errors.Is(err, graph.ErrVersion) || !strings.Contains(err.Error(), "version 1") {
			t.Errorf("%s: %v, want ErrVersion naming version 1", name, err)
		}
		if err != nil && strings.Contains(err.Error(), "not in this graph") {
			t.Errorf("%s: the bare error: %v", name, err)
		}
	}
}

func TestVersionCompileErrors(t *testing.T) {
	build := func(decl func(g *graph.Graph[essayV2])) error {
		g := graph.New[essayV2]("essay").
			Node("write", func(_ context.Context, e essayV2) (essayV2, error) { return e, nil }).
			Edge(graph.Start, "write").Edge("write", graph.End)
		g.Budget("attempts", 2, graph.End).Count("write", graph.End, 1)
		decl(g)
		_, err := g.Compile()
		return err
	}
	for _, tc := range []struct {
		name string
		decl func(g *graph.Graph[essayV2])
		want string // "" compiles
	}{
		{"version 0", func(g *graph.Graph[essayV2]) { g.Version(0) }, "at least 1"},
		{"version twice", func(g *graph.Graph[essayV2]) { g.Version(2).Version(3) }, "already declared version 2"},
		{"migration from 0", func(g *graph.Graph[essayV2]) { g.Version(2).Migrate(0) }, "versions start at 1"},
		{"migration from the graph's version", func(g *graph.Graph[essayV2]) { g.Version(2).Migrate(2) }, "the graph is version 2"},
		{"migration with no version", func(g *graph.Graph[essayV2]) { g.Migrate(1) }, "the graph is version 1"},
		{"migration twice", func(g *graph.Graph[essayV2]) { g.Version(2).Migrate(1).Migrate(1) }, "declared twice"},
		{"rename to itself", func(g *graph.Graph[essayV2]) { g.Version(2).Migrate(1, graph.RenameNode("a", "a")) }, "two different node names"},
		{"rename field to nothing", func(g *graph.Graph[essayV2]) { g.Version(2).Migrate(1, graph.RenameField("a", "")) }, "two different field names"},
		{"nil state change", func(g *graph.Graph[essayV2]) { g.Version(2).Migrate(1, graph.MapState(nil)) }, "nil function"},
		{"rename to no node", func(g *graph.Graph[essayV2]) { g.Version(2).Migrate(1, graph.RenameNode("draft", "wrote")) }, `node "draft" is renamed to "wrote", which is no node of version 2`},
		{"rename to no budget", func(g *graph.Graph[essayV2]) { g.Version(2).Migrate(1, graph.RenameBudget("tries", "write>write")) }, "no '>'"},
		{"rename to an unknown budget", func(g *graph.Graph[essayV2]) { g.Version(2).Migrate(1, graph.RenameBudget("tries", "rounds")) }, "which is no budget of version 2"},
		{"rename through later versions", func(g *graph.Graph[essayV2]) {
			g.Version(3).Migrate(1, graph.RenameNode("draft", "edit"), graph.RenameBudget("tries", "rounds")).
				Migrate(2, graph.RenameNode("edit", "write"), graph.RenameBudget("rounds", "attempts"))
		}, ""},
		{"renamed away later", func(g *graph.Graph[essayV2]) {
			g.Version(3).Migrate(1, graph.RenameNode("draft", "write")).Migrate(2, graph.RenameNode("write", "edit"))
		}, `"edit", which is no node of version 3`},
	} {
		err := build(tc.decl)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

func TestVersionInSpec(t *testing.T) {
	s := checkpoint.NewMemory()
	if v := essayTwo(t, s, 4).Spec().Version; v != 4 {
		t.Errorf("Spec().Version = %d, want 4", v)
	}
	if v := essayOne(t, s).Spec().Version; v != 0 {
		t.Errorf("Spec().Version of a graph that declares none = %d, want 0", v)
	}
}
