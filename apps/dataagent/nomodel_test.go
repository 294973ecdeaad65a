package dataagent_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/dataagent"
	"github.com/loomkit/loom/datasource/datasourcetest"
	"github.com/loomkit/loom/llm/openai"
)

// TestWithoutAModel: on the demo shop with its demo knowledge and no
// model, a question close to a stored example is answered by the
// example's SQL, said as such, with a report and its chart; the HTML page
// draws it; another question says which variables configure a model and
// what recall found; the knowledge API is mounted beside it.
func TestWithoutAModel(t *testing.T) {
	dir := t.TempDir()
	l := serve(t, nil, filepath.Join(dir, "loom.db"), dataagent.ServerOptions{DemoPath: filepath.Join(dir, "shop.db")})

	reply := l.chat("demo-1", "How many customers are there in each city?")
	for _, want := range []string{"No language model is configured", "How many customers are there in each city?", "| San Francisco | 23 |", "SELECT city, count(*) AS customers FROM customers", "/api/v1/dataagent/reports/demo-1"} {
		if !strings.Contains(reply, want) {
			t.Errorf("reply lacks %q:\n%s", want, reply)
		}
	}
	st := l.state("demo-1")
	if !strings.Contains(st.Answer.Report, "```echarts") || strings.Contains(st.Answer.Report, "| city | customers |") {
		t.Errorf("the report does not show the result as a chart (and only as a chart):\n%s", st.Answer.Report)
	}
	if st.Example == nil || st.Example.Match < dataagent.DefaultMatch || st.Answer == nil || st.Answer.FromExample != "How many customers are there in each city?" {
		t.Fatalf("example %+v answer %+v", st.Example, st.Answer)
	}
	if len(st.Evidence) == 0 || len(st.Tables) == 0 || len(st.Results) != 1 || len(st.Results[0].Rows) != 12 {
		t.Errorf("evidence %d tables %d results %+v", len(st.Evidence), len(st.Tables), st.Results)
	}
	code, page := l.Do(keyA, "GET", "/api/v1/dataagent/reports/demo-1", nil)
	if code != 200 || strings.Count(string(page), "<svg") < 1 || !strings.Contains(string(page), "San Francisco") {
		t.Errorf("report page %d:\n%.400s", code, page)
	}

	// In Chinese, a question worded a little differently.
	reply = l.chat("demo-2", "每个城市分别有多少客户？")
	if !strings.Contains(reply, "尚未配置语言模型") || !strings.Contains(reply, "每个城市有多少客户？") || !strings.Contains(reply, "带图表的网页版报告") {
		t.Errorf("Chinese reply:\n%s", reply)
	}

	// The questions the README lists answer at once.
	for i, q := range []string{"2024 年每个月的销售额是多少？", "What was the revenue in each month of 2024?", "各品类的销售额是多少？",
		"What is the revenue of each category?", "订单取消率是多少？", "What is the order cancellation rate?"} {
		if reply := l.chat(fmt.Sprintf("readme-%d", i), q); !strings.Contains(reply, "stored example question") && !strings.Contains(reply, "示例问题") {
			t.Errorf("%s is not answered from its example:\n%s", q, reply)
		}
	}

	// A long conversation: the model's context keeps the recent turns
	// and a summary of the older ones.
	for _, q := range []string{"How many customers are there in each city?", "What is the order cancellation rate?", "What is the average order value?", "How many orders are there in each status?", "What is the repeat purchase rate?"} {
		l.chat("long-1", q)
	}
	if st := l.state("long-1"); st.Summary.Count == 0 || !strings.Contains(st.Context, "How many customers are there in each city?") || !strings.Contains(st.Context, "How many orders are there in each status?") || len(st.History) != 10 {
		t.Errorf("summary %+v history %d context:\n%s", st.Summary, len(st.History), st.Context)
	}

	// A question no example matches: the variables to set, and what
	// recall found.
	reply = l.chat("demo-3", "Which products are most often returned by customers in Berlin?")
	for _, want := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "LOOM_MODEL", "Tables that look relevant"} {
		if !strings.Contains(reply, want) {
			t.Errorf("reply lacks %q:\n%s", want, reply)
		}
	}
	if st := l.state("demo-3"); st.Answer == nil || !st.Answer.Failed || st.Plan != nil || len(st.Tables) == 0 {
		t.Errorf("answer %+v plan %+v tables %d", st.Answer, st.Plan, len(st.Tables))
	}

	// nl2sql_only from an example: the SQL and the table, no report.
	st = l.run("demo-4", map[string]any{"question": "What is the order cancellation rate?", "nl2sql_only": true}, nil)
	if st.Answer == nil || st.Answer.Report != "" || !strings.Contains(st.Answer.SQL, "cancellation_rate") || len(st.Answer.Rows) != 1 {
		t.Errorf("nl2sql_only answer %+v", st.Answer)
	}

	// The knowledge API, per key.
	code, b := l.Do(keyA, "GET", "/api/v1/dataagent/knowledge/examples?source=shop", nil)
	if code != 200 || !strings.Contains(string(b), "How many customers are there in each city?") {
		t.Errorf("knowledge examples: %d %.300s", code, b)
	}
	code, b = l.Do(keyA, "POST", "/api/v1/dataagent/knowledge/examples", map[string]any{"source": "shop", "question": "How many products are there?", "sql": "SELECT count(*) AS products FROM products"})
	if code != 201 {
		t.Fatalf("create an example: %d %s", code, b)
	}
	if reply := l.chat("demo-5", "How many products are there?"); !strings.Contains(reply, "| 60 |") {
		t.Errorf("the new example does not answer:\n%s", reply)
	}
	if code, b := l.Do(keyB, "GET", "/api/v1/dataagent/knowledge/examples?source=shop", nil); code != 200 || strings.Contains(string(b), "How many products are there?") {
		t.Errorf("another key sees the example: %d", code)
	}
	if code, b := l.Do(keyA, "POST", "/api/v1/dataagent/knowledge/examples", map[string]any{"source": "shop"}); code/100 != 4 || !strings.Contains(string(b), `"error"`) {
		t.Errorf("a bad example: %d %s", code, b)
	}
}

