package report_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/report"
	"github.com/loomkit/loom/llm/llmtest"
)

// TestRecords: a turn that leaves the template as it is adds no version;
// a fallback turn is recorded with the intent it was taken for; a page
// past the end is a 404; a failure carried to the next turn counts the
// corrections that ran, not the weighted retries.
func TestRecords(t *testing.T) {
	model := llmtest.New(t, xmlReply(goodJRXML))
	l := serve(t, model, filepath.Join(t.TempDir(), "loom.db"), report.ServerOptions{})
	l.run("r1", report.Input{Message: "帮我生成一个销售报表"})
	model.Add(xmlReply(goodJRXML))
	tr := l.run("r1", report.Input{Message: "把标题字体改大"})
	if tr.state.Version != 1 || tr.state.Turn.Status != "pass" {
		t.Errorf("an unchanged template: version %d status %q", tr.state.Version, tr.state.Turn.Status)
	}
	model.Add(llmtest.Text(`<DECISION>{"intent": "unknown"}</DECISION>`), xmlReply(biggerTitle))
	tr = l.run("r1", report.Input{Message: "嗯，这样那样弄一下"})
	if tr.state.Version != 2 || tr.state.Turn.By != "fallback" || tr.state.Turn.Intent != report.IntentModify {
		t.Errorf("fallback: version %d by %q intent %q", tr.state.Version, tr.state.Turn.By, tr.state.Turn.Intent)
	}
	code, b := l.Do(keyA, "GET", "/api/v1/report/threads/r1/versions", nil)
	var vs struct{ Versions []report.Version }
	if err := json.Unmarshal(b, &vs); code != 200 || err != nil || len(vs.Versions) != 2 || vs.Versions[1].Intent != report.IntentModify {
		t.Errorf("versions: %d %s", code, b)
	}
	for p, want := range map[string]int{"?page=1": 200, "?page=2": 404, "?page=0": 400} {
		if code, b := l.Do(keyA, "GET", "/api/v1/report/threads/r1/current.png"+p, nil); code != want {
			t.Errorf("current.png%s: %d %.100s", p, code, b)
		}
	}

	// Three corrections that change nothing spend six retries.
	model.Add(xmlReply(badJRXML))
	for range 3 {
		model.Add(llmtest.Text("A field is not declared."), xmlReply(badJRXML))
	}
	tr = l.run("r2", report.Input{Message: "generate a sales report"})
	if st := tr.state; st.PendingFailure == nil || st.PendingFailure.Corrections != 3 || !strings.Contains(st.Turn.Reply, "after 3 corrections") {
		t.Fatalf("pending %+v reply %q", st.PendingFailure, st.Turn.Reply)
	}
	model.Add(xmlReply(goodJRXML))
	l.run("r2", report.Input{Message: "generate a sales report with the amount field"})
	reqs := model.Requests()
	if sys := system(reqs[len(reqs)-1]); !strings.Contains(sys, "did not pass validation after 3 corrections.") || strings.Contains(sys, "6 corrections") {
		t.Errorf("the carried failure miscounts:\n%s", sys)
	}
}
