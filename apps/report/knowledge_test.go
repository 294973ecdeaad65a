package report_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/report"
	"github.com/loomkit/loom/llm/llmtest"
)

// TestTemplatesKnowledge: the JasperReports demo templates make a
// knowledge base; a request finds the templates whose fields it names,
// and the generation's prompt carries the closest one.
func TestTemplatesKnowledge(t *testing.T) {
	kb, skipped, err := report.ImportTemplates(sharedData(t, "jrxml/samples"))
	if err != nil {
		t.Fatal(err)
	}
	if kb.Len()+len(skipped) != 97 || len(skipped) != 0 {
		t.Fatalf("%d templates, %d skipped: %v", kb.Len(), len(skipped), skipped)
	}
	hits := kb.Search("orders by ship country with freight", 3)
	if len(hits) == 0 || !strings.Contains(strings.Join(hits[0].Fields, " "), "ShipCountry") {
		t.Fatalf("search: %+v", hits)
	}

	model := llmtest.New(t, xmlReply(goodJRXML))
	l := serve(t, model, filepath.Join(t.TempDir(), "loom.db"), report.ServerOptions{Templates: kb})
	st := l.run("k1", report.Input{Message: "generate a report of orders by ship country with freight"}).state
	if !strings.Contains(strings.Join(st.Turn.KBFields, ","), "ShipCountry") || st.Turn.KBTemplate == "" {
		t.Errorf("retrieve found fields %v", st.Turn.KBFields)
	}
	sys := system(model.Requests()[0])
	if !strings.Contains(sys, "<similar_template>") || !strings.Contains(sys, "A similar template: ") {
		t.Errorf("the generation's prompt lacks the similar template:\n%.600s", sys)
	}
}

// TestErrorKnowledge: a correction that worked is remembered (on the
// database, across a restart) and recalled by retrieve for a later
// request about the same field.
func TestErrorKnowledge(t *testing.T) {
	db := filepath.Join(t.TempDir(), "loom.db")
	model := llmtest.New(t,
		xmlReply(badJRXML),
		llmtest.Text("$F{amount_total} is not declared: the field is called amount."),
		xmlReply(goodJRXML),
	)
	l := serve(t, model, db, report.ServerOptions{})
	if st := l.run("e1", report.Input{Message: "generate a sales report"}).state; st.Turn.Status != "pass" || st.Turn.Corrections != 1 {
		t.Fatalf("status %s corrections %d", st.Turn.Status, st.Turn.Corrections)
	}
	l.Stop()
	model.Add(xmlReply(goodJRXML))
	l = serve(t, model, db, report.ServerOptions{})
	st := l.run("e2", report.Input{Message: "generate a report with the amount_total of each customer"}).state
	if !strings.Contains(st.Turn.Retrieved, "A past error and its fix") || !strings.Contains(st.Turn.Retrieved, "the field is called amount") {
		t.Errorf("retrieved %q", st.Turn.Retrieved)
	}
	if sys := system(model.Requests()[3]); !strings.Contains(sys, "the field is called amount") {
		t.Errorf("the generation's prompt lacks the past fix:\n%s", sys)
	}
}
