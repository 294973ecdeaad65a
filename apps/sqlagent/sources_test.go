package sqlagent_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomkit/loom/datasource"
	"github.com/loomkit/loom/datasource/datasourcetest"
	"github.com/loomkit/loom/graph"

	"github.com/loomkit/loom/apps/sqlagent"
	"github.com/loomkit/loom/datasource/shop"
	"github.com/loomkit/loom/llm/llmtest"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/server/servertest"
	"github.com/loomkit/loom/store"
	"github.com/loomkit/loom/store/storetest"
)

// ask runs question on source in thread and returns the answer's text.
func (l *loom) ask(thread, source, question string) string {
	l.T.Helper()
	l.Do(keyA, "POST", "/threads", map[string]any{"thread_id": thread, "if_exists": "do_nothing"})
	code, b := l.Do(keyA, "POST", "/threads/"+thread+"/runs/wait", map[string]any{
		"assistant_id": "sqlagent", "input": map[string]string{"question": question, "source": source},
	})
	if code != http.StatusOK {
		l.T.Fatalf("ask %s on %s: %d %s", question, source, code, b)
	}
	st := l.state(thread)
	if st.Answer == nil {
		l.T.Fatalf("ask %s on %s: no answer in %s", question, source, b)
	}
	return st.Answer.Text
}

// TestUnreachableSources serves the agent with a PostgreSQL and a MySQL
// source whose servers are down beside the demo shop: the server starts,
// a question on a down source says it is unavailable (naming neither the
// host nor the password), the shop answers, and Ready names the sources
// that are down.
func TestUnreachableSources(t *testing.T) {
	dir := t.TempDir()
	shopFile := filepath.Join(dir, "shop.db")
	if _, err := shop.Ensure(context.Background(), shopFile); err != nil {
		t.Fatal(err)
	}
	addr := datasourcetest.ClosedAddr(t)
	const secret = "pa55-w0rd-x"
	opts := sqlagent.ServerOptions{Sources: []datasource.Config{
		{Name: "shop", URL: shopFile},
		{Name: "sales", URL: "postgres://reader:" + secret + "@" + addr + "/sales?sslmode=disable"},
		{Name: "crm", URL: "mysql://reader:" + secret + "@" + addr + "/crm"},
	}}
	l := serve(t, nil, filepath.Join(dir, "loom.db"), opts)

	for _, src := range []string{"sales", "crm"} {
		got := l.ask("t-"+src, src, "SELECT 1")
		if !strings.Contains(got, "Source "+src+" is unavailable: connection refused") {
			t.Errorf("%s: answer %q, want it unavailable", src, got)
		}
		for _, leak := range []string{secret, "127.0.0.1", addr, "reader"} {
			if strings.Contains(got, leak) {
				t.Errorf("%s: the answer shows %q: %s", src, leak, got)
			}
		}
	}
	if got := l.ask("t-shop", "shop", "SELECT count(*) AS n FROM customers"); strings.Contains(got, "unavailable") {
		t.Errorf("shop: %q", got)
	}
	if st := l.state("t-shop"); st.Answer == nil || len(st.Answer.Rows) != 1 {
		t.Errorf("shop: answer %+v, want one row", st.Answer)
	}

	// The agent's Ready, as GET /readyz calls it.
	opts.Logger = slog.New(slog.DiscardHandler)
	a := sqlagent.ServerAgent(opts)
	db := openStore(t, filepath.Join(dir, "other.db"))
	if _, err := a.Build(context.Background(), db); err != nil {
		t.Fatalf("Build with sources down: %v", err)
	}
	err := a.Ready(context.Background())
	if err == nil {
		t.Fatal("Ready = nil with two sources down")
	}
	for _, want := range []string{"source sales is unavailable", "source crm is unavailable"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Ready = %q, want %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "shop") || strings.Contains(err.Error(), addr) || strings.Contains(err.Error(), secret) {
		t.Errorf("Ready = %q", err)
	}
	// The server's readiness endpoint says the agent is not ready.
	code, b := l.Do(keyA, "GET", "/readyz", nil)
	if code != http.StatusServiceUnavailable || strings.Contains(string(b), addr) || strings.Contains(string(b), secret) {
		t.Errorf("/readyz: %d %s", code, b)
	}
}

// TestSourceComesBack serves a source whose file is not there yet: a
// question on it is unavailable; once the file is made, the same server
// answers from it.
func TestSourceComesBack(t *testing.T) {
	dir := t.TempDir()
	later := filepath.Join(dir, "later.db")
	opts := sqlagent.ServerOptions{Sources: []datasource.Config{{Name: "later", URL: later}}}
	l := serve(t, nil, filepath.Join(dir, "loom.db"), opts)
	if got := l.ask("t1", "later", "SELECT 1"); !strings.Contains(got, "Source later is unavailable: the database file is missing") {
		t.Fatalf("before the file: %q", got)
	}
	db, err := sql.Open("sqlite", later)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE answers (n INTEGER); INSERT INTO answers VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	// The source is tried again after its backoff (a second or so): wait
	// for it, as a client would, with a bound far above it.
	var got string
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if got = l.ask("t1", "later", "SELECT n FROM answers"); !strings.Contains(got, "unavailable") {
			break
		}
	}
	st := l.state("t1")
	if st.Answer == nil || len(st.Answer.Rows) != 1 {
		t.Fatalf("after the file was made: %q %+v", got, st.Answer)
	}
	if b, _ := json.Marshal(st.Answer.Rows[0][0]); string(b) != "42" {
		t.Errorf("row = %s, want 42", b)
	}
}

