package dataagent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/dataagent"
	"github.com/loomkit/loom/apps/dataagent/sandbox"
	"github.com/loomkit/loom/datasource"
	"github.com/loomkit/loom/internal/testenv"
)

// topSalesSQL is the statement the scripted model writes for "who sold
// the most".
const topSalesSQL = `SELECT sp.first_name || ' ' || sp.last_name AS salesperson, sum(s.sale_price) AS total_sales
FROM sales s JOIN salespersons sp ON sp.id = s.salesperson_id
GROUP BY sp.id, sp.first_name, sp.last_name ORDER BY total_sales DESC LIMIT 5`

// front scripts the calls every analysis starts with: intent, query
// enhancement and feasibility.
func front(m *fakeModel, canonical string) {
	m.decide(callIntent, map[string]any{"kind": "analysis"}).
		decide(callEnhance, map[string]any{"canonical_query": canonical, "expanded_queries": []string{"total sale price by salesperson"}}).
		decide(callFeasibility, map[string]any{"kind": "analysis", "reason": "sales and salespersons hold it"})
}

func plan(steps ...string) map[string]any {
	var out []map[string]string
	for i := 0; i+1 < len(steps); i += 2 {
		out = append(out, map[string]string{"tool": steps[i], "instruction": steps[i+1]})
	}
	return map[string]any{"thought": "sum the sales", "steps": out}
}

func reportWithChart(top string) string {
	return fmt.Sprintf("# Top salespersons\n\n%s sold the most.\n\n```echarts\n{\"title\":{\"text\":\"Sales by salesperson\"},\"xAxis\":{\"type\":\"category\",\"data\":[%q,\"others\"]},\"yAxis\":{\"type\":\"value\"},\"series\":[{\"name\":\"sales\",\"type\":\"bar\",\"data\":[3,1]}]}\n```\n", top, top)
}

// TestQuestionToReport: a question on the test dealer (SQLite, made up
// for the tests) goes intent → evidence → enhance → schema → relations
// → feasibility → plan → SQL → consistency → execute → report; the report
// has its chart drawn as SVG in the HTML download, which another key
// cannot see; the next message on the thread carries the first turn in
// the model's context.
func TestQuestionToReport(t *testing.T) { questionToReport(t, dealer(t)) }

// TestQuestionToReportOnDefog is the same on the public defog car
// dealership loaded into PostgreSQL: an evaluation on data the team did
// not write.
func TestQuestionToReportOnDefog(t *testing.T) { questionToReport(t, defog(t, "car_dealership")) }

