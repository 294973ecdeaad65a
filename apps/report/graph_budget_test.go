package report_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/report"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/internal/budgettest"
)

// TestBudgetsTakeTheirDrawnExits: the designer's one budget, the
// correction loop's retries, is spent from each edge it counts, and the
// run takes the exit drawn from there to finalize, with the turn failed:
// unchanged corrections (two units each) from correct_jrxml, and
// corrections that change the template but still fail from validate. A
// budget or loop declared without a run here fails the test.
func TestBudgetsTakeTheirDrawnExits(t *testing.T) {
	a, err := report.New(context.Background(), report.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := a.Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	sp := c.Spec()
	runs := map[string][]string{ // the node an exit leaves → the corrections
		"correct_jrxml": {badJRXML, badJRXML, badJRXML},
		"validate":      {worseJRXML, badJRXML, worseJRXML, badJRXML, worseJRXML},
	}
	for _, e := range sp.Edges {
		if e.Exit && e.Budget == "" {
			t.Errorf("loop out of %s (exit %s): no run spends it here", e.From, e.To)
		}
	}
	for _, b := range sp.Budgets {
		for _, u := range b.Counts {
			fixes, ok := runs[u.From]
			if !ok {
				t.Errorf("budget %s: no run spends it from %s", b.Name, u.From)
				continue
			}
			drawn := slices.ContainsFunc(sp.Edges, func(e graph.Edge) bool {
				return e.Exit && e.Budget == b.Name && e.From == u.From && e.To == b.Exit
			})
			if !drawn {
				t.Errorf("budget %s: no exit drawn from %s to %s", b.Name, u.From, b.Exit)
			}
			t.Run(b.Name+" from "+u.From, func(t *testing.T) {
				tr, _ := correctionTurn(t, "spent", fixes...)
				p := strings.Split(tr.String(), " → ")
				if len(p) < 2 || p[len(p)-2] != u.From || p[len(p)-1] != b.Exit {
					t.Errorf("path %s, want it to end %s → %s", tr, u.From, b.Exit)
				}
				// validate → finalize is also a pass: here the turn failed.
				if st := tr.state; st.Turn.Status != "fail" || st.PendingFailure == nil || st.Final != "" {
					t.Errorf("status %q pending %+v, want the turn failed", st.Turn.Status, st.PendingFailure)
				}
			})
		}
	}
	if len(sp.Budgets) == 0 {
		t.Error("no budget declared: the correction loop is unbounded or bounded elsewhere")
	}
}

// TestNoStateCountsABudget: no int field of the designer's state counts
// the retries (Turn.Corrections counts the corrections that ran, for the
// reply, not the units the budget spends).
func TestNoStateCountsABudget(t *testing.T) {
	// FailureContext.Retry records, for the next turn's request, what the
	// budget spent; it is written once the budget's exit is taken.
	budgettest.NoCounters(t, reflect.TypeFor[report.State](), budgettest.Counter(), reflect.TypeFor[report.FailureContext]())
}
