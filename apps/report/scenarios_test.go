package report

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/loomkit/loom/graph"
)

// seedScenarios are the eight conversations of the designer's notes, as
// paths of nodes from the start to the end.
var seedScenarios = []struct {
	name string
	path []string
}{
	{"1 new report, one shot, passes", []string{"process_input", "classify_intent", "retrieve", "generate", "save_session", "validate", "finalize"}},
	{"1 new report, one shot, corrected", []string{"process_input", "classify_intent", "retrieve", "generate", "save_session", "validate", "explain_error", "correct_jrxml", "validate"}},
	{"1 new report, one shot, gives up", []string{"process_input", "classify_intent", "retrieve", "generate", "save_session", "validate", "explain_error", "correct_jrxml", "finalize"}},
	{"2 new report, three stages", []string{"process_input", "classify_intent", "retrieve", "generate_skeleton", "refine_layout", "map_fields", "save_session", "validate", "finalize"}},
	{"3 modify", []string{"process_input", "classify_intent", "modify_jrxml", "save_session", "validate", "finalize"}},
	{"4 preview or export", []string{"process_input", "classify_intent", "save_session", "finalize"}},
	{"5 consult", []string{"process_input", "classify_intent", "handle_consult", "finalize"}},
	{"6 undo", []string{"process_input", "classify_intent", "handle_undo", "save_session", "validate", "finalize"}},
	{"7 reset", []string{"process_input", "classify_intent", "handle_reset", "finalize"}},
	// 8: an unknown intent takes the path of 3 with a template, of 1
	// without: both are above; TestFallbackRoute checks the route.
}

// TestScenarios: every scenario of the notes is a path of the graph, and
// the correction loop carries its bound.
func TestScenarios(t *testing.T) {
	a, err := New(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := a.Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	var paths [][]string
	for _, sc := range c.Scenarios() {
		var p []string
		for _, h := range sc {
			if h.Node != graph.Start && h.Node != graph.End {
				p = append(p, h.Node)
			}
		}
		paths = append(paths, p)
	}
	for _, want := range seedScenarios {
		if !slices.ContainsFunc(paths, func(p []string) bool { return slices.Equal(p, want.path) }) {
			t.Errorf("scenario %s: no path %s", want.name, strings.Join(want.path, " → "))
		}
	}
	loop := false
	for _, e := range c.Spec().Edges {
		if e.From == "correct_jrxml" && e.To == "validate" && e.Max == DefaultMaxRetry {
			loop = true
		}
	}
	if !loop {
		t.Errorf("no loop correct_jrxml → validate bounded at %d: %+v", DefaultMaxRetry, c.Spec().Edges)
	}
	// The retries budget's exits are drawn from both edges it counts:
	// the runs that spend it (TestCorrectionGivesUp from correct_jrxml,
	// TestLastCorrectionStillFails from validate) take them.
	exits := map[string]bool{}
	for _, e := range c.Spec().Edges {
		if e.Exit && e.Budget == budgetRetries && e.To == nodeFinalize && e.Max == DefaultMaxRetry {
			exits[e.From] = true
		}
	}
	if !exits[nodeCorrect] || !exits[nodeValidate] {
		t.Errorf("retries exits drawn from %v, want correct_jrxml and validate:\n%s", exits, c.Mermaid())
	}
}

// TestFallbackRoute: R1 sends an unknown intent to modify when there is a
// template, to retrieve when there is none.
func TestFallbackRoute(t *testing.T) {
	if got := routeByIntent(State{}); got != "retrieve" {
		t.Errorf("no template: %s", got)
	}
	if got := routeByIntent(State{Design: Design{JRXML: "<jasperReport/>"}}); got != "modify_jrxml" {
		t.Errorf("with a template: %s", got)
	}
	if got := routeByIntent(State{Turn: Turn{Intent: intentPDF}}); got != "save_session" {
		t.Errorf("export: %s", got)
	}
}