func questionToReport(t *testing.T, src datasource.Config) {
	rows := query(t, src, topSalesSQL)
	top := rows[0][0].(string)
	m := newModel(t)
	front(m, "Which salespersons had the highest total sales?")
	m.decide(callPlanner, plan("sql", "total sale price by salesperson, highest first", "report", "the top salespersons with a bar chart")).
		decide(callSQL, map[string]any{"sql": topSalesSQL}).
		decide(callConsistency, map[string]any{"consistent": true}).
		add(callReport, reportWithChart(top))
	l := serve(t, m, filepath.Join(t.TempDir(), "loom.db"), dataagent.ServerOptions{Sources: []datasource.Config{src}})

	st := l.run("sales-1", map[string]any{"question": "Who sold the most?"}, nil)
	if st.Intent == nil || st.Intent.Kind != "analysis" || st.Feasibility == nil || st.Feasibility.Kind != "analysis" {
		t.Fatalf("intent %+v feasibility %+v answer %+v", st.Intent, st.Feasibility, st.Answer)
	}
	if len(st.Tables) == 0 || !st.PlanValid || len(st.Plan.Steps) != 2 || st.Step != 2 {
		t.Errorf("tables %d, plan valid %v %+v, step %d", len(st.Tables), st.PlanValid, st.Plan, st.Step)
	}
	var joined bool
	for _, r := range st.Relations {
		joined = joined || r.From == "sales.salesperson_id" && r.To == "salespersons.id"
	}
	if !joined {
		t.Errorf("relations %+v lack sales.salesperson_id = salespersons.id", st.Relations)
	}
	if len(st.Results) != 1 || len(st.Results[0].Rows) != len(rows) || st.Results[0].Rows[0][0] != top {
		t.Fatalf("results %+v, want %d rows led by %s", st.Results, len(rows), top)
	}
	if st.Answer == nil || st.Answer.Failed || !strings.Contains(st.Answer.Report, "```echarts") || !strings.Contains(st.Answer.Report, "```sql\n"+topSalesSQL) {
		t.Fatalf("answer %+v", st.Answer)
	}
	if len(st.SQLErrors) != 0 {
		t.Errorf("sql errors %v", st.SQLErrors)
	}
	// The model saw the recalled schema and the result.
	if r := m.requests(callSQL); len(r) != 1 || !strings.Contains(allText(r[0]), "TABLE salespersons") || !strings.Contains(allText(r[0]), "sales.salesperson_id = salespersons.id") {
		t.Errorf("the SQL request lacks the schema or the join:\n%s", allText(m.requests(callSQL)[0]))
	}
	if r := m.requests(callReport); len(r) != 1 || !strings.Contains(allText(r[0]), "| "+top+" |") {
		t.Errorf("the report request lacks the result")
	}
	m.left()

	code, page := l.Do(keyA, "GET", "/api/v1/dataagent/reports/sales-1", nil)
	if code != 200 || !strings.Contains(string(page), "<svg") || !strings.Contains(string(page), "Sales by salesperson") || !strings.Contains(string(page), top) {
		t.Errorf("report page %d:\n%.600s", code, page)
	}
	code, md := l.Do(keyA, "GET", "/api/v1/dataagent/reports/sales-1?format=markdown", nil)
	if code != 200 || !strings.Contains(string(md), "# Top salespersons") {
		t.Errorf("markdown %d %.300s", code, md)
	}
	if code, _ := l.Do(keyB, "GET", "/api/v1/dataagent/reports/sales-1", nil); code != 404 {
		t.Errorf("another key's report: %d", code)
	}
	if code, b := l.Do(keyA, "GET", "/api/v1/dataagent/reports/sales-1?format=pdf", nil); code != 400 || !strings.Contains(string(b), "invalid_format") {
		t.Errorf("bad format: %d %s", code, b)
	}

	// The next message: small talk, told with the first turn in context.
	m.decide(callIntent, map[string]any{"kind": "chitchat", "reply": "You're welcome!"})
	if reply := l.chat("sales-1", "Thanks!"); reply != "You're welcome!" {
		t.Errorf("chat reply %q", reply)
	}
	intent := m.requests(callIntent)
	if len(intent) != 2 || !strings.Contains(userText(intent[1]), "Who sold the most?") || !strings.Contains(userText(intent[1]), top) {
		t.Errorf("the second turn's intent request lacks the first turn:\n%s", userText(intent[len(intent)-1]))
	}
	if st := l.state("sales-1"); st.Query != "Thanks!" || st.Plan != nil || len(st.History) != 4 {
		t.Errorf("second turn: query %q plan %+v history %d", st.Query, st.Plan, len(st.History))
	}
}

