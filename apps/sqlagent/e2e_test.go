package sqlagent_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/sqlagent"
	"github.com/loomkit/loom/datasource"
	"github.com/loomkit/loom/internal/testenv"
	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/llm/llmtest"
	"github.com/loomkit/loom/llm/openai"
	"github.com/loomkit/loom/server/servertest"
	"github.com/loomkit/loom/store/storetest"
)

const (
	keyA = "key-a-0123456789"
	keyB = "key-b-0123456789"
)

// loom is Loom's server with the SQL agent on a loopback port, over a
// model at an llmtest endpoint.
type loom struct{ *servertest.Loom }

// serve starts Loom's server on the database file db with the agent.
func serve(t *testing.T, model *llmtest.Server, db string, opts sqlagent.ServerOptions) *loom {
	t.Helper()
	if model != nil {
		m, err := openai.New(openai.Config{BaseURL: model.BaseURL(), APIKey: "test", Model: "fake", MaxRetries: 0})
		if err != nil {
			t.Fatal(err)
		}
		opts.Model = m
	}
	opts.Logger = slog.New(slog.DiscardHandler)
	return &loom{servertest.Start(t, db, []string{keyA, keyB}, sqlagent.ServerAgent(opts))}
}

func (l *loom) chat(thread, text string) string { return l.Chat(keyA, "sqlagent", thread, text) }

func (l *loom) state(thread string) sqlagent.State {
	return servertest.State[sqlagent.State](l.Loom, keyA, thread)
}

func decide(format string, args ...any) llmtest.Reply {
	return llmtest.Text("<DECISION>" + fmt.Sprintf(format, args...) + "</DECISION>")
}

func callTool(name string, args any) llmtest.Reply {
	b, _ := json.Marshal(map[string]any{"thought": "look", "action": "call_tool", "tool": name, "args": args})
	return llmtest.Text("<DECISION>" + string(b) + "</DECISION>")
}

func finish(answer string) llmtest.Reply {
	b, _ := json.Marshal(map[string]any{"action": "finish", "answer": answer})
	return llmtest.Text("<DECISION>" + string(b) + "</DECISION>")
}

// system returns a request's system message.
func system(r llmtest.Request) string {
	for _, m := range r.Messages() {
		if m.Role == llm.RoleSystem {
			return m.Content
		}
	}
	return ""
}

func allText(r llmtest.Request) string {
	var b strings.Builder
	for _, m := range r.Messages() {
		b.WriteString(m.Content + "\n")
	}
	return b.String()
}