// TestOwnDatabaseRefused gives the agent the server's own database as a
// source, by its path, by another spelling of it, through a link and
// through a hard link: Build refuses it, saying why.
func TestOwnDatabaseRefused(t *testing.T) {
	dir := t.TempDir()
	own := filepath.Join(dir, "loom.db")
	db := openStore(t, own)
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(own, link); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.db")
	if err := os.Link(own, hard); err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{own, "sqlite://" + own, "file:" + filepath.Join(dir, ".", "x", "..", "loom.db"), link, hard} {
		a := sqlagent.ServerAgent(sqlagent.ServerOptions{Sources: []datasource.Config{{Name: "mine", URL: url}}})
		_, err := a.Build(context.Background(), db)
		if err == nil || !strings.Contains(err.Error(), "data source mine is Loom's own database") {
			t.Errorf("source %s: Build = %v, want it refused", url, err)
		}
	}
	// Another file is fine.
	other := filepath.Join(dir, "other.db")
	if _, err := shop.Ensure(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	a := sqlagent.ServerAgent(sqlagent.ServerOptions{Sources: []datasource.Config{{Name: "shop", URL: other}}})
	if _, err := a.Build(context.Background(), db); err != nil {
		t.Errorf("another file: %v", err)
	}
}

// TestOwnPostgresRefused is TestOwnDatabaseRefused on PostgreSQL: the
// server's database by its URL, or by another user, schema or loopback
// name, is refused.
func TestOwnPostgresRefused(t *testing.T) {
	url := storetest.PostgresURL(t)
	db, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	a := sqlagent.ServerAgent(sqlagent.ServerOptions{Sources: []datasource.Config{{Name: "mine", URL: url}}})
	if _, err := a.Build(context.Background(), db); err == nil || !strings.Contains(err.Error(), "Loom's own database") {
		t.Errorf("Build = %v, want it refused", err)
	}
}

func openStore(t *testing.T, path string) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestCSVOfAnotherAgentsThread asks for the CSV of a thread that holds
// another agent's runs: a 409 that names the thread as the client gave
// it, and nothing of how the server keeps it.
func TestCSVOfAnotherAgentsThread(t *testing.T) {
	dir := t.TempDir()
	shopFile := filepath.Join(dir, "shop.db")
	if _, err := shop.Ensure(context.Background(), shopFile); err != nil {
		t.Fatal(err)
	}
	// Another agent, whose state is not the SQL agent's: its answer is
	// text.
	type note struct {
		Title  string `json:"title,omitempty"`
		Answer string `json:"answer,omitempty"`
	}
	g := graph.New[note]("demo").Node("write", func(_ context.Context, s note) (note, error) {
		s.Answer = "noted: " + s.Title
		return s, nil
	})
	g.Edge(graph.Start, "write").Edge("write", graph.End)
	demoAgent := server.Agent{Name: "demo", Description: "notes", InputSchema: server.InputSchemaFor[note](), Build: server.Compile(g)}
	l := &loom{servertest.Start(t, filepath.Join(dir, "loom.db"), []string{keyA, keyB},
		sqlagent.ServerAgent(sqlagent.ServerOptions{Sources: []datasource.Config{{Name: "shop", URL: shopFile}}, Logger: slog.New(slog.DiscardHandler)}), demoAgent)}
	if code, b := l.Do(keyA, "POST", "/threads/d1/runs/wait", map[string]any{"assistant_id": "demo", "if_not_exists": "create", "input": map[string]string{"title": "trip"}}); code != http.StatusOK {
		t.Fatalf("demo run: %d %s", code, b)
	}
	code, b := l.Do(keyA, "GET", "/api/v1/sqlagent/threads/d1/result.csv", nil)
	if code != http.StatusConflict || !strings.Contains(string(b), "d1") {
		t.Fatalf("CSV of the demo's thread: %d %s", code, b)
	}
	for _, leak := range []string{keyA, "key:", "/d1", "checkpoint"} {
		if strings.Contains(string(b), leak) {
			t.Errorf("the answer shows %q: %s", leak, b)
		}
	}
}

// TestDemoNotWritable places the demo shop where it cannot be written:
// the agent is still built, and a question on the shop says it is
// unavailable.
func TestDemoNotWritable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	l := serve(t, nil, filepath.Join(dir, "loom.db"), sqlagent.ServerOptions{DemoPath: filepath.Join(file, "shop.db")})
	if got := l.ask("t1", "", "SELECT 1"); !strings.Contains(got, "Source shop is unavailable: the database file is missing") {
		t.Errorf("answer %q", got)
	}
}

// TestDownSourceSpendsNoModel asks a question with a model on a source
// that is down: it is answered at once, without a request to the model.
func TestDownSourceSpendsNoModel(t *testing.T) {
	dir := t.TempDir()
	model := llmtest.New(t)
	model.Handle(func(r llmtest.Request) llmtest.Reply {
		t.Errorf("the model was asked: %s", allText(r))
		return finish("no")
	})
	l := serve(t, model, filepath.Join(dir, "loom.db"), sqlagent.ServerOptions{Sources: []datasource.Config{
		{Name: "sales", URL: "postgres://reader@" + datasourcetest.ClosedAddr(t) + "/sales?sslmode=disable"}}})
	if got := l.ask("t1", "", "Who bought the most?"); !strings.Contains(got, "Source sales is unavailable: connection refused") {
		t.Errorf("answer %q", got)
	}
	if got := l.ask("t2", "", "谁买得最多？"); !strings.Contains(got, "数据源 sales 暂时无法访问（connection refused）") {
		t.Errorf("answer %q", got)
	}
}