// TestPlanRejectedWithAComment: with human_review the run waits at the
// plan; rejected with a comment, the planner is asked again with the
// comment and the run waits again; approved, it runs to the report.
func TestPlanRejectedWithAComment(t *testing.T) {
	src := dealer(t)
	m := newModel(t)
	front(m, "Which salespersons had the highest total sales?")
	m.decide(callPlanner, plan("sql", "count the sales of each salesperson", "report", "a table")).
		decide(callPlanner, plan("sql", "total sale price by salesperson, highest first", "report", "a bar chart"))
	l := serve(t, m, filepath.Join(t.TempDir(), "loom.db"), dataagent.ServerOptions{Sources: []datasource.Config{src}})

	st := l.run("review-1", map[string]any{"question": "Who sold the most?", "human_review": true}, nil)
	if l.status("review-1") != "interrupted" || st.Answer != nil || st.Plan == nil || st.Plan.Steps[0].Instruction != "count the sales of each salesperson" {
		t.Fatalf("not waiting at the first plan: status %s plan %+v answer %+v", l.status("review-1"), st.Plan, st.Answer)
	}
	if len(m.requests(callSQL)) != 0 {
		t.Fatal("SQL was generated before the plan was approved")
	}
	code, b := l.Do(keyA, "GET", "/threads/review-1/state", nil)
	if code != 200 || !strings.Contains(string(b), "1. [sql] count the sales of each salesperson") || !strings.Contains(string(b), "reject it with a note") {
		t.Errorf("the interrupt does not show the plan: %d %.600s", code, b)
	}

	st = l.run("review-1", nil, map[string]any{"accept": false, "note": "rank them by the total sale price, not the number of sales"})
	planner := m.requests(callPlanner)
	if len(planner) != 2 {
		t.Fatalf("%d planner requests, want 2", len(planner))
	}
	second := userText(planner[1])
	if !strings.Contains(second, "rank them by the total sale price, not the number of sales") || !strings.Contains(second, "count the sales of each salesperson") {
		t.Errorf("the re-plan does not see the comment and the rejected plan:\n%s", second)
	}
	if strings.Contains(userText(planner[0]), "rank them by") {
		t.Error("the first plan saw the comment")
	}
	if l.status("review-1") != "interrupted" || st.Plan.Steps[0].Instruction != "total sale price by salesperson, highest first" || st.Feedback == nil || st.Feedback.Accept {
		t.Fatalf("not waiting at the second plan: plan %+v feedback %+v", st.Plan, st.Feedback)
	}

	m.decide(callSQL, map[string]any{"sql": topSalesSQL}).
		decide(callConsistency, map[string]any{"consistent": true}).
		add(callReport, reportWithChart("the first"))
	reply := l.chat("review-1", "yes")
	if !strings.Contains(reply, "# Top salespersons") {
		t.Errorf("after approval: %s", reply)
	}
	st = l.state("review-1")
	if !st.Approved || st.Answer == nil || st.Answer.Report == "" || len(st.Results) != 1 || st.HumanReview {
		t.Errorf("approved %v answer %+v results %d human_review left on %v", st.Approved, st.Answer, len(st.Results), st.HumanReview)
	}
	if sql := m.requests(callSQL); len(sql) != 1 || !strings.Contains(userText(sql[0]), "total sale price by salesperson, highest first") {
		t.Error("the SQL step is not the approved plan's")
	}
	m.left()
}

// TestPlanRejectedWithoutAComment ends the turn.
func TestPlanRejectedWithoutAComment(t *testing.T) {
	src := dealer(t)
	m := newModel(t)
	front(m, "Which salespersons had the highest total sales?")
	m.decide(callPlanner, plan("sql", "count the sales of each salesperson", "report", "a table"))
	l := serve(t, m, filepath.Join(t.TempDir(), "loom.db"), dataagent.ServerOptions{Sources: []datasource.Config{src}})
	l.run("review-2", map[string]any{"question": "Who sold the most?", "human_review": true}, nil)
	st := l.run("review-2", nil, map[string]any{"accept": false})
	if st.Answer == nil || !st.Answer.Failed || !strings.Contains(st.Answer.Text, "rejected") || l.status("review-2") == "interrupted" {
		t.Errorf("answer %+v status %s", st.Answer, l.status("review-2"))
	}
	if len(m.requests(callPlanner)) != 1 || len(m.requests(callSQL)) != 0 {
		t.Error("the rejected plan was re-planned or run")
	}
	m.left()
}

// TestPlanRepairs: a plan that does not validate goes back to the planner
// with the reason; after two repairs a third bad plan ends the run.
func TestPlanRepairs(t *testing.T) {
	src := dealer(t)
	m := newModel(t)
	front(m, "Which salespersons had the highest total sales?")
	bad := plan("python", "rank the salespersons", "report", "a chart")
	m.decide(callPlanner, bad).decide(callPlanner, bad).decide(callPlanner, bad)
	l := serve(t, m, filepath.Join(t.TempDir(), "loom.db"), dataagent.ServerOptions{Sources: []datasource.Config{src}})
	st := l.run("repair-1", map[string]any{"question": "Who sold the most?"}, nil)
	planner := m.requests(callPlanner)
	if len(planner) != 3 || !strings.Contains(userText(planner[1]), "step 1 is python but no sql step comes before it") {
		t.Fatalf("%d planner requests; the second:\n%s", len(planner), userText(planner[min(1, len(planner)-1)]))
	}
	if st.PlanValid || st.Answer == nil || !st.Answer.Failed || !strings.Contains(st.Answer.Text, "could not make a valid plan") {
		t.Errorf("valid %v answer %+v", st.PlanValid, st.Answer)
	}
	m.left()
}

