package report_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/report"
	"github.com/loomkit/loom/internal/testenv"
	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/llm/llmtest"
	"github.com/loomkit/loom/llm/openai"
	"github.com/loomkit/loom/server/servertest"
)

const (
	keyA = "key-a-0123456789"
	keyB = "key-b-0123456789"
)

// loom is Loom's server with the report agent on a loopback port.
type loom struct{ *servertest.Loom }

// serve starts Loom's server on the SQLite file db with the agent, over
// model (nil: no model).
func serve(t testing.TB, model *llmtest.Server, db string, opts report.ServerOptions) *loom {
	t.Helper()
	if model != nil {
		m, err := openai.New(openai.Config{BaseURL: model.BaseURL(), APIKey: "test", Model: "fake", MaxRetries: 0})
		if err != nil {
			t.Fatal(err)
		}
		opts.Model = m
	}
	if opts.Schemas == nil {
		opts.Schemas = []string{} // not the environment's
	}
	opts.Logger = slog.New(slog.DiscardHandler)
	return &loom{servertest.Start(t, db, []string{keyA, keyB}, report.ServerAgent(opts))}
}

// upload sends a file to a thread as multipart/form-data and returns the
// status and body.
func (l *loom) upload(thread, name string, data []byte) (int, []byte) {
	l.T.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", name)
	fw.Write(data)
	mw.Close()
	return l.Send(keyA, "POST", "/api/v1/report/threads/"+thread+"/uploads", mw.FormDataContentType(), &body)
}

// uploadID uploads a file and returns its id.
func (l *loom) uploadID(thread, name string, data []byte) string {
	l.T.Helper()
	code, b := l.upload(thread, name, data)
	var u report.Upload
	if err := json.Unmarshal(b, &u); code != 201 || err != nil || u.ID == "" {
		l.T.Fatalf("upload %s: %d %s", name, code, b)
	}
	return u.ID
}

// turn is one run on a thread as its events tell it.
type turn struct {
	path  []string
	state report.State
	// progress counts refine_layout's progress events.
	progress int
}

// run streams one run on thread with input and returns the nodes it went
// through, from its events, and the state it ended with.
func (l *loom) run(thread string, input report.Input) turn {
	l.T.Helper()
	b, _ := json.Marshal(map[string]any{"assistant_id": "report", "input": input, "if_not_exists": "create", "stream_mode": []string{"updates", "custom", "values"}})
	req, _ := http.NewRequest("POST", l.Base+"/threads/"+thread+"/runs/stream", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+keyA)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		l.T.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(resp.Body)
		l.T.Fatalf("run %+v: %d %s", input, resp.StatusCode, body)
	}
	var tr turn
	event := ""
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data := []byte(strings.TrimPrefix(line, "data: "))
			switch event {
			case "updates":
				var m map[string]json.RawMessage
				if json.Unmarshal(data, &m) == nil {
					for k := range m {
						tr.path = append(tr.path, k)
					}
				}
			case "values":
				var s report.State
				if err := json.Unmarshal(data, &s); err == nil {
					tr.state = s
				}
			case "custom":
				if strings.Contains(string(data), `"windows"`) {
					tr.progress++
				}
			case "error":
				l.T.Fatalf("run %+v: error %s", input, data)
			}
		}
	}
	return tr
}

func (l *loom) state(thread string) report.State {
	return servertest.State[report.State](l.Loom, keyA, thread)
}

func path(nodes ...string) string { return strings.Join(nodes, " → ") }

func (tr turn) String() string { return path(tr.path...) }

// xmlReply is a model's answer with a template in a code fence.
func xmlReply(src string) llmtest.Reply {
	return llmtest.Text("Here is the template:\n```xml\n" + src + "```\n")
}

// allText is every message of a request, joined.
func allText(r llmtest.Request) string {
	var b strings.Builder
	for _, m := range r.Messages() {
		b.WriteString(string(m.Role) + ": " + m.Content + "\n")
	}
	return b.String()
}

func system(r llmtest.Request) string {
	for _, m := range r.Messages() {
		if m.Role == llm.RoleSystem {
			return m.Content
		}
	}
	return ""
}

// sharedData returns the path of a file in the data folder beside the
// repository, skipping the test (failing it under CI) without it.
func sharedData(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join("..", "..", "..", "shared", "data", rel)
	if _, err := os.Stat(p); err != nil {
		testenv.Need(t, "the test data are not beside the repository", err)
	}
	return p
}

// jasperSchema is the JasperReports schema of the shared data, with
// xmllint installed to validate against it.
func jasperSchema(t testing.TB) string {
	t.Helper()
	schema := sharedData(t, "jrxml/xsd/jasperreport.xsd")
	testenv.NeedProgram(t, "xmllint", "Debian package libxml2-utils")
	return schema
}

// goodJRXML is a small valid template (testdata/sales.jrxml, which the
// server's A2A test reads too); badJRXML refers to a field it does not
// declare.
var (
	goodJRXML   = mustRead("testdata/sales.jrxml")
	badJRXML    = strings.Replace(goodJRXML, "$F{amount}", "$F{amount_total}", 1)
	worseJRXML  = strings.Replace(badJRXML, "$F{customer}", "$F{customer_name}", 1)
	biggerTitle = strings.Replace(goodJRXML, `size="18"`, `size="26"`, 1)
)

// mustRead returns the text of a test data file.
func mustRead(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return string(b)
}