// TestDemoShopOverHTTP: a question on the demo shop goes list → describe
// → query → answer with SQL and table; the CSV comes through the API; a
// second question on the thread starts with the known tables in the
// system prompt; the conversation is listed, renamed, tagged and deleted,
// and is another key's 404.
func TestDemoShopOverHTTP(t *testing.T) {
	dir := t.TempDir()
	model := llmtest.New(t,
		callTool("list_tables", map[string]any{}),
		callTool("describe_table", map[string]any{"table": "customers"}),
		callTool("run_sql", map[string]any{"sql": "SELECT city, count(*) AS n FROM customers GROUP BY city ORDER BY n DESC, city LIMIT 3"}),
		finish("San Francisco has the most customers: 23."),
	)
	l := serve(t, model, filepath.Join(dir, "loom.db"), sqlagent.ServerOptions{DemoPath: filepath.Join(dir, "shop.db")})
	reply := l.chat("conv-1", "Which city has the most customers?")
	for _, want := range []string{"San Francisco has the most customers: 23.", "```sql\nSELECT city, count(*) AS n FROM customers", "| city | n |", "| San Francisco | 23 |"} {
		if !strings.Contains(reply, want) {
			t.Errorf("reply lacks %q:\n%s", want, reply)
		}
	}
	st := l.state("conv-1")
	if len(st.Known.Tables) != 6 || st.Known.Schemas["customers"].Name != "customers" || len(st.Known.SQL) != 1 || st.Title != "Which city has the most customers?" {
		t.Errorf("known %+v title %q", st.Known, st.Title)
	}
	if st.Answer == nil || len(st.Answer.Rows) != 3 {
		t.Fatalf("answer %+v", st.Answer)
	}
	// The observation the model saw of list_tables was JSON; the second
	// request carries it.
	if reqs := model.Requests(); len(reqs) != 4 || !strings.Contains(allText(reqs[1]), `"order_items"`) {
		t.Fatalf("%d requests", len(reqs))
	}

	code, csv := l.Do(keyA, "GET", "/api/v1/sqlagent/threads/conv-1/result.csv", nil)
	if code != 200 || !strings.HasPrefix(string(csv), "city,n\nSan Francisco,23\n") {
		t.Errorf("csv %d %q", code, csv)
	}
	if code, _ := l.Do(keyB, "GET", "/api/v1/sqlagent/threads/conv-1/result.csv", nil); code != 404 {
		t.Errorf("csv for another key: %d", code)
	}

	// A second question: the first request already lists the known tables.
	model.Add(
		callTool("run_sql", map[string]any{"sql": "SELECT count(*) AS orders FROM orders"}),
		finish("There are 1500 orders."),
	)
	reply = l.chat("conv-1", "How many orders are there?")
	if !strings.Contains(reply, "There are 1500 orders.") || !strings.Contains(reply, "| 1500 |") {
		t.Errorf("second reply:\n%s", reply)
	}
	first := model.Requests()[4]
	sys := system(first)
	for _, want := range []string{"do not call list_tables or describe_table again", "Tables: categories, customers, order_items, orders, payments, products", "customers(id integer PK"} {
		if !strings.Contains(sys, want) {
			t.Errorf("the second question's first request lacks %q in its system prompt:\n%s", want, sys)
		}
	}

	// Conversations: listed with their title, renamed, tagged, deleted.
	code, b := l.Do(keyA, "POST", "/threads/search", map[string]any{"metadata": map[string]any{}})
	if code != 200 || !strings.Contains(string(b), `"title":"Which city has the most customers?"`) {
		t.Errorf("search %d %s", code, b)
	}
	if code, b := l.Do(keyB, "POST", "/threads/search", map[string]any{}); code != 200 || strings.Contains(string(b), "conv-1") {
		t.Errorf("another key's search: %d %s", code, b)
	}
	if code, b := l.Do(keyA, "PATCH", "/threads/conv-1", map[string]any{"metadata": map[string]any{"title": "Customers by city", "tags": []string{"sales", "demo"}}}); code != 200 {
		t.Errorf("rename: %d %s", code, b)
	}
	code, b = l.Do(keyA, "GET", "/threads/conv-1", nil)
	if code != 200 || !strings.Contains(string(b), `"title":"Customers by city"`) || !strings.Contains(string(b), `"tags":["sales","demo"]`) {
		t.Errorf("renamed thread: %d %s", code, b)
	}
	if code, _ := l.Do(keyA, "DELETE", "/threads/conv-1", nil); code/100 != 2 {
		t.Errorf("delete: %d", code)
	}
	if code, _ := l.Do(keyA, "GET", "/threads/conv-1", nil); code != 404 {
		t.Errorf("deleted thread: %d", code)
	}
}

// TestBudgetPauseSurvivesRestart: at the budget of 12 rounds the agent
// summarises and pauses; the server restarts; "继续" continues, and round
// 13 sees the summary.
func TestBudgetPauseSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "loom.db")
	opts := sqlagent.ServerOptions{DemoPath: filepath.Join(dir, "shop.db")}
	var replies []llmtest.Reply
	for i := range 12 {
		replies = append(replies, callTool("sample_rows", map[string]any{"table": "products", "n": i%3 + 1}))
	}
	replies[0] = callTool("sample_rows", map[string]any{"table": "goods"})
	replies = append(replies, llmtest.Text("Question: the dearest product. Sampled products twelve times; found prices up to 99. Left: one query for the maximum."))
	model := llmtest.New(t, replies...)
	l := serve(t, model, db, opts)
	reply := l.chat("budget-1", "哪个商品最贵？")
	if !strings.Contains(reply, "已用完本轮的步数预算（12 轮）") || !strings.Contains(reply, "Sampled products twelve times") || !strings.Contains(reply, "继续") {
		t.Fatalf("pause reply:\n%s", reply)
	}
	if n := len(model.Requests()); n != 13 {
		t.Fatalf("%d model requests before the pause, want 12 rounds and a summary", n)
	}
	// The summary request restates the question and the problems hit, and
	// asks for Chinese.
	if req := model.Requests()[12]; !strings.Contains(allText(req), "The question was:\n哪个商品最贵？") ||
		!strings.Contains(allText(req), "sample_rows {\"table\":\"goods\"}: no such table: goods") || !strings.Contains(allText(req), "in Chinese") {
		t.Errorf("summary request:\n%s", allText(req))
	}
	code, b := l.Do(keyA, "GET", "/threads/budget-1", nil)
	if code != 200 || !strings.Contains(string(b), `"status":"interrupted"`) {
		t.Fatalf("thread %d %s", code, b)
	}
	l.Stop()

	model.Add(
		callTool("run_sql", map[string]any{"sql": "SELECT name, price FROM products ORDER BY price DESC LIMIT 1"}),
		finish("最贵的商品见下表。"),
	)
	l = serve(t, model, db, opts)
	reply = l.chat("budget-1", "继续")
	if !strings.Contains(reply, "最贵的商品见下表。") || !strings.Contains(reply, "| name | price |") {
		t.Fatalf("after 继续:\n%s", reply)
	}
	round13 := model.Requests()[13]
	if !strings.Contains(allText(round13), "Progress so far: Question: the dearest product. Sampled products twelve times") {
		t.Errorf("round 13 does not see the summary:\n%s", allText(round13))
	}
	if st := l.state("budget-1"); st.ReAct.Rounds != 14 || len(st.Known.Samples) != 1 {
		t.Errorf("rounds %d, samples %d", st.ReAct.Rounds, len(st.Known.Samples))
	}
}