// TestUnreadablePlan: when the planner's answers cannot be read as a
// plan, the run ends saying so in words, without the parser's error.
func TestUnreadablePlan(t *testing.T) {
	src := dealer(t)
	m := newModel(t)
	front(m, "Which salespersons had the highest total sales?")
	for range 9 { // three plans, each asked three times
		m.add(callPlanner, "I would look at the sales table first.")
	}
	l := serve(t, m, filepath.Join(t.TempDir(), "loom.db"), dataagent.ServerOptions{Sources: []datasource.Config{src}})
	st := l.run("unreadable-1", map[string]any{"question": "Who sold the most?"}, nil)
	if st.Answer == nil || !st.Answer.Failed || !strings.Contains(st.Answer.Text, "could not be read as one") {
		t.Fatalf("answer %+v", st.Answer)
	}
	for _, leak := range []string{"contract", "attempts", "no usable answer", "DECISION"} {
		if strings.Contains(st.Answer.Text, leak) {
			t.Errorf("the answer shows %q: %s", leak, st.Answer.Text)
		}
	}
	m.left()
}

// TestUnreadableSQL: when no SQL answer can be read, the run ends
// saying so in words, without the parser's error.
func TestUnreadableSQL(t *testing.T) {
	src := dealer(t)
	m := newModel(t)
	front(m, "Which salespersons had the highest total sales?")
	m.decide(callPlanner, plan("sql", "total sale price by salesperson"))
	for range dataagent.SQLTries * 3 { // each try asked three times
		m.add(callSQL, "Let me think about the joins.")
	}
	l := serve(t, m, filepath.Join(t.TempDir(), "loom.db"), dataagent.ServerOptions{Sources: []datasource.Config{src}})
	st := l.run("unreadable-sql-1", map[string]any{"question": "Who sold the most?"}, nil)
	if st.Answer == nil || !st.Answer.Failed || !strings.Contains(st.Answer.Text, "could not be read as SQL") || strings.Contains(st.Answer.Text, "contract") {
		t.Fatalf("answer %+v", st.Answer)
	}
	m.left()
}

// TestSQLFailsTwice: two statements that fail in the database are each
// sent back to sql_generate with the error, which the next request
// carries; the third runs.
func TestSQLFailsTwice(t *testing.T) {
	src := dealer(t)
	m := newModel(t)
	front(m, "Which salespersons had the highest total sales?")
	m.decide(callPlanner, plan("sql", "total sale price by salesperson, highest first", "report", "a bar chart")).
		decide(callSQL, map[string]any{"sql": "SELECT salesperson, sum(price) FROM sales GROUP BY salesperson"}).
		decide(callSQL, map[string]any{"sql": "SELECT salesperson_id, sum(price) FROM sales GROUP BY salesperson_id"}).
		decide(callSQL, map[string]any{"sql": topSalesSQL}).
		decide(callConsistency, map[string]any{"consistent": true}).
		decide(callConsistency, map[string]any{"consistent": true}).
		decide(callConsistency, map[string]any{"consistent": true}).
		add(callReport, reportWithChart("the first"))
	l := serve(t, m, filepath.Join(t.TempDir(), "loom.db"), dataagent.ServerOptions{Sources: []datasource.Config{src}})
	st := l.run("retry-1", map[string]any{"question": "Who sold the most?"}, nil)
	if st.Answer == nil || st.Answer.Failed || len(st.Results) != 1 || st.Results[0].SQL != topSalesSQL {
		t.Fatalf("answer %+v results %+v", st.Answer, st.Results)
	}
	if len(st.SQLErrors) != 2 || !strings.Contains(st.SQLErrors[0], "no such column: salesperson") || !strings.Contains(st.SQLErrors[1], "no such column: price") {
		t.Errorf("errors %q", st.SQLErrors)
	}
	sql := m.requests(callSQL)
	if len(sql) != 3 {
		t.Fatalf("%d SQL requests", len(sql))
	}
	if strings.Contains(userText(sql[0]), "no such column") {
		t.Error("the first request already has an error")
	}
	if !strings.Contains(userText(sql[1]), "no such column: salesperson") {
		t.Errorf("the second request lacks the first error:\n%s", userText(sql[1]))
	}
	if third := userText(sql[2]); !strings.Contains(third, "no such column: salesperson") || !strings.Contains(third, "no such column: price") {
		t.Errorf("the third request lacks the errors:\n%s", third)
	}
	m.left()
}

