package report_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/report"
	"github.com/loomkit/loom/llm/llmtest"
)

// TestSchemaValidation: with the JasperReports schema configured, a
// template the structural checks accept but the schema does not goes
// through the correction loop with the schema's complaint; a valid one
// passes.
func TestSchemaValidation(t *testing.T) {
	schema := jasperSchema(t)
	bogus := strings.Replace(goodJRXML, `<band height="20">`, "<band height=\"20\">\n\t\t\t<bogus/>", 1)
	model := llmtest.New(t, xmlReply(bogus), llmtest.Text("The detail band holds an element the schema does not know."), xmlReply(goodJRXML))
	l := serve(t, model, filepath.Join(t.TempDir(), "loom.db"), report.ServerOptions{Schemas: []string{schema}})
	tr := l.run("x1", report.Input{Message: "generate a sales report"})
	if want := path("process_input", "classify_intent", "retrieve", "generate", "save_session", "validate", "explain_error", "correct_jrxml", "validate", "finalize"); tr.String() != want {
		t.Errorf("path %s", tr)
	}
	if st := tr.state; st.Final != goodJRXML || st.Turn.Status != "pass" {
		t.Errorf("status %q", st.Turn.Status)
	}
	if text := allText(model.Requests()[1]); !strings.Contains(text, "Element 'bogus': This element is not expected") {
		t.Errorf("the explanation's request lacks the schema's complaint:\n%s", text)
	}
}
