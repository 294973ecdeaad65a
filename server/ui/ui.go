// Package ui is Loom's web page: plain HTML, CSS and JavaScript embedded in
// the binary, with no build step and nothing loaded from other hosts.
//
// The page speaks English and Chinese (the browser's language, with a
// switch), from one message catalogue, static/i18n.js.
//
// The page talks to the server's own LangGraph-compatible API: it lists
// the agents, chats with one over a streamed run (reasoning, tool calls,
// status lines and confirm cards that resume the run), draws the agent's
// graph as SVG, and shows the thread's checkpoints with undo and fork.
//
// An agent may bring its own view (server.Agent.Panel): when the
// assistant's metadata names a panel, the page loads its style and
// imports its module, whose default export is called with what the page
// offers — el (elements by DOM calls, with message keys that a language
// switch translates again), t, lang, setMsg, words (the panel's own
// messages, {en, zh}), api, headers, apiError, fetchBlob, saveBlob, enc,
// thread and agent — and returns {element, refresh, upload, reply,
// close}: the element shown beside the chat, refreshed when the thread
// changes or a run ends; upload, {accept, title, send(file)}, for the
// chat's upload button, send giving the turn's input; reply(text), an
// element for what a reply names (a report) or null. The page itself
// names no agent. Files are fetched with the API key and shown or saved
// as blob URLs, since a plain link or image would send no key.
//
// Serve it as the server's UI:
//
//	server.New(ctx, server.Options{Agents: reg, UI: ui.Handler()})
package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var static embed.FS

// contentTypes are the types of the files the page is made of; a file
// with another extension is not served.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
}

// csp keeps the page to its own files and its own server. Scripts are
// the page's own only; inline styles are allowed because a report shown in
// a sandboxed frame (srcdoc, which inherits this policy) carries its
// stylesheet inline; images may be blob URLs, which is how the page shows
// files it fetched with the API key.
const csp = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// file is one embedded file, ready to serve.
type file struct {
	body  []byte
	ctype string
	etag  string
}

// Files returns the page's embedded files by name ("index.html",
// "app.js", …), for tests and tools that check what the page is made of.
func Files() (map[string][]byte, error) {
	out := map[string][]byte{}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := static.ReadFile(p)
		if err != nil {
			return fmt.Errorf("ui: read %s: %w", p, err)
		}
		out[strings.TrimPrefix(p, "static/")] = b
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ui: list files: %w", err)
	}
	return out, nil
}

// Handler returns the web page's handler: index.html at "/" (and
// "/index.html"), the page's scripts and styles by name, 404 for any other
// path and 405 for methods other than GET and HEAD. Responses carry an
// ETag, a Content-Security-Policy that allows only the page's own files
// and server, and no-cache, so a new binary's page is picked up at once.
func Handler() http.Handler {
	names, err := Files()
	if err != nil {
		panic(err) // the files are embedded: a broken build
	}
	files := map[string]*file{}
	for name, b := range names {
		ct, ok := contentTypes[path.Ext(name)]
		if !ok {
			continue
		}
		sum := sha256.Sum256(b)
		files["/"+name] = &file{body: b, ctype: ct, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
	}
	files["/"] = files["/index.html"]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := files[r.URL.Path]
		if f == nil {
			http.Error(w, "404 page not found: the web page is at /", http.StatusNotFound)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "405 method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Type", f.ctype)
		h.Set("ETag", f.etag)
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", csp)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
	})
}
