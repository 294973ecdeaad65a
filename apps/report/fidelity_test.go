package report_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/report"
	"github.com/loomkit/loom/llm/llmtest"
)

// formSkeleton reads a form of the corpus with the toolkit and returns its
// skeleton.
func formSkeleton(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata/forms", name))
	if err != nil {
		t.Fatal(err)
	}
	out, err := report.Toolkit{}.Read(context.Background(), report.DetectKind(data), data)
	if err != nil {
		t.Fatal(err)
	}
	return out.Skeleton
}

// fidelityModel answers the skeleton's request with skeleton, each band
// window with itself, an explanation with a sentence and each correction
// with fix.
func fidelityModel(t *testing.T, skeleton, fix string) *llmtest.Server {
	model := llmtest.New(t, xmlReply(skeleton))
	model.Handle(func(r llmtest.Request) llmtest.Reply {
		msgs := r.Messages()
		last := msgs[len(msgs)-1].Content
		switch {
		case last == "Fix the template.":
			return xmlReply(fix)
		case strings.HasPrefix(last, "Band "):
			piece := last[strings.Index(last, "```xml\n")+7:]
			return llmtest.Text("```xml\n" + piece[:strings.LastIndex(piece, "\n```")] + "\n```")
		}
		return llmtest.Text("The template lost part of the form.")
	})
	return model
}

// TestFidelityCheck: a template made from a form that loses the form's
// table or its title does not pass validation; the problem names what is
// missing, reaches the correction's prompt and, when no correction
// restores it, the reply. A faithful template passes.
func TestFidelityCheck(t *testing.T) {
	faithful := formSkeleton(t, "xsck.xlsx")
	noTable := regexp.MustCompile(`(?s)<columnHeader>.*</detail>`).ReplaceAllString(faithful, "")
	noTitle := strings.Replace(faithful, "<![CDATA[销售出库单]]>", "<![CDATA[Report]]>", 1)
	if noTable == faithful || noTitle == faithful {
		t.Fatal("the skeleton of xsck.xlsx has no table or no title to take away")
	}
	data, err := os.ReadFile("testdata/forms/xsck.xlsx")
	if err != nil {
		t.Fatal(err)
	}
	start := path("process_input", "classify_intent", "retrieve", "generate_skeleton", "refine_layout", "map_fields", "save_session", "validate")

	t.Run("faithful", func(t *testing.T) {
		l := serve(t, fidelityModel(t, faithful, faithful), filepath.Join(t.TempDir(), "loom.db"), report.ServerOptions{})
		tr := l.run("f1", report.Input{Upload: l.uploadID("f1", "xsck.xlsx", data), Message: "根据这个模板生成报表"})
		if tr.String() != start+" → finalize" || tr.state.Turn.Status != "pass" {
			t.Errorf("path %s status %s problems %v", tr, tr.state.Turn.Status, tr.state.Turn.Problems)
		}
	})
	t.Run("table lost, then restored", func(t *testing.T) {
		model := fidelityModel(t, noTable, faithful)
		l := serve(t, model, filepath.Join(t.TempDir(), "loom.db"), report.ServerOptions{})
		tr := l.run("f2", report.Input{Upload: l.uploadID("f2", "xsck.xlsx", data), Message: "根据这个模板生成报表"})
		if want := start + " → explain_error → correct_jrxml → validate → finalize"; tr.String() != want {
			t.Errorf("path\n got %s\nwant %s", tr, want)
		}
		if st := tr.state; st.Turn.Status != "pass" || st.Turn.Corrections != 1 {
			t.Errorf("status %s after %d corrections: %v", st.Turn.Status, st.Turn.Corrections, st.Turn.Problems)
		}
		var fix string
		for _, r := range model.Requests() {
			if ms := r.Messages(); ms[len(ms)-1].Content == "Fix the template." {
				fix = allText(r)
			}
		}
		if !strings.Contains(fix, "the form's table is missing: 6 of its 6 column headers") || !strings.Contains(fix, `"商品编码"`) {
			t.Errorf("the correction's prompt does not name the lost table:\n%s", fix)
		}
	})
	t.Run("title lost for good", func(t *testing.T) {
		l := serve(t, fidelityModel(t, noTitle, noTitle), filepath.Join(t.TempDir(), "loom.db"), report.ServerOptions{})
		tr := l.run("f3", report.Input{Upload: l.uploadID("f3", "xsck.xlsx", data), Message: "根据这个模板生成报表"})
		st := tr.state
		if st.Turn.Status != "fail" || st.PendingFailure == nil {
			t.Fatalf("status %s, pending %+v", st.Turn.Status, st.PendingFailure)
		}
		if want := `the form's title "销售出库单" is not in the template`; !strings.Contains(st.Turn.Reply, want) || !strings.Contains(st.Turn.Reply, "未通过验证") {
			t.Errorf("the reply does not say the title is lost:\n%s", st.Turn.Reply)
		}
		if len(st.Turn.Problems) != 1 {
			t.Errorf("problems besides the title: %v", st.Turn.Problems)
		}
	})
}
