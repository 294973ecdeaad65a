package report_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/report"
	"github.com/loomkit/loom/llm/llmtest"
)

// longJRXML is goodJRXML with n more rows of static text in its detail
// band, the last one reading "last row n".
func longJRXML(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "\t\t\t<staticText>\n\t\t\t\t<reportElement x=\"0\" y=\"0\" width=\"100\" height=\"20\"/>\n\t\t\t\t<text><![CDATA[row %d of a long template, written out to make it longer than the prompt budget]]></text>\n\t\t\t</staticText>\n", i)
	}
	fmt.Fprintf(&b, "\t\t\t<staticText>\n\t\t\t\t<reportElement x=\"0\" y=\"0\" width=\"100\" height=\"20\"/>\n\t\t\t\t<text><![CDATA[last row %d]]></text>\n\t\t\t</staticText>\n", n)
	return strings.Replace(goodJRXML, "\t\t</band>\n\t</detail>", b.String()+"\t\t</band>\n\t</detail>", 1)
}

// intentReply answers the model's intent question when it is asked one.
func intentReply(r llmtest.Request) (llmtest.Reply, bool) {
	if strings.Contains(allText(r), "You route the messages of a JasperReports report designer") {
		return llmtest.Text(`{"intent":"modify_report"}`), true
	}
	return llmtest.Reply{}, false
}

// TestLongTemplateInWindows: an uploaded template longer than the prompt
// budget of the model's window is never cut: it is sent as its header and
// band windows, each request within the window, and the changed pieces make
// the whole template again, its last element kept.
func TestLongTemplateInWindows(t *testing.T) {
	const window = 3000
	src := longJRXML(120)
	if len(src) < 6000*2 {
		t.Fatalf("the template is only %d bytes", len(src))
	}
	model := llmtest.New(t)
	model.Handle(func(r llmtest.Request) llmtest.Reply {
		if rep, ok := intentReply(r); ok {
			return rep
		}
		msgs := r.Messages()
		last := msgs[len(msgs)-1].Content
		if !strings.HasPrefix(last, "The request: ") {
			return llmtest.Text("unexpected request")
		}
		p := last[strings.Index(last, "```xml\n")+7:]
		p = p[:strings.LastIndex(p, "\n```")]
		return llmtest.Text("```xml\n" + strings.Replace(p, "销售报表 Sales", "月度销售报表", 1) + "\n```")
	})
	l := serve(t, model, filepath.Join(t.TempDir(), "loom.db"), report.ServerOptions{ContextTokens: window})
	id := l.uploadID("w1", "long.jrxml", []byte(src))
	tr := l.run("w1", report.Input{Upload: id, Message: "根据这个模板生成报表，标题改成月度销售报表"})
	st := tr.state
	if st.Turn.Status != "pass" || !strings.Contains(st.JRXML, "月度销售报表") || !strings.Contains(st.JRXML, "last row 120") {
		t.Fatalf("status %s problems %v; the template changed by windows:\n%.600s", st.Turn.Status, st.Turn.Problems, st.JRXML)
	}
	if st.JRXML != strings.Replace(src, "销售报表 Sales", "月度销售报表", 1) {
		t.Errorf("the template put back together differs from the one asked for")
	}
	reqs := model.Requests()
	windows := 0
	for _, r := range reqs {
		text := allText(r)
		if strings.Contains(text, "last row 120") && strings.Contains(text, "<queryString>") {
			t.Errorf("a request held the whole template (%d bytes)", len(text))
		}
		// Within the window: at most 4 bytes a token is a generous bound
		// for this ASCII-heavy text.
		if len(text) > 4*window {
			t.Errorf("a request of %d bytes does not fit a window of %d tokens", len(text), window)
		}
		if strings.Contains(text, "The request: ") {
			windows++
		}
	}
	if windows < 3 || st.Turn.Windows != windows {
		t.Errorf("%d windows sent, the turn counts %d", windows, st.Turn.Windows)
	}
}

// TestOlderTurnsSummarised: past the window of recent messages, older
// turns reach the model as a summary the model wrote, made once for each
// part of the conversation (the next summary starts from the last), kept
// in the thread's state, and in the prompts of the turns after.
func TestOlderTurnsSummarised(t *testing.T) {
	model := llmtest.New(t, xmlReply(goodJRXML))
	summaries := 0
	model.Handle(func(r llmtest.Request) llmtest.Reply {
		if rep, ok := intentReply(r); ok {
			return rep
		}
		text := allText(r)
		if strings.Contains(text, "You summarise the older part") {
			summaries++
			if summaries > 1 && !strings.Contains(text, fmt.Sprintf("SUMMARY-%d", summaries-1)) {
				t.Errorf("summary %d does not start from the one before:\n%s", summaries, text)
			}
			return llmtest.Text(fmt.Sprintf("SUMMARY-%d: the user wants a sales report with a bigger title.", summaries))
		}
		if strings.Count(text, "把标题字体改大") > 0 && strings.Count(text, "<jasperReport") > 0 {
			// a change: a bigger title each time
			n := strings.Count(text, "把标题字体改大")
			return xmlReply(strings.Replace(goodJRXML, `size="18"`, fmt.Sprintf(`size="%d"`, 18+n), 1))
		}
		return xmlReply(goodJRXML)
	})
	l := serve(t, model, filepath.Join(t.TempDir(), "loom.db"), report.ServerOptions{})
	l.run("c1", report.Input{Message: "generate a sales report"})
	var st report.State
	for i := range 7 {
		st = l.run("c1", report.Input{Message: fmt.Sprintf("把标题字体改大 (%d)", i+1)}).state
	}
	if summaries == 0 || !strings.HasPrefix(st.Summary.Text, "SUMMARY-") || st.Summary.Count == 0 {
		t.Fatalf("%d summaries; the state keeps %+v", summaries, st.Summary)
	}
	if len(st.History) <= 10 {
		t.Fatalf("only %d messages in the history", len(st.History))
	}
	reqs := model.Requests()
	last := allText(reqs[len(reqs)-1])
	if !strings.Contains(last, st.Summary.Text) {
		t.Errorf("the last request does not carry the summary %q:\n%s", st.Summary.Text, last)
	}
	if strings.Contains(last, "把标题字体改大 (1)") {
		t.Errorf("the last request still holds the first change, which the summary covers")
	}
	b, _ := json.Marshal(st.Summary)
	t.Logf("%d summaries for %d messages; cached %s", summaries, len(st.History), b)
}
