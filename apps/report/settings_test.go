package report_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/report"
)

// TestSSIMSetting: a run's ssim (context or config.configurable) is the
// threshold the rendering of an uploaded picture is held to: at 0.99 the
// skeleton that passes the default fails, named with that threshold;
// max_retry is not a run's setting (the loop's bound is the server's),
// nor is an ssim above 1.
func TestSSIMSetting(t *testing.T) {
	needTesseract(t)
	l := serve(t, nil, filepath.Join(t.TempDir(), "loom.db"), report.ServerOptions{})
	for _, c := range []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"context": map[string]any{"max_retry": 3}}, "max_retry"},
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
