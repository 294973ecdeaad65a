package report_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/report"
	"github.com/loomkit/loom/llm/llmtest"
)

// correctionTurn generates a template that fails and has the model
// correct it with fixes, each explained first.
func correctionTurn(t *testing.T, thread string, fixes ...string) (turn, *llmtest.Server) {
	t.Helper()
	model := llmtest.New(t, xmlReply(badJRXML))
	for _, f := range fixes {
		model.Add(llmtest.Text("A field is not declared."), xmlReply(f))
	}
	l := serve(t, model, filepath.Join(t.TempDir(), "loom.db"), report.ServerOptions{})
	tr := l.run(thread, report.Input{Message: "generate a sales report"})
	if model.Pending() != 0 {
		t.Errorf("%d scripted answers unused", model.Pending())
	}
	return tr, model
}

func correctionPath(n int, end ...string) string {
	p := []string{"process_input", "classify_intent", "retrieve", "generate", "save_session", "validate"}
	for i := range n {
		p = append(p, "explain_error", "correct_jrxml")
		if i < n-1 {
			p = append(p, "validate")
		}
	}
	return path(append(p, end...)...)
}

// TestLastCorrectionValidated: a fix that arrives on the last correction
// the retries allow is validated, and the turn passes with it.
func TestLastCorrectionValidated(t *testing.T) {
	tr, _ := correctionTurn(t, "last1", worseJRXML, badJRXML, worseJRXML, badJRXML, goodJRXML)
	if want := correctionPath(report.DefaultMaxRetry, "validate", "finalize"); tr.String() != want {
		t.Errorf("path\n got %s\nwant %s", tr, want)
	}
	st := tr.state
	if st.Turn.Status != "pass" || st.Final != goodJRXML || st.PendingFailure != nil || st.Turn.Corrections != 5 || len(st.Turn.Problems) != 0 {
		t.Errorf("status %q corrections %d problems %v pending %+v", st.Turn.Status, st.Turn.Corrections, st.Turn.Problems, st.PendingFailure)
	}
	if !strings.Contains(st.Turn.Reply, "passes validation") {
		t.Errorf("reply %q", st.Turn.Reply)
	}
}

// TestLastCorrectionStillFails: a last correction that is still wrong is
// validated too, so the failure recorded is its own, not the round
// before's; the loop ends without explaining it.
func TestLastCorrectionStillFails(t *testing.T) {
	// worseJRXML has two undeclared fields; the last correction leaves one.
	tr, _ := correctionTurn(t, "last2", worseJRXML, badJRXML, worseJRXML, badJRXML, worseJRXML)
	if want := correctionPath(report.DefaultMaxRetry, "validate", "finalize"); tr.String() != want {
		t.Errorf("path\n got %s\nwant %s", tr, want)
	}
	st := tr.state
	if st.Turn.Status != "fail" || st.PendingFailure == nil || st.PendingFailure.JRXML != worseJRXML {
		t.Fatalf("status %q pending %+v", st.Turn.Status, st.PendingFailure)
	}
	if !strings.Contains(st.PendingFailure.Error, "customer_name") {
		t.Errorf("the failure carried is not the last correction's: %s", st.PendingFailure.Error)
	}
}
