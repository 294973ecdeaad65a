package sqlagent_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/sqlagent"
	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/datasource"
	"github.com/loomkit/loom/datasource/shop"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/llm/llmtest"
	"github.com/loomkit/loom/llm/openai"
)

// newGraph compiles the agent on the demo shop, over model (nil: none).
func newGraph(t *testing.T, model *llmtest.Server, cfg sqlagent.Config) *graph.Compiled[sqlagent.State] {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shop.db")
	if _, err := shop.Ensure(ctx, path); err != nil {
		t.Fatal(err)
	}
	ss, err := sqlagent.OpenSources(ctx, []datasource.Config{{Name: "shop", URL: path}}, datasource.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cfg.Sources = ss
	if model != nil {
		m, err := openai.New(openai.Config{BaseURL: model.BaseURL(), APIKey: "test", Model: "fake", MaxRetries: 0})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Model = m
	}
	a, err := sqlagent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g, err := a.Graph().Compile(graph.WithSaver(checkpoint.NewMemory()))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func ask(q string) func(*sqlagent.State) { return func(s *sqlagent.State) { s.Question = q } }

func TestWithoutModel(t *testing.T) {
	g := newGraph(t, nil, sqlagent.Config{})
	ctx := context.Background()
	for _, c := range []struct {
		q    string
		want []string
	}{
		{"list tables", []string{"shop has 6 tables and views:", "- customers (200 rows)", "- order_items (3733 rows)"}},
		{"有哪些表？", []string{"shop 共有 6 个表和视图", "- orders（1500 行）"}},
		{"describe orders", []string{"Table orders (1500 rows)\n", "| customer_id | INTEGER | no | → customers.id |", "| id | INTEGER | no | PK |"}},
		{"products 表结构", []string{"表 products（60 行）\n", "| category_id | INTEGER | 否 | → categories.id |"}},
		{"SELECT status, count(*) AS n FROM orders GROUP BY status ORDER BY n DESC LIMIT 1", []string{"Here is the result.", "| status | n |", "| delivered |"}},
		{"select count(*) from payments", []string{"| 1064 |"}},
		// The sample's rows are in the reply, as a table, not only in
		// the tool's event.
		{"sample products", []string{"The first rows of products:", "| id | category_id | name | price | stock |\n|---|---|---|---|---|\n| 1 | 1 | ", "| 10 | 2 | "}},
		{"预览 customers", []string{"表 customers 的前几行数据：", "| id | name | email | city | country | created_at |"}},
		{"sample nope", []string{"no such table: nope"}},
		{"DELETE FROM orders", []string{"only one read-only statement is allowed; found DELETE"}},
		{"describe nope", []string{"no such table: nope (the tables are: categories, customers"}},
		{"Which product sells best?", []string{"No language model is configured", "OPENAI_API_KEY", "OPENAI_BASE_URL", "LOOM_MODEL"}},
		{"哪个商品卖得最好？", []string{"尚未配置语言模型", "OPENAI_API_KEY", "LOOM_MODEL"}},
	} {
		res, err := g.Invoke(ctx, "t", ask(c.q))
		if err != nil {
			t.Fatalf("%q: %v", c.q, err)
		}
		got := sqlagent.Reply(mustJSON(t, res.State), nil)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%q: reply lacks %q:\n%s", c.q, w, got)
			}
		}
	}
	res, err := g.Invoke(ctx, "t", ask("select 1"))
	if err != nil {
		t.Fatal(err)
	}
	k := res.State.Known
	if len(k.Tables) != 6 || k.Schemas["orders"].Name != "orders" || k.Schemas["products"].Name != "products" ||
		len(k.Samples["products"].Rows) != 5 || len(k.SQL) != 3 || len(k.Errors) != 3 || res.State.Title != "list tables" {
		t.Errorf("known %+v, title %q", k, res.State.Title)
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMalformedAnswers: malformed answers are fed back with the format;
// the third in a row ends the turn with a plain sentence in the
// question's language (no error chain), and the thread goes on. Each
// round's status line is in the question's language too.
func TestMalformedAnswers(t *testing.T) {
	model := llmtest.New(t,
		llmtest.Text("I think the answer is 42."),
		decide(`{"action":"call_tool","tool":"list_tables"`),
		finish("Six tables."),
	)
	g := newGraph(t, model, sqlagent.Config{})
	ctx := context.Background()
	res, err := g.Invoke(ctx, "ok", ask("How many tables?"))
	if err != nil || res.State.Answer == nil || res.State.Answer.Text != "Six tables." {
		t.Fatalf("%+v %v", res, err)
	}
	fb := allText(model.Requests()[1])
	if !strings.Contains(fb, "I think the answer is 42.") || !strings.Contains(fb, "did not contain a JSON object") || !strings.Contains(fb, `"action"`) {
		t.Errorf("feedback lacks the raw answer or the format:\n%s", fb)
	}

	for _, c := range []struct {
		q, want, status string
	}{
		{"How many tables?", "I could not get a usable answer from the language model", "round 3"},
		{"有几张表？", "这次没能从语言模型得到可用的回答", "第 6 轮"},
	} {
		model.Add(llmtest.Text("one"), llmtest.Text("two"), llmtest.Text("three"))
		var status []string
		for e, err := range g.Stream(ctx, "bad", graph.Input[sqlagent.State]{Update: ask(c.q)}) {
			if err != nil {
				t.Fatalf("%q: %v, want a plain answer", c.q, err)
			}
			if e.Kind == graph.KindStatus {
				status = append(status, fmt.Sprint(e.Data))
			}
		}
		if model.Pending() != 0 {
			t.Errorf("%d replies left", model.Pending())
		}
		cp, err := g.Saver().Get(ctx, "bad", "")
		if err != nil {
			t.Fatal(err)
		}
		reply := sqlagent.Reply(cp.State, cp.Interrupt)
		if !strings.Contains(reply, c.want) || strings.Contains(reply, "react:") || strings.Contains(reply, "malformed") {
			t.Errorf("%q: reply %q, want %q", c.q, reply, c.want)
		}
		if len(status) != 3 || status[2] != c.status {
			t.Errorf("%q: status lines %q, want the third %q", c.q, status, c.status)
		}
	}
	// A model that cannot be reached: a plain sentence, not the
	// client's error chain (the endpoint is not named).
	model.Add(llmtest.ServerError(), llmtest.ServerError(), llmtest.ServerError()) // the client tries three times
	res, err = g.Invoke(ctx, "bad", ask("有几张表？"))
	if err != nil {
		t.Fatalf("model down: %v, want a plain answer", err)
	}
	if got := sqlagent.Reply(mustJSON(t, res.State), nil); got != "暂时无法连接语言模型，所以没能回答这个问题。请稍后再试。" {
		t.Errorf("model down: reply %q", got)
	}
	// The thread goes on.
	model.Add(finish("Six tables."))
	if res, err := g.Invoke(ctx, "bad", ask("How many tables?")); err != nil || res.State.Answer.Text != "Six tables." {
		t.Errorf("after giving up: %+v %v", res, err)
	}
}

// TestCompressedView: the model sees a window of the history bounded in
// characters, with observations cut to 10 items and a cached summary of
// older turns; the state keeps everything.
func TestCompressedView(t *testing.T) {
	model := llmtest.New(t,
		callTool("run_sql", map[string]any{"sql": "SELECT id, name FROM customers ORDER BY id LIMIT 50"}),
		callTool("describe_table", map[string]any{"table": "orders"}),
		callTool("list_tables", map[string]any{}),
		finish("Done."),
	)
	g := newGraph(t, model, sqlagent.Config{Window: 4, MaxLength: 6000})
	res, err := g.Invoke(context.Background(), "c", ask("Show me some customers"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := model.Requests()
	// The second request sees the 50-row observation cut to 10 items.
	obs := ""
	for _, m := range reqs[1].Messages() {
		if m.Role == llm.RoleTool {
			obs = m.Content
		}
	}
	if !strings.Contains(obs, "(+40 more)") || strings.Contains(obs, `[11,`) || !strings.Contains(obs, `[10,`) {
		t.Errorf("observation not cut to 10 rows: %s", obs)
	}
	// The last request has a window of 4 messages and the summary.
	last := reqs[len(reqs)-1].Messages()
	if len(last) > 6 || last[0].Role != llm.RoleSystem || !strings.Contains(last[0].Content, "earlier messages of this conversation") ||
		!strings.Contains(last[0].Content, "question: Show me some customers") {
		t.Errorf("last request: %d messages, system:\n%s", len(last), last[0].Content)
	}
	chars := 0
	for _, m := range last {
		chars += len([]rune(m.Content))
	}
	if chars > 6000 {
		t.Errorf("the view has %d characters", chars)
	}
	st := res.State
	if st.ReAct.Summary.Count == 0 || st.ReAct.Summary.ConfigHash == "" || len(st.ReAct.Messages) != 8 {
		t.Errorf("summary %+v, %d messages kept", st.ReAct.Summary, len(st.ReAct.Messages))
	}
	if full := st.ReAct.Messages[2].Content; !strings.Contains(full, `[50,`) {
		t.Errorf("the state lost rows: %.300s", full)
	}
}

func TestDemoIsDeterministic(t *testing.T) {
	ctx := context.Background()
	var sums [2][32]byte
	for i := range sums {
		path := filepath.Join(t.TempDir(), "shop.db")
		if made, err := shop.Ensure(ctx, path); err != nil || !made {
			t.Fatalf("EnsureDemo: %v %v", made, err)
		}
		if made, err := shop.Ensure(ctx, path); err != nil || made {
			t.Fatalf("second EnsureDemo wrote again: %v %v", made, err)
		}
		src, err := datasource.Open(ctx, path, datasource.Limits{MaxRows: 10000})
		if err != nil {
			t.Fatal(err)
		}
		schema, err := src.Schema(ctx)
		if err != nil {
			t.Fatal(err)
		}
		fks, rows := 0, int64(0)
		for _, tb := range schema {
			fks += len(tb.ForeignKeys)
			rows += tb.Rows
		}
		if len(schema) < 5 || fks < 5 || rows < 3000 {
			t.Errorf("%d tables, %d foreign keys, %d rows", len(schema), fks, rows)
		}
		h := sha256.New()
		for _, tb := range schema {
			res, err := src.Query(ctx, "SELECT * FROM "+tb.Name+" ORDER BY id")
			if err != nil {
				t.Fatal(err)
			}
			h.Write(mustJSON(t, res.Rows))
		}
		copy(sums[i][:], h.Sum(nil))
		src.Close()
	}
	if sums[0] != sums[1] {
		t.Error("two demo databases differ")
	}
}

// TestPinnedSQLNamesTheSource: with two sources, the statements pinned
// for the model say which source each ran on, a statement run again
// counts once, and the last five are kept.
func TestPinnedSQLNamesTheSource(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var cfgs []datasource.Config
	for _, name := range []string{"shop", "branch"} {
		path := filepath.Join(dir, name+".db")
		if _, err := shop.Ensure(ctx, path); err != nil {
			t.Fatal(err)
		}
		cfgs = append(cfgs, datasource.Config{Name: name, URL: path})
	}
	ss, err := sqlagent.OpenSources(ctx, cfgs, datasource.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	run := func(source, sql string) llmtest.Reply {
		return callTool("run_sql", map[string]any{"sql": sql, "source": source})
	}
	model := llmtest.New(t,
		run("shop", "SELECT 1"), run("shop", "SELECT 2"), run("branch", "SELECT 2"), run("shop", "SELECT 3"),
		run("shop", "SELECT 4"), run("shop", "SELECT  1"), run("branch", "SELECT 5"), finish("Done."),
		finish("Again."),
	)
	m, err := openai.New(openai.Config{BaseURL: model.BaseURL(), APIKey: "test", Model: "fake", MaxRetries: 0})
	if err != nil {
		t.Fatal(err)
	}
	a, err := sqlagent.New(sqlagent.Config{Sources: ss, Model: m})
	if err != nil {
		t.Fatal(err)
	}
	g, err := a.Graph().Compile(graph.WithSaver(checkpoint.NewMemory()))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"Run some queries.", "And again?"} {
		if _, err := g.Invoke(ctx, "t", ask(q)); err != nil {
			t.Fatal(err)
		}
	}
	reqs := model.Requests()
	text := allText(reqs[len(reqs)-1])
	want := "SQL that ran:\n- [branch] SELECT 2 → 1 rows\n- [shop] SELECT 3 → 1 rows\n- [shop] SELECT 4 → 1 rows\n- [shop] SELECT 1 → 1 rows\n- [branch] SELECT 5 → 1 rows\n"
	if !strings.Contains(text, want) {
		t.Errorf("the pinned SQL is not\n%s\nin:\n%s", want, text)
	}
}
