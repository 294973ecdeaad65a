// Package budgettest holds the checks every agent's tests make of its
// loops: that its state counts nothing a budget of its graph counts, and
// that each budget and bounded loop the graph declares is spent by a run
// of the tests.
package budgettest

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/loomkit/loom/graph"
)

// counted are the endings of a field name that counts what a budget
// counts.
var counted = []string{"Tries", "Retry", "Retries", "Repairs", "Rejections", "Attempts", "Stretch"}

// Counter matches the name of a field that counts tries, retries,
// repairs, rejections, attempts or a stretch of rounds, or ends in one
// of more (such as "Steps", an agent's own loop).
func Counter(more ...string) *regexp.Regexp {
	return regexp.MustCompile(`(` + strings.Join(append(append([]string(nil), counted...), more...), "|") + `)$`)
}

// Counters lists the exported integer fields of typ, walked through
// structs, pointers, slices, arrays and maps, whose names counter
// matches, as paths from typ's name ("State.Plan.SQLTries"). The types
// in skip are not entered.
func Counters(typ reflect.Type, counter *regexp.Regexp, skip ...reflect.Type) []string {
	seen := map[reflect.Type]bool{}
	for _, s := range skip {
		seen[s] = true
	}
	var out []string
	var walk func(reflect.Type, string)
	walk = func(typ reflect.Type, path string) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Array || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || seen[typ] {
			return
		}
		seen[typ] = true
		for f := range typ.Fields() {
			switch k := f.Type.Kind(); {
			case !f.IsExported():
			case k >= reflect.Int && k <= reflect.Uint64 && counter.MatchString(f.Name):
				out = append(out, path+"."+f.Name)
			default:
				walk(f.Type, path+"."+f.Name)
			}
		}
	}
	walk(typ, typ.Name())
	return out
}

// NoCounters fails t when the state type typ has fields Counters finds.
func NoCounters(t testing.TB, typ reflect.Type, counter *regexp.Regexp, skip ...reflect.Type) {
	t.Helper()
	if bad := Counters(typ, counter, skip...); len(bad) > 0 {
		t.Errorf("state fields that count what a budget counts: %v", bad)
	}
}

// Unspent fails t for each budget of sp whose name tested lacks (see
// UnspentBudgets) and each loop exit without a budget whose node tested
// lacks (see UnspentLoops).
func Unspent(t testing.TB, sp graph.Spec, tested map[string]bool) {
	t.Helper()
	UnspentLoops(t, sp, tested)
	UnspentBudgets(t, sp, tested)
}

// UnspentLoops fails t for each loop exit of sp without a budget whose
// node (the edge's From) tested lacks: a bound loop declared without a
// run of the tests that leaves it.
func UnspentLoops(t testing.TB, sp graph.Spec, tested map[string]bool) {
	t.Helper()
	for _, e := range sp.Edges {
		if e.Exit && e.Budget == "" && !tested[e.From] {
			t.Errorf("loop out of %s (exit %s): no run spends it here", e.From, e.To)
		}
	}
}

// UnspentBudgets fails t for each budget of sp whose name tested lacks: a
// budget declared without a run of the tests that spends it.
func UnspentBudgets(t testing.TB, sp graph.Spec, tested map[string]bool) {
	t.Helper()
	for _, b := range sp.Budgets {
		if !tested[b.Name] {
			t.Errorf("budget %s: no run spends it here", b.Name)
		}
	}
}