// TestSameSQLTwice: a statement generated again right after it failed is
// a failure of its own, counted without running it or checking it again.
func TestSameSQLTwice(t *testing.T) {
	src := dealer(t)
	m := newModel(t)
	front(m, "Which salespersons had the highest total sales?")
	wrong := "SELECT salesperson, sum(price) FROM sales GROUP BY salesperson"
	m.decide(callPlanner, plan("sql", "total sale price by salesperson, highest first")).
		decide(callSQL, map[string]any{"sql": wrong}).
		decide(callSQL, map[string]any{"sql": wrong + ";"}).
		decide(callSQL, map[string]any{"sql": topSalesSQL}).
		decide(callConsistency, map[string]any{"consistent": true}).
		decide(callConsistency, map[string]any{"consistent": true}).
		add(callReport, "# Sales\n\nDone.")
	l := serve(t, m, filepath.Join(t.TempDir(), "loom.db"), dataagent.ServerOptions{Sources: []datasource.Config{src}})
	st := l.run("same-1", map[string]any{"question": "Who sold the most?"}, nil)
	if st.Answer == nil || st.Answer.Failed || len(st.Results) != 1 {
		t.Fatalf("answer %+v", st.Answer)
	}
	if len(st.SQLErrors) != 2 || !strings.Contains(st.SQLErrors[1], "the same SQL was generated twice in a row") {
		t.Errorf("errors %q", st.SQLErrors)
	}
	if n := len(m.requests(callConsistency)); n != 2 {
		t.Errorf("%d consistency checks, want 2 (the repeat is not checked)", n)
	}
	if sql := m.requests(callSQL); len(sql) != 3 || !strings.Contains(userText(sql[2]), "the same SQL was generated twice in a row") {
		t.Error("the third SQL request does not say the SQL was repeated")
	}
	// No chart was written by the model: the result's is added.
	if !strings.Contains(st.Answer.Report, "```echarts") {
		t.Errorf("report without the result's chart:\n%s", st.Answer.Report)
	}
	m.left()
}

// TestSemanticConsistencyFails: a statement the check rejects goes back
// to sql_generate with the reason, without running.
func TestSemanticConsistencyFails(t *testing.T) {
	src := dealer(t)
	m := newModel(t)
	front(m, "Which salespersons had the highest total sales?")
	m.decide(callPlanner, plan("sql", "total sale price by salesperson, highest first")).
		decide(callSQL, map[string]any{"sql": "SELECT salesperson_id, count(*) FROM sales GROUP BY salesperson_id"}).
		decide(callSQL, map[string]any{"sql": "DELETE FROM sales"}).
		decide(callSQL, map[string]any{"sql": topSalesSQL}).
		decide(callConsistency, map[string]any{"consistent": false, "reason": "it counts sales instead of summing the sale price"}).
		decide(callConsistency, map[string]any{"consistent": true}).
		add(callReport, "# Sales\n\nDone.")
	l := serve(t, m, filepath.Join(t.TempDir(), "loom.db"), dataagent.ServerOptions{Sources: []datasource.Config{src}})
	st := l.run("semantic-1", map[string]any{"question": "Who sold the most?"}, nil)
	sql := m.requests(callSQL)
	if st.Answer == nil || st.Answer.Failed || len(sql) != 3 || len(st.SQLErrors) != 2 {
		t.Fatalf("answer %+v tries %d errors %q", st.Answer, len(sql), st.SQLErrors)
	}
	if !strings.Contains(userText(sql[1]), "it counts sales instead of summing the sale price") || !strings.Contains(userText(sql[2]), "refused before running") {
		t.Errorf("the reasons are not fed back:\n%s\n---\n%s", userText(sql[1]), userText(sql[2]))
	}
	if rows := query(t, src, "SELECT count(*) FROM sales"); fmt.Sprint(rows[0][0]) == "0" {
		t.Error("the DELETE ran")
	}
	m.left()
}