// TestDefog loads the defog restaurants database into PostgreSQL (a schema
// of its own) and into MySQL (a database of its own) and asks a question
// of each.
func TestDefog(t *testing.T) {
	dump, err := os.ReadFile("../../../shared/data/defog/databases/restaurants.sql")
	testenv.Need(t, "the defog data are not beside the repository", err)
	t.Run("postgres", func(t *testing.T) {
		url := storetest.PostgresURL(t)
		schema := regexp.MustCompile(`search_path=([a-z0-9_]+)`).FindStringSubmatch(url)[1]
		loadPostgres(t, url, strings.ReplaceAll(string(dump), "public.", schema+"."))
		askDefog(t, url)
	})
	t.Run("mysql", func(t *testing.T) {
		askDefog(t, mysqlDatabase(t, strings.ReplaceAll(string(dump), "public.", "")))
	})
}

func askDefog(t *testing.T, url string) {
	dir := t.TempDir()
	model := llmtest.New(t,
		callTool("list_tables", map[string]any{}),
		callTool("describe_table", map[string]any{"table": "restaurant"}),
		callTool("run_sql", map[string]any{"sql": "SELECT food_type, count(*) AS n FROM restaurant GROUP BY food_type ORDER BY n DESC, food_type LIMIT 1"}),
		finish("American food has the most restaurants (3)."),
	)
	l := serve(t, model, filepath.Join(dir, "loom.db"), sqlagent.ServerOptions{
		Sources: []datasource.Config{{Name: "restaurants", URL: url, Description: "restaurants by city"}},
	})
	reply := l.chat("defog-1", "Which food type has the most restaurants?")
	if !strings.Contains(reply, "| American | 3 |") {
		t.Errorf("reply:\n%s", reply)
	}
	for _, r := range model.Requests() {
		if strings.Contains(allText(r), url) {
			t.Errorf("the database URL was shown to the model")
		}
	}
	st := l.state("defog-1")
	if strings.Join(st.Known.Tables, ",") != "geographic,location,restaurant" || len(st.Known.Schemas["restaurant"].Columns) != 5 {
		t.Errorf("known %+v", st.Known)
	}
}

// TestPauseAnsweredByTheCard: the web page answers the pause with its
// confirm card, {"accept": true, "note": …}, through the LangGraph API:
// that continues, with the note as the instruction. In chat, "停止" ends
// the turn with the progress summary as the answer.
func TestPauseAnsweredByTheCard(t *testing.T) {
	dir := t.TempDir()
	model := llmtest.New(t,
		callTool("list_tables", map[string]any{}), callTool("list_tables", map[string]any{}),
		llmtest.Text("Listed the tables twice."),
		finish("There are six tables."),
		callTool("list_tables", map[string]any{}), callTool("list_tables", map[string]any{}),
		llmtest.Text("Listed them again."),
	)
	l := serve(t, model, filepath.Join(dir, "loom.db"), sqlagent.ServerOptions{DemoPath: filepath.Join(dir, "shop.db"), Budget: 2})
	if reply := l.chat("card", "How many tables?"); !strings.Contains(reply, "Listed the tables twice.") {
		t.Fatalf("pause: %s", reply)
	}
	resume := func(v map[string]any) sqlagent.State {
		code, b := l.Do(keyA, "POST", "/threads/card/runs/wait", map[string]any{"assistant_id": "sqlagent", "command": map[string]any{"resume": v}})
		var st sqlagent.State
		if err := json.Unmarshal(b, &st); code != 200 || err != nil {
			t.Fatalf("resume %v: %d %s", v, code, b)
		}
		return st
	}
	st := resume(map[string]any{"accept": true, "note": "just count them"})
	if st.Answer == nil || !strings.HasPrefix(st.Answer.Text, "There are six tables.") {
		t.Errorf("after accept: %+v", st.Answer)
	}
	if last := model.Requests()[3].Messages(); last[len(last)-1].Content != "just count them" {
		t.Errorf("round 3 ends with %q, want the note", last[len(last)-1].Content)
	}
	if reply := l.chat("card", "And again?"); !strings.Contains(reply, "Listed them again.") {
		t.Fatalf("second pause: %s", reply)
	}
	// Asked in chat, "停止" stops.
	if reply := l.chat("card", "停止"); reply != "Listed them again." {
		t.Errorf("after 停止: %q", reply)
	}
}
