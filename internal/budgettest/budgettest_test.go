package budgettest

import (
	"reflect"
	"slices"
	"testing"

	"github.com/loomkit/loom/graph"
)

// recorder is a testing.TB that records the errors reported.
type recorder struct {
	testing.TB
	errors int
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.errors++ }

func TestCounters(t *testing.T) {
	type step struct {
		SQLTries int
		Note     string
	}
	type skipped struct{ Retries int }
	type state struct {
		Rounds  int
		Steps   []*step
		ByName  map[string]step
		Skipped skipped
		Loops   [2]struct{ Stretch uint8 }
		//lint:ignore U1000 an unexported field, which the walk must skip
		hidden struct{ Tries int }
	}
	got := Counters(reflect.TypeFor[state](), Counter(), reflect.TypeFor[skipped]())
	want := []string{"state.Steps.SQLTries", "state.Loops.Stretch"}
	if !slices.Equal(got, want) {
		t.Errorf("Counters = %v, want %v", got, want)
	}
	if got := Counters(reflect.TypeFor[state](), Counter("Rounds"), reflect.TypeFor[skipped]()); len(got) != 3 || got[0] != "state.Rounds" {
		t.Errorf("Counters with Rounds = %v, want state.Rounds first of 3", got)
	}
	r := &recorder{TB: t}
	NoCounters(r, reflect.TypeFor[state](), Counter())
	if r.errors != 1 {
		t.Errorf("NoCounters reported %d errors, want 1", r.errors)
	}
}

func TestUnspent(t *testing.T) {
	sp := graph.Spec{
		Edges:   []graph.Edge{{From: "ask", To: "end", Exit: true}, {From: "fix", To: "fail", Exit: true, Budget: "fixes"}, {From: "a", To: "b"}},
		Budgets: []graph.BudgetSpec{{Name: "fixes"}},
	}
	for _, tt := range []struct {
		tested map[string]bool
		errors int
	}{
		{nil, 2},
		{map[string]bool{"ask": true}, 1},
		{map[string]bool{"ask": true, "fixes": true}, 0},
		{map[string]bool{"fix": true, "a": true}, 2},
	} {
		r := &recorder{TB: t}
		Unspent(r, sp, tt.tested)
		if r.errors != tt.errors {
			t.Errorf("tested %v: %d errors, want %d", tt.tested, r.errors, tt.errors)
		}
		r = &recorder{TB: t}
		UnspentBudgets(r, sp, tt.tested)
		if want := map[bool]int{true: 0, false: 1}[tt.tested["fixes"]]; r.errors != want {
			t.Errorf("budgets, tested %v: %d errors, want %d", tt.tested, r.errors, want)
		}
	}
}
