package ui_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/loomkit/loom/server/ui"
)

// The page's files are served with their types, the security headers and
// an ETag; other paths are 404 and other methods 405.
func TestHandler(t *testing.T) {
	ts := httptest.NewServer(ui.Handler())
	defer ts.Close()
	for _, c := range []struct{ path, ctype, has string }{
		{"/", "text/html; charset=utf-8", `<script type="module" src="app.js">`},
		{"/index.html", "text/html; charset=utf-8", `id="timeline"`},
		{"/app.js", "text/javascript; charset=utf-8", "runs/stream"},
		{"/graph.js", "text/javascript; charset=utf-8", "export function drawGraph"},
		{"/app.css", "text/css; charset=utf-8", ".card.confirm"},
	} {
		resp, err := http.Get(ts.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != c.ctype {
			t.Errorf("GET %s: %d %q, want 200 %q", c.path, resp.StatusCode, resp.Header.Get("Content-Type"), c.ctype)
		}
		if !strings.Contains(string(b), c.has) {
			t.Errorf("GET %s: body lacks %q", c.path, c.has)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy %q", c.path, csp)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", c.path)
		}
		etag := resp.Header.Get("ETag")
		if etag == "" {
			t.Fatalf("GET %s: no ETag", c.path)
		}
		req, _ := http.NewRequest("GET", ts.URL+c.path, nil)
		req.Header.Set("If-None-Match", etag)
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s with its ETag: %d, want 304", c.path, resp.StatusCode)
		}
	}
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/nope", 404},
		{"GET", "/static/app.js", 404},
		{"GET", "/../go.mod", 404},
		{"POST", "/", 405},
		{"DELETE", "/app.js", 405},
		{"HEAD", "/app.css", 200},
	} {
		req, _ := http.NewRequest(c.method, ts.URL+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, resp.StatusCode, c.status)
		}
	}
}

// The page is Loom's own: no file names another host (no CDN, no
// third-party script, font or style), and every file is one the handler
// serves.
func TestFilesAreSelfContained(t *testing.T) {
	files, err := ui.Files()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"index.html", "app.js", "graph.js", "i18n.js", "app.css"} {
		if _, ok := files[want]; !ok {
			t.Errorf("no %s among the embedded files", want)
		}
	}
	external := regexp.MustCompile(`(?i)https?:|//cdn|\bsrc=["']?//|\bhref=["']?//|url\(\s*["']?//|@import|\bimport\s*\(?\s*["'](https?:)?//`)
	ts := httptest.NewServer(ui.Handler())
	defer ts.Close()
	for name, b := range files {
		if loc := external.FindIndex(b); loc != nil {
			line := 1 + strings.Count(string(b[:loc[0]]), "\n")
			t.Errorf("%s:%d refers to another host: %q", name, line, b[loc[0]:loc[1]])
		}
		resp, err := http.Get(ts.URL + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("embedded file %s is not served: %d", name, resp.StatusCode)
		}
	}
	// Every script and style the page loads is one of its own files.
	ref := regexp.MustCompile(`(?:src|href)="([^"]+)"`)
	for _, m := range ref.FindAllStringSubmatch(string(files["index.html"]), -1) {
		if strings.HasPrefix(m[1], "data:") {
			continue
		}
		if _, ok := files[m[1]]; !ok {
			t.Errorf("index.html loads %q, which is not an embedded file", m[1])
		}
	}
	for name, b := range files {
		for _, m := range regexp.MustCompile(`from\s+'\./([^']+)'`).FindAllStringSubmatch(string(b), -1) {
			if _, ok := files[m[1]]; !ok {
				t.Errorf("%s imports %q, which is not an embedded file", name, m[1])
			}
		}
	}
}