// TestObjectionDisputed: a statement the check wrongly rejects, written
// again by the model, is checked once more with the objection shown (not
// failed as a repeat), and runs when the check then passes it.
func TestObjectionDisputed(t *testing.T) {
	src := dealer(t)
	m := newModel(t)
	front(m, "Which salespersons had the highest total sales?")
	m.decide(callPlanner, plan("sql", "total sale price by salesperson, highest first")).
		decide(callSQL, map[string]any{"sql": topSalesSQL}).
		decide(callSQL, map[string]any{"sql": topSalesSQL}).
		decide(callConsistency, map[string]any{"consistent": false, "reason": "it should count sales"}).
		decide(callConsistency, map[string]any{"consistent": true}).
		add(callReport, "# Sales\n\nDone.")
	l := serve(t, m, filepath.Join(t.TempDir(), "loom.db"), dataagent.ServerOptions{Sources: []datasource.Config{src}})
	st := l.run("disputed-1", map[string]any{"question": "Who sold the most?"}, nil)
	if n := len(m.requests(callSQL)); st.Answer == nil || st.Answer.Failed || len(st.Results) != 1 || n != 2 {
		t.Fatalf("answer %+v tries %d errors %q", st.Answer, n, st.SQLErrors)
	}
	checks := m.requests(callConsistency)
	if len(checks) != 2 {
		t.Fatalf("%d consistency checks, want 2 (the resubmitted statement is checked again)", len(checks))
	}
	if strings.Contains(userText(checks[0]), "it should count sales") || !strings.Contains(userText(checks[1]), "it should count sales") {
		t.Errorf("the second check does not show the objection (or the first does):\n%s", userText(checks[1]))
	}
	m.left()
}

// TestNL2SQLOnly answers with the SQL and the result, without a plan from
// the model or a report.
func TestNL2SQLOnly(t *testing.T) {
	src := dealer(t)
	m := newModel(t)
	front(m, "Which salespersons had the highest total sales?")
	m.decide(callSQL, map[string]any{"sql": topSalesSQL}).
		decide(callConsistency, map[string]any{"consistent": true})
	l := serve(t, m, filepath.Join(t.TempDir(), "loom.db"), dataagent.ServerOptions{Sources: []datasource.Config{src}})
	st := l.run("nl2sql-1", map[string]any{"question": "Who sold the most?", "nl2sql_only": true}, nil)
	if st.Answer == nil || st.Answer.Report != "" || st.Answer.SQL != topSalesSQL || len(st.Answer.Rows) == 0 || st.Answer.Columns[0] != "salesperson" {
		t.Fatalf("answer %+v", st.Answer)
	}
	if len(m.requests(callPlanner)) != 0 || len(m.requests(callReport)) != 0 {
		t.Error("nl2sql_only asked for a plan or a report")
	}
	if sql := m.requests(callSQL); len(sql) != 1 || !strings.Contains(userText(sql[0]), "Which salespersons had the highest total sales?") {
		t.Error("the SQL step is not the question")
	}
	if code, _ := l.Do(keyA, "GET", "/api/v1/dataagent/reports/nl2sql-1", nil); code != 404 {
		t.Errorf("a report for nl2sql_only: %d", code)
	}
	if st.NL2SQLOnly {
		t.Error("nl2sql_only is left on for the next question")
	}
	m.left()
}

// pythonPlan scripts a plan with a Python step and its SQL.
func pythonPlan(m *fakeModel) {
	front(m, "How are sale prices spread across salespersons?")
	m.decide(callPlanner, plan("sql", "total sale price by salesperson", "python", "the mean and standard deviation of the totals", "report", "the spread")).
		decide(callSQL, map[string]any{"sql": topSalesSQL}).
		decide(callConsistency, map[string]any{"consistent": true})
}

