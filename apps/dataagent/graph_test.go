package dataagent_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/dataagent"
	"github.com/loomkit/loom/graph"
)

// TestGraphHasTheAnalystsNodesAndRoutes: the compiled graph has every node
// of the analyst's diagram, every dispatcher's targets as declared route
// targets, and every retry as a bounded loop with its bound and exit.
func TestGraphHasTheAnalystsNodesAndRoutes(t *testing.T) {
	g, err := dataagent.New(dataagent.Config{PythonTries: 3}).Graph().Compile()
	if err != nil {
		t.Fatal(err)
	}
	spec := g.Spec()
	nodes := []string{"intent_recognition", "evidence_recall", "query_enhance", "schema_recall", "table_relation",
		"feasibility_assessment", "planner", "plan_executor", "human_feedback", "sql_generate", "semantic_consistency",
		"sql_execute", "python_generate", "python_execute", "python_analyze", "report_generator", "give_up"}
	if !slices.Equal(spec.Nodes, nodes) {
		t.Errorf("nodes %v, want %v", spec.Nodes, nodes)
	}
	type edge struct {
		from, to    string
		conditional bool
	}
	have := map[edge]graph.Edge{}
	for _, e := range spec.Edges {
		if !e.Exit {
			have[edge{e.From, e.To, e.Conditional}] = e
		}
	}
	end := graph.End
	want := []edge{
		{graph.Start, "intent_recognition", false},
		{"intent_recognition", "evidence_recall", true}, {"intent_recognition", end, true},
		{"evidence_recall", "query_enhance", false},
		{"query_enhance", "schema_recall", true}, {"query_enhance", end, true},
		{"schema_recall", "table_relation", true}, {"schema_recall", end, true},
		{"table_relation", "table_relation", true}, {"table_relation", "feasibility_assessment", true}, {"table_relation", end, true},
		{"feasibility_assessment", "planner", true}, {"feasibility_assessment", end, true},
		{"planner", "plan_executor", false},
		{"plan_executor", "planner", true}, {"plan_executor", "human_feedback", true}, {"plan_executor", "sql_generate", true},
		{"plan_executor", "python_generate", true}, {"plan_executor", "report_generator", true}, {"plan_executor", end, true},
		{"human_feedback", "planner", true}, {"human_feedback", "plan_executor", true}, {"human_feedback", end, true},
		{"sql_generate", "sql_generate", true}, {"sql_generate", "semantic_consistency", true}, {"sql_generate", end, true},
		{"semantic_consistency", "sql_generate", true}, {"semantic_consistency", "sql_execute", true},
		{"sql_execute", "sql_generate", true}, {"sql_execute", "plan_executor", true},
		{"python_generate", "python_execute", false},
		{"python_execute", "python_generate", true}, {"python_execute", "python_analyze", true},
		{"python_analyze", "plan_executor", false},
		{"report_generator", end, false},
		{"give_up", end, false},
	}
	for _, w := range want {
		if _, ok := have[w]; !ok {
			t.Errorf("no edge %s → %s (route target: %v)", w.from, w.to, w.conditional)
		}
	}
	if len(have) != len(want) {
		t.Errorf("%d edges, want %d", len(have), len(want))
	}
	// The budgets: table_relation retried twice, two plan repairs, five
	// rejections, ten SQL generations, three Python tries then the
	// fallback to analyze.
	bounds := map[[2]string]int{
		{"table_relation", "table_relation"}:     2,
		{"plan_executor", "planner"}:             2,
		{"human_feedback", "planner"}:            5,
		{"sql_generate", "sql_generate"}:         10,
		{"semantic_consistency", "sql_generate"}: 10,
		{"sql_execute", "sql_generate"}:          10,
		{"python_execute", "python_generate"}:    3,
	}
	for k, max := range bounds {
		e := have[edge{k[0], k[1], true}]
		if e.Max != max {
			t.Errorf("loop %s → %s bounded at %d, want %d", k[0], k[1], e.Max, max)
		}
	}
	exits := map[string]string{}
	for _, e := range spec.Edges {
		if e.Exit {
			exits[e.From+">"+e.To] = e.To
		}
	}
	if _, ok := exits["python_execute>python_analyze"]; !ok {
		t.Errorf("python_execute's loop does not exit to python_analyze (fallback): %v", exits)
	}
	// Every path of the drawing ends: the scenarios reach End through
	// report_generator, and through human_feedback.
	var report, feedback bool
	for _, sc := range g.Scenarios() {
		s := sc.String()
		report = report || strings.Contains(s, "report_generator → "+graph.End) || strings.HasSuffix(s, "report_generator → END")
		feedback = feedback || strings.Contains(s, "human_feedback")
	}
	if !report || !feedback {
		t.Errorf("scenarios: through report %v, through human feedback %v", report, feedback)
	}
}
