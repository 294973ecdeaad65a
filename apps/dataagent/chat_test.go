package dataagent_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/dataagent"
	"github.com/loomkit/loom/datasource"
)

// TestFromChatOptions: leading option lines of a chat message choose the
// source, plan review and SQL only, in English or Chinese; a message
// without options is all question; bad options are errors that say why.
func TestFromChatOptions(t *testing.T) {
	for _, c := range []struct {
		text string
		want dataagent.Input
	}{
		{"Which city has the most customers?", dataagent.Input{Question: "Which city has the most customers?"}},
		{"source: sales\nreview: yes\nWhich city?", dataagent.Input{Question: "Which city?", Source: "sales", HumanReview: true}},
		{"SQL only: yes\nsource: dw\nHow many orders?\nIn 2024.", dataagent.Input{Question: "How many orders?\nIn 2024.", Source: "dw", NL2SQLOnly: true}},
		{"数据源：shop\n审核：是\n只要 SQL：否\n每个城市有多少客户？", dataagent.Input{Question: "每个城市有多少客户？", Source: "shop", HumanReview: true}},
		// A question with a colon is a question.
		{"Note: which products sold best?", dataagent.Input{Question: "Note: which products sold best?"}},
	} {
		raw, err := dataagent.FromChat(c.text)
		if err != nil {
			t.Fatalf("%q: %v", c.text, err)
		}
		var got dataagent.Input
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%q: got %+v, want %+v", c.text, got, c.want)
		}
	}
	for text, says := range map[string]string{
		"review: maybe\nWhich city?": `"maybe" is not yes or no`,
		"source: sales\n":            "no question",
	} {
		if _, err := dataagent.FromChat(text); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%q: error %v, want one saying %q", text, err, says)
		}
	}
}

// TestChatChoosesReviewAndSQLOnly: over /v1/chat/completions, "review:
// yes" makes the plan the reply and "yes" runs it; "sql only: yes"
// answers with the SQL and its table; an unknown source is said in the
// answer.
func TestChatChoosesReviewAndSQLOnly(t *testing.T) {
	src := dealer(t)
	m := newModel(t)
	front(m, "Which salespersons had the highest total sales?")
	m.decide(callPlanner, plan("sql", "total sale price by salesperson, highest first", "report", "a bar chart"))
	l := serve(t, m, filepath.Join(t.TempDir(), "loom.db"), dataagent.ServerOptions{Sources: []datasource.Config{src}})

	reply := l.chat("chat-review", "source: dealer\nreview: yes\nWho sold the most?")
	if !strings.Contains(reply, "1. [sql] total sale price by salesperson, highest first") || len(m.requests(callSQL)) != 0 {
		t.Fatalf("the plan is not the reply, or SQL ran before approval:\n%s", reply)
	}
	m.decide(callSQL, map[string]any{"sql": topSalesSQL}).
		decide(callConsistency, map[string]any{"consistent": true}).
		add(callReport, reportWithChart("the first"))
	if reply := l.chat("chat-review", "yes"); !strings.Contains(reply, "# Top salespersons") {
		t.Errorf("after approval:\n%s", reply)
	}

	front(m, "Which salespersons had the highest total sales?")
	m.decide(callSQL, map[string]any{"sql": topSalesSQL}).
		decide(callConsistency, map[string]any{"consistent": true})
	reply = l.chat("chat-sql", "SQL only: yes\nWho sold the most?")
	if !strings.Contains(reply, "```sql\n"+topSalesSQL) || !strings.Contains(reply, "| salesperson | total_sales |") || strings.Contains(reply, "# ") {
		t.Errorf("SQL only:\n%s", reply)
	}
	if st := l.state("chat-sql"); st.Plan == nil || len(st.Plan.Steps) != 1 || st.Answer == nil || st.Answer.Report != "" {
		t.Errorf("SQL only: plan %+v answer %+v", st.Plan, st.Answer)
	}
	m.left()

	if reply := l.chat("chat-nowhere", "source: nowhere\nWho sold the most?"); !strings.Contains(reply, `no data source "nowhere"`) || !strings.Contains(reply, "dealer") {
		t.Errorf("unknown source:\n%s", reply)
	}
}