// TestPythonFailsThenFallback: a script that fails in the sandbox is
// written again with its traceback, up to the configured tries; then the
// step is analysed without Python and the report says so in a sentence,
// without the traceback.
func TestPythonFailsThenFallback(t *testing.T) {
	if err := (&sandbox.Runner{}).Check(context.Background()); err != nil {
		testenv.Need(t, "no Python sandbox here (install bubblewrap and python3-pandas)", err)
	}
	src := dealer(t)
	m := newModel(t)
	pythonPlan(m)
	for i := range 3 {
		m.add(callPython, fmt.Sprintf("```python\nimport pandas as pd\ndf = pd.read_csv('data_1.csv')\nraise ValueError('boom %d')\n```", i+1))
	}
	m.add(callAnalyze, "The totals range widely.").
		add(callReport, "# Spread of sales\n\nThe totals range widely.")
	l := serve(t, m, filepath.Join(t.TempDir(), "loom.db"), dataagent.ServerOptions{Sources: []datasource.Config{src}})
	st := l.run("python-1", map[string]any{"question": "How spread out are the sales?"}, nil)
	if !st.PythonFallback || len(st.PythonErrors) != 3 || !strings.Contains(st.PythonErrors[0], "ValueError: boom 1") {
		t.Fatalf("fallback %v errors %q answer %+v", st.PythonFallback, st.PythonErrors, st.Answer)
	}
	py := m.requests(callPython)
	if len(py) != 3 || strings.Contains(userText(py[0]), "boom") || !strings.Contains(userText(py[1]), "ValueError: boom 1") || !strings.Contains(userText(py[2]), "ValueError: boom 2") {
		t.Errorf("%d Python requests; the errors are not fed back", len(py))
	}
	if !strings.Contains(userText(py[0]), "data_1.csv") || !strings.Contains(userText(py[0]), "salesperson, total_sales") {
		t.Errorf("the Python request does not describe the data:\n%s", userText(py[0]))
	}
	an := m.requests(callAnalyze)
	if len(an) != 1 || !strings.Contains(userText(an[0]), "Python could not run") || !strings.Contains(userText(an[0]), "| salesperson | total_sales |") {
		t.Errorf("the analysis is not asked in fallback mode with the data")
	}
	if st.Answer == nil || !strings.Contains(st.Answer.Report, "this analysis ran without Python") || !strings.Contains(st.Answer.Fallback, "failed 3 times") {
		t.Errorf("the report does not say Python did not run:\n%+v", st.Answer)
	}
	// The tracebacks were for the model; the reader gets a sentence.
	if st.Answer != nil && (strings.Contains(st.Answer.Report, "boom") || strings.Contains(st.Answer.Report, "Traceback") || strings.Contains(st.Answer.Fallback, "boom")) {
		t.Errorf("the report shows Python's error:\n%s", st.Answer.Report)
	}
	if an := m.requests(callAnalyze); len(an) == 1 && strings.Contains(userText(an[0]), "Traceback") {
		t.Errorf("the fallback analysis is given the traceback to copy into the report")
	}
	if len(st.PythonAnalysis) != 1 || !strings.Contains(st.PythonAnalysis[0], "The totals range widely.") {
		t.Errorf("analysis %q", st.PythonAnalysis)
	}
	m.left()
}

// TestPythonRuns: a script that works in the sandbox has its output read
// by python_analyze, and the report is written from the findings.
func TestPythonRuns(t *testing.T) {
	if err := (&sandbox.Runner{}).Check(context.Background()); err != nil {
		testenv.Need(t, "no Python sandbox here (install bubblewrap and python3-pandas)", err)
	}
	src := dealer(t)
	totals := query(t, src, "SELECT count(*) FROM ("+topSalesSQL+") t")
	m := newModel(t)
	pythonPlan(m)
	m.add(callPython, "```python\nimport pandas as pd\nimport matplotlib.pyplot as plt\ndf = pd.read_csv('data_1.csv')\nprint('rows', len(df))\nprint('max', df['total_sales'].max())\n"+
		"df['total_sales'].plot.bar()\nplt.savefig('sales.png')\nopen('fake.png', 'w').write('not a picture')\n```").
		add(callAnalyze, "Five salespersons; the top total is shown.").
		add(callReport, "# Spread of sales\n\nFive salespersons.")
	l := serve(t, m, filepath.Join(t.TempDir(), "loom.db"), dataagent.ServerOptions{Sources: []datasource.Config{src}})
	st := l.run("python-2", map[string]any{"question": "How spread out are the sales?"}, nil)
	if !st.PythonOK || st.PythonFallback || len(st.PythonErrors) != 0 || st.Answer == nil || st.Answer.Fallback != "" {
		t.Fatalf("ok %v fallback %v errors %q answer %+v", st.PythonOK, st.PythonFallback, st.PythonErrors, st.Answer)
	}
	want := fmt.Sprintf("rows %d", totals[0][0])
	if an := m.requests(callAnalyze); len(an) != 1 || !strings.Contains(userText(an[0]), want) {
		t.Errorf("the analysis request lacks the script's output %q", want)
	}
	if r := m.requests(callReport); len(r) != 1 || !strings.Contains(userText(r[0]), "Five salespersons; the top total is shown.") || !strings.Contains(userText(r[0]), "sales.png") {
		t.Error("the report request lacks the findings or the saved chart's name")
	}
	// The chart the script saved reaches the report (the file that is
	// not a PNG does not), the page shows it, a chat names it.
	if len(st.Images) != 1 || st.Images[0].Name != "sales.png" || !strings.Contains(st.Answer.Report, "](data:image/png;base64,") {
		t.Fatalf("images %d, report:\n%.600s", len(st.Images), st.Answer.Report)
	}
	if code, page := l.Do(keyA, "GET", "/api/v1/dataagent/reports/python-2", nil); code != 200 || !strings.Contains(string(page), `<img src="data:image/png;base64,`) {
		t.Errorf("report page %d without the chart", code)
	}
	raw, _ := json.Marshal(st)
	if reply := dataagent.Reply(raw, nil); !strings.Contains(reply, "(chart: sales, on the web page)") || strings.Contains(reply, "base64") {
		t.Errorf("chat reply:\n%.600s", reply)
	}
	m.left()
}