// TestBadInput: input that does not fit is a 4xx JSON error naming the
// problem, never a 5xx; an unknown source is said in the answer.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	l := serve(t, nil, filepath.Join(dir, "loom.db"), dataagent.ServerOptions{DemoPath: filepath.Join(dir, "shop.db")})
	for _, c := range []struct {
		method, path string
		body         any
		code         int
		want         string
	}{
		{"POST", "/threads/bad-1/runs/wait", map[string]any{"assistant_id": "dataagent", "if_not_exists": "create", "input": map[string]any{"question": 5}}, 422, "question"},
		{"POST", "/threads/bad-1/runs/wait", map[string]any{"assistant_id": "dataagent", "if_not_exists": "create", "input": map[string]any{"question": "hi", "humanreview": true}}, 422, "humanreview"},
		{"POST", "/threads/bad-1/runs/wait", map[string]any{"assistant_id": "dataagent", "if_not_exists": "create", "input": map[string]any{"question": "hi", "nl2sql_only": "yes"}}, 422, "nl2sql_only"},
		{"GET", "/api/v1/dataagent/reports/no-such-thread", nil, 404, "not_found"},
		{"GET", "/api/v1/dataagent/reports/bad-1?format=docx", nil, 400, "invalid_format"},
		{"POST", "/api/v1/dataagent/knowledge/terms", map[string]any{"source": "shop", "term": ""}, 400, "error"},
		{"GET", "/api/v1/dataagent/knowledge/nothing-here", nil, 404, "not_found"},
	} {
		code, b := l.Do(keyA, c.method, c.path, c.body)
		if code != c.code || !strings.Contains(string(b), c.want) || !strings.HasPrefix(strings.TrimSpace(string(b)), "{") {
			t.Errorf("%s %s %v: %d %s, want %d with %q", c.method, c.path, c.body, code, b, c.code, c.want)
		}
	}
	st := l.run("bad-2", map[string]any{"question": "How many customers are there in each city?", "source": "nope"}, nil)
	if st.Answer == nil || !st.Answer.Failed || !strings.Contains(st.Answer.Text, `no data source "nope" (the sources are: shop)`) {
		t.Errorf("unknown source: %+v", st.Answer)
	}
	// A thread without a report yet.
	if code, b := l.Do(keyA, "GET", "/api/v1/dataagent/reports/bad-2", nil); code != 404 || !strings.Contains(string(b), "no_report") {
		t.Errorf("no report: %d %s", code, b)
	}
}

// TestModelUnreachable: with a model configured that cannot be reached, a
// question a stored example matches is still answered from its SQL,
// saying the model cannot be reached; another says so and to try later,
// naming no address.
func TestModelUnreachable(t *testing.T) {
	dir := t.TempDir()
	addr := datasourcetest.ClosedAddr(t)
	m, err := openai.New(openai.Config{BaseURL: "http://" + addr + "/v1", APIKey: "test", Model: "fake", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	l := serve(t, nil, filepath.Join(dir, "loom.db"), dataagent.ServerOptions{Model: m, DemoPath: filepath.Join(dir, "shop.db")})

	reply := l.chat("down-1", "How many customers are there in each city?")
	for _, want := range []string{"cannot be reached", "| San Francisco | 23 |"} {
		if !strings.Contains(reply, want) {
			t.Errorf("reply lacks %q:\n%s", want, reply)
		}
	}
	if st := l.state("down-1"); st.Answer == nil || st.Answer.Failed || st.Answer.FromExample == "" || !st.ModelDown {
		t.Errorf("answer %+v", st.Answer)
	}
	reply = l.chat("down-2", "每个城市分别有多少客户？")
	if !strings.Contains(reply, "语言模型暂时无法访问") || !strings.Contains(reply, "每个城市有多少客户？") {
		t.Errorf("Chinese reply:\n%s", reply)
	}
	reply = l.chat("down-3", "Which products are most often returned by customers in Berlin?")
	if !strings.Contains(reply, "cannot be reached now") || strings.Contains(reply, addr) || strings.Contains(reply, "OPENAI_API_KEY") {
		t.Errorf("reply to a question no example answers:\n%s", reply)
	}
}
