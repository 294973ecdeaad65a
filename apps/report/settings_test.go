package report_test

import (
	"encoding/json"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/report"
	"github.com/loomkit/loom/llm/llmtest"
)

// TestSSIMSetting: a run's ssim (context or config.configurable) is the
// threshold the rendering of an uploaded picture is held to: at 0.99 the
// skeleton that passes the default fails, named with that threshold; an
// ssim above 1 is refused.
func TestSSIMSetting(t *testing.T) {
	needTesseract(t)
	l := serve(t, nil, filepath.Join(t.TempDir(), "loom.db"), report.ServerOptions{})
	for _, c := range []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"context": map[string]any{"ssim": 1.5}}, "ssim"},
	} {
		body := map[string]any{"assistant_id": "report", "input": map[string]any{"message": "x"}}
		for k, v := range c.body {
			body[k] = v
		}
		if code, b := l.Do(keyA, "POST", "/runs/wait", body); code != 422 || !strings.Contains(string(b), c.want) {
			t.Errorf("%v: %d %s, want 422 naming %s", c.body, code, b, c.want)
		}
	}
	png := invoicePNG(t)
	for _, c := range []struct {
		thread   string
		settings map[string]any
		pass     bool
	}{
		{"default", nil, true},
		{"strict", map[string]any{"context": map[string]any{"ssim": 0.99}}, false},
		{"strict-config", map[string]any{"config": map[string]any{"configurable": map[string]any{"ssim": 0.99}}}, false},
	} {
		id := l.uploadID(c.thread, "invoice.png", png)
		body := map[string]any{"assistant_id": "report", "input": report.Input{Upload: id}, "if_not_exists": "create"}
		for k, v := range c.settings {
			body[k] = v
		}
		code, b := l.Do(keyA, "POST", "/threads/"+c.thread+"/runs/wait", body)
		var st report.State
		if code != 200 || json.Unmarshal(b, &st) != nil {
			t.Fatalf("%s: %d %s", c.thread, code, b)
		}
		problems, _ := json.Marshal(st.Turn.Problems)
		if pass := st.Turn.Status == "pass"; pass != c.pass || !c.pass && !strings.Contains(string(problems), "0.99") {
			t.Errorf("%s: status %q (SSIM %.2f), problems %s; want pass %v", c.thread, st.Turn.Status, st.Turn.SSIM, problems, c.pass)
		}
	}
}

// TestMaxRetrySetting: a run's max_retry lowers the correction budget for
// that run: with a model that never fixes the template, max_retry 1 gives
// up after one correction where the server's bound (5, spent 2 a
// correction that changed nothing) takes three; a max_retry above the
// server's, or below 1, is a 422 naming it.
func TestMaxRetrySetting(t *testing.T) {
	model := llmtest.New(t)
	model.Handle(func(llmtest.Request) llmtest.Reply { return xmlReply(badJRXML) })
	l := serve(t, model, filepath.Join(t.TempDir(), "loom.db"), report.ServerOptions{})
	for _, c := range []map[string]any{
		{"context": map[string]any{"max_retry": report.DefaultMaxRetry + 1}},
		{"config": map[string]any{"configurable": map[string]any{"max_retry": 0}}},
	} {
		body := map[string]any{"assistant_id": "report", "input": map[string]any{"message": "x"}}
		maps.Copy(body, c)
		if code, b := l.Do(keyA, "POST", "/runs/wait", body); code != 422 || !strings.Contains(string(b), "max_retry") {
			t.Errorf("%v: %d %s, want 422 naming max_retry", c, code, b)
		}
	}
	for _, c := range []struct {
		thread      string
		settings    map[string]any
		corrections int
	}{
		{"default", nil, 3},
		{"one", map[string]any{"context": map[string]any{"max_retry": 1}}, 1},
		{"one-config", map[string]any{"config": map[string]any{"configurable": map[string]any{"max_retry": 1}}}, 1},
	} {
		body := map[string]any{"assistant_id": "report", "input": report.Input{Message: "generate a sales report"}, "if_not_exists": "create"}
		maps.Copy(body, c.settings)
		code, b := l.Do(keyA, "POST", "/threads/"+c.thread+"/runs/wait", body)
		var st report.State
		if code != 200 || json.Unmarshal(b, &st) != nil {
			t.Fatalf("%s: %d %s", c.thread, code, b)
		}
		if st.Turn.Status != "fail" || st.Turn.Corrections != c.corrections {
			t.Errorf("%s: status %q after %d corrections, want fail after %d", c.thread, st.Turn.Status, st.Turn.Corrections, c.corrections)
		}
	}
}
