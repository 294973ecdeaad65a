package demo_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/demo"
	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/internal/budgettest"
)

// TestLoopTakesItsDrawnExit: the demo declares one bound, the check → fix
// loop (fix → check taken at most MaxRounds times); a checklist that
// fixing cannot mend (a todo item that, once its mark is gone, repeats
// the next one) is checked after MaxRounds fixes, and the fix after them
// goes where the drawing says, to confirm, with the problem still open.
func TestLoopTakesItsDrawnExit(t *testing.T) {
	c, err := demo.Graph().Compile(graph.WithSaver(checkpoint.NewMemory()))
	if err != nil {
		t.Fatal(err)
	}
	sp := c.Spec()
	if len(sp.Budgets) != 0 {
		t.Errorf("budgets %+v: each needs a run here", sp.Budgets)
	}
	var exits []graph.Edge
	for _, e := range sp.Edges {
		if e.Exit {
			exits = append(exits, e)
		}
	}
	if len(exits) != 1 || exits[0].From != "fix" || exits[0].To != "confirm" || exits[0].Max != demo.MaxRounds {
		t.Fatalf("drawn exits %+v, want fix → confirm after %d", exits, demo.MaxRounds)
	}
	var path []string
	var res *graph.Result[demo.Doc]
	in := graph.Input[demo.Doc]{Goto: "check", Update: func(d *demo.Doc) {
		d.Title, d.Items = "launch", []string{"todo: Tell the team", "Tell the team"}
	}}
	for ev, err := range c.Stream(context.Background(), "t", in) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case graph.KindNodeStart:
			path = append(path, ev.Node)
		case graph.KindRunEnd:
			res = ev.Data.(*graph.Result[demo.Doc])
		}
	}
	want := []string{"check", "fix", "check", "fix", "check", "fix", "check", "fix", "confirm"}
	if !slices.Equal(path, want) {
		t.Errorf("path %s, want %s", strings.Join(path, " → "), strings.Join(want, " → "))
	}
	// fix → confirm is only the loop's exit, and the problem is open.
	if res == nil || res.Status != graph.StatusInterrupted || res.Interrupt.Node != "confirm" || len(res.State.Problems) == 0 || res.State.Rounds != demo.MaxRounds+1 {
		t.Fatalf("result %+v, want a question at confirm with the repeat still open", res)
	}
}

// TestNoStateCountsABudget: no int field of the demo's state counts
// tries, retries, repairs or rejections.
func TestNoStateCountsABudget(t *testing.T) {
	budgettest.NoCounters(t, reflect.TypeFor[demo.Doc](), budgettest.Counter())
}