// TestNoSandbox: without bwrap the Python step is analysed without Python
// at once, and the report says why.
func TestNoSandbox(t *testing.T) {
	src := dealer(t)
	m := newModel(t)
	pythonPlan(m)
	m.add(callPython, "```python\nprint(1)\n```").
		add(callAnalyze, "Analysed from the totals.").
		add(callReport, "# Spread of sales\n\nAnalysed from the totals.")
	l := serve(t, m, filepath.Join(t.TempDir(), "loom.db"), dataagent.ServerOptions{
		Sources: []datasource.Config{src}, Sandbox: sandbox.Runner{Bwrap: "/nonexistent/bwrap"},
	})
	st := l.run("python-3", map[string]any{"question": "How spread out are the sales?"}, nil)
	if !st.PythonFallback || len(st.PythonErrors) != 0 || st.Answer == nil || !strings.Contains(st.Answer.Report, "this analysis ran without Python") || !strings.Contains(st.Answer.Report, "bwrap") {
		t.Fatalf("fallback %v errors %q answer %+v", st.PythonFallback, st.PythonErrors, st.Answer)
	}
	// What is missing, in words; not the path or the program's error.
	if strings.Contains(st.Answer.Report, "/nonexistent") || strings.Contains(st.Answer.Report, "no such file") {
		t.Errorf("the report shows the sandbox's error: %s", st.Answer.Report)
	}
	m.left()
}

// TestSQLGivesUpAfterTenTries: ten statements that all fail end the turn
// with the last error, without an eleventh request.
func TestSQLGivesUpAfterTenTries(t *testing.T) {
	src := dealer(t)
	m := newModel(t)
	front(m, "Which salespersons had the highest total sales?")
	m.decide(callPlanner, plan("sql", "total sale price by salesperson, highest first"))
	for i := range dataagent.SQLTries {
		m.decide(callSQL, map[string]any{"sql": fmt.Sprintf("SELECT no_such_column_%d FROM sales", i)}).
			decide(callConsistency, map[string]any{"consistent": true})
	}
	l := serve(t, m, filepath.Join(t.TempDir(), "loom.db"), dataagent.ServerOptions{Sources: []datasource.Config{src}})
	st := l.run("giveup-1", map[string]any{"question": "Who sold the most?"}, nil)
	if len(st.SQLErrors) != dataagent.SQLTries || st.Answer == nil || !st.Answer.Failed ||
		!strings.Contains(st.Answer.Text, "10 tries") || !strings.Contains(st.Answer.Text, "no_such_column_9") {
		t.Errorf("errors %d answer %+v", len(st.SQLErrors), st.Answer)
	}
	if n := len(m.requests(callSQL)); n != dataagent.SQLTries {
		t.Errorf("%d SQL requests, want %d", n, dataagent.SQLTries)
	}
	if len(m.requests(callReport)) != 0 || len(st.Results) != 0 {
		t.Error("a report was written without a result")
	}
	m.left()
}
