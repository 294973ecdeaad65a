package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/loomkit/loom/apps/demo"
	"github.com/loomkit/loom/server"
)

// An agent's panel is served under /ui/panels/{agent}/, named by the
// assistant's metadata, without a key like the page itself; only its
// top-level .js and .css files are served, and a panel without panel.js
// is refused at Register.
func TestPanels(t *testing.T) {
	panel := fstest.MapFS{
		"panel.js":      {Data: []byte("export default function mount() {}\n")},
		"panel.css":     {Data: []byte(".x { color: red }\n")},
		"notes.txt":     {Data: []byte("not served")},
		"sub/deeper.js": {Data: []byte("export {}")},
	}
	var reg server.Registry
	for _, a := range []server.Agent{
		{Name: "shown", Build: server.Compile(demo.Graph()), Panel: panel},
		{Name: "plain", Build: server.Compile(demo.Graph())},
	} {
		if err := reg.Register(a); err != nil {
			t.Fatal(err)
		}
	}
	if err := reg.Register(server.Agent{Name: "broken", Build: server.Compile(demo.Graph()), Panel: fstest.MapFS{"x.css": {}}}); err == nil {
		t.Error("a panel without panel.js was registered")
	}
	ts := startServer(t, server.Options{Agents: &reg, Keys: []string{"k1"}})

	meta := func(name string) map[string]any {
		code, body := call(t, http.MethodGet, ts.URL+"/assistants/"+name, "k1", nil)
		if code != http.StatusOK {
			t.Fatalf("GET /assistants/%s: %d %s", name, code, body)
		}
		var a struct {
			Metadata map[string]any `json:"metadata"`
		}
		if err := json.Unmarshal(body, &a); err != nil {
			t.Fatal(err)
		}
		return a.Metadata
	}
	p, _ := meta("shown")["panel"].(map[string]any)
	if p["script"] != "/ui/panels/shown/panel.js" || p["style"] != "/ui/panels/shown/panel.css" {
		t.Errorf("the assistant's metadata names its panel %v", meta("shown")["panel"])
	}
	if p, ok := meta("plain")["panel"]; ok {
		t.Errorf("an agent without a panel has panel %v in its metadata", p)
	}

	for _, c := range []struct {
		path, ctype string
		status      int
	}{
		{"/ui/panels/shown/panel.js", "text/javascript; charset=utf-8", 200},
		{"/ui/panels/shown/panel.css", "text/css; charset=utf-8", 200},
		{"/ui/panels/shown/notes.txt", "", 404},
		{"/ui/panels/shown/sub/deeper.js", "", 404},
		{"/ui/panels/shown/..%2fpanel.js", "", 404},
		{"/ui/panels/shown/missing.js", "", 404},
		{"/ui/panels/plain/panel.js", "", 404},
		{"/ui/panels/nobody/panel.js", "", 404},
	} {
		resp := do(t, http.MethodGet, ts.URL+c.path, "", nil) // no key: the panel is code, like the page
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("GET %s: %d, want %d", c.path, resp.StatusCode, c.status)
			continue
		}
		if c.status != 200 {
			continue
		}
		h := resp.Header
		if h.Get("Content-Type") != c.ctype || h.Get("X-Content-Type-Options") != "nosniff" ||
			!strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("GET %s: headers %v", c.path, h)
		}
	}
	resp := do(t, http.MethodPost, ts.URL+"/ui/panels/shown/panel.js", "k1", map[string]any{})
	resp.Body.Close()
	if resp.StatusCode/100 != 4 {
		t.Errorf("POST to a panel file: %d, want a 4xx", resp.StatusCode)
	}
}
