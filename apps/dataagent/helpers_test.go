package dataagent_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite" // writes the test dealer

	"github.com/loomkit/loom/apps/dataagent"
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

// loom is Loom's server with the analyst on a loopback port.
type loom struct{ *servertest.Loom }

// serve starts Loom's server on the SQLite database file db with the
// analyst, over the fake model (nil: no model).
func serve(t *testing.T, model *fakeModel, db string, opts dataagent.ServerOptions) *loom {
	t.Helper()
	if model != nil {
		m, err := openai.New(openai.Config{BaseURL: model.srv.BaseURL(), APIKey: "test", Model: "fake", MaxRetries: 0})
		if err != nil {
			t.Fatal(err)
		}
		opts.Model = m
	}
	opts.Logger = slog.New(slog.DiscardHandler)
	return &loom{servertest.Start(t, db, []string{keyA, keyB}, dataagent.ServerAgent(opts))}
}

func (l *loom) chat(thread, text string) string { return l.Chat(keyA, "dataagent", thread, text) }

// run starts a run on thread with input, or answers its question with
// resume, waits for it, and returns the thread's state.
func (l *loom) run(thread string, input, resume any) dataagent.State {
	l.T.Helper()
	body := map[string]any{"assistant_id": "dataagent", "if_not_exists": "create"}
	if resume != nil {
		body["command"] = map[string]any{"resume": resume}
	} else {
		body["input"] = input
	}
	if code, b := l.Do(keyA, "POST", "/threads/"+thread+"/runs/wait", body); code != 200 {
		l.T.Fatalf("run %v %v: %d %s", input, resume, code, b)
	}
	return l.state(thread)
}

func (l *loom) state(thread string) dataagent.State {
	return servertest.State[dataagent.State](l.Loom, keyA, thread)
}

// status returns the thread's status (idle, interrupted, …).
func (l *loom) status(thread string) string {
	l.T.Helper()
	code, b := l.Do(keyA, "GET", "/threads/"+thread, nil)
	var th struct {
		Status string `json:"status"`
	}
	if code != 200 || json.Unmarshal(b, &th) != nil {
		l.T.Fatalf("thread: %d %s", code, b)
	}
	return th.Status
}

// The model's calls, told apart by their system prompts.
const (
	callIntent      = "intent"
	callEnhance     = "enhance"
	callFeasibility = "feasibility"
	callPlanner     = "planner"
	callSQL         = "sql"
	callConsistency = "consistency"
	callPython      = "python"
	callAnalyze     = "analyze"
	callReport      = "report"
)

var callMarks = []struct{ kind, mark string }{
	{callIntent, "front desk of a data analyst"},
	{callEnhance, "rewrite a user's question"},
	{callFeasibility, "can be answered with the tables shown"},
	{callPlanner, "You plan a data analysis"},
	{callSQL, "one read-only SQL query for one step"},
	{callConsistency, "review a SQL query before it runs"},
	{callPython, "Python 3 script for one step"},
	{callAnalyze, "output of one analysis step"},
	{callReport, "final report of a data analysis"},
}

// fakeModel is an llmtest endpoint that answers each kind of call from
// its own script, in order, and records the requests by kind.
type fakeModel struct {
	t   *testing.T
	srv *llmtest.Server
	mu  sync.Mutex
	// script holds the replies left, by kind of call.
	script map[string][]string
	calls  []string
}

func newModel(t *testing.T) *fakeModel {
	f := &fakeModel{t: t, script: map[string][]string{}}
	f.srv = llmtest.New(t)
	f.srv.Handle(func(r llmtest.Request) llmtest.Reply {
		kind := kindOf(r)
		f.mu.Lock()
		defer f.mu.Unlock()
		f.calls = append(f.calls, kind)
		q := f.script[kind]
		if len(q) == 0 {
			t.Errorf("no scripted reply left for a %s call:\n%s", kind, allText(r))
			return llmtest.Text("")
		}
		f.script[kind] = q[1:]
		return llmtest.Text(q[0])
	})
	return f
}

// add scripts replies for a kind of call.
func (f *fakeModel) add(kind string, replies ...string) *fakeModel {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script[kind] = append(f.script[kind], replies...)
	return f
}

// decide scripts a JSON decision for a kind of call.
func (f *fakeModel) decide(kind string, v any) *fakeModel {
	b, _ := json.Marshal(v)
	return f.add(kind, "<DECISION>"+string(b)+"</DECISION>")
}

// requests returns the recorded requests of a kind, in order.
func (f *fakeModel) requests(kind string) []llmtest.Request {
	var out []llmtest.Request
	for _, r := range f.srv.Requests() {
		if kindOf(r) == kind {
			out = append(out, r)
		}
	}
	return out
}

// left fails the test when scripted replies were not used.
func (f *fakeModel) left() {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, q := range f.script {
		if len(q) > 0 {
			f.t.Errorf("%d scripted %s replies were not asked for", len(q), k)
		}
	}
}

func kindOf(r llmtest.Request) string {
	for _, m := range r.Messages() {
		if m.Role == llm.RoleSystem {
			for _, c := range callMarks {
				if strings.Contains(m.Content, c.mark) {
					return c.kind
				}
			}
		}
	}
	return "unknown"
}

func allText(r llmtest.Request) string {
	var b strings.Builder
	for _, m := range r.Messages() {
		b.WriteString(m.Content + "\n")
	}
	return b.String()
}

// userText is the last user message of a request.
func userText(r llmtest.Request) string {
	ms := r.Messages()
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Role == llm.RoleUser {
			return ms[i].Content
		}
	}
	return ""
}

// dealer writes the test dealer (testdata/dealer.sql, made up for these
// tests) into a SQLite file of the test's own and returns the source that
// reads it.
func dealer(t *testing.T) datasource.Config {
	t.Helper()
	script, err := os.ReadFile(filepath.Join("testdata", "dealer.sql"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dealer.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(string(script)); err != nil {
		t.Fatalf("writing the dealer: %v", err)
	}
	return datasource.Config{Name: "dealer", URL: path, Description: "a car dealer: salespersons, customers, cars, sales and their payments (2024)"}
}

// defog loads the defog database name into a PostgreSQL schema of the
// test's own and returns the source that reads it.
func defog(t *testing.T, name string) datasource.Config {
	t.Helper()
	dump, err := os.ReadFile("../../../shared/data/defog/databases/" + name + ".sql")
	testenv.Need(t, "the defog data are not beside the repository", err)
	url := storetest.PostgresURL(t)
	schema := regexp.MustCompile(`search_path=([a-z0-9_]+)`).FindStringSubmatch(url)[1]
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, strings.ReplaceAll(string(dump), "public.", schema+".")); err != nil {
		t.Fatalf("loading %s: %v", name, err)
	}
	return datasource.Config{Name: name, URL: url, Description: fmt.Sprintf("the defog %s database", name)}
}

// query runs a statement on the source directly, for what a test expects.
func query(t *testing.T, src datasource.Config, stmt string) [][]any {
	t.Helper()
	ctx := context.Background()
	if !strings.HasPrefix(src.URL, "postgres") {
		s, err := datasource.Open(ctx, src.URL, datasource.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		res, err := s.Query(ctx, stmt)
		if err != nil {
			t.Fatal(err)
		}
		return res.Rows
	}
	conn, err := pgx.Connect(ctx, src.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, stmt)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}
