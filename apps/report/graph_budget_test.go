package report_test

import (
	"context"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/report"
	"github.com/loomkit/loom/graph"
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
	counter := regexp.MustCompile(`(Tries|Retry|Retries|Repairs|Rejections|Attempts|Stretch)$`)
	var bad []string
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type, string)
	walk = func(typ reflect.Type, path string) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		// FailureContext.Retry records, for the next turn's request, what
		// the budget spent; it is written once the budget's exit is taken.
		if typ.Kind() != reflect.Struct || seen[typ] || typ == reflect.TypeFor[report.FailureContext]() {
			return
		}
		seen[typ] = true
		for f := range typ.Fields() {
			switch k := f.Type.Kind(); {
			case !f.IsExported():
			case k >= reflect.Int && k <= reflect.Uint64 && counter.MatchString(f.Name):
				bad = append(bad, path+"."+f.Name)
			default:
				walk(f.Type, path+"."+f.Name)
			}
		}
	}
	walk(reflect.TypeFor[report.State](), "State")
	if len(bad) > 0 {
		t.Errorf("state fields that count what a budget counts: %v", bad)
	}
}
