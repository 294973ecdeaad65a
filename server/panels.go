package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path"
	"time"
)

// An agent's panel is its panelScript and, if it has one, panelStyle.
const (
	panelScript = "panel.js"
	panelStyle  = "panel.css"
)

// maxPanelFile is the largest panel file served: a panel is a page's
// worth of code, not a place for data.
const maxPanelFile = 1 << 20

// panelTypes are the media types of the files a panel may serve.
var panelTypes = map[string]string{
	".js":  "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8",
}

// panelMetadata is what an assistant's metadata says of its agent's
// panel: the paths of its script and style; nil for an agent without one.
func panelMetadata(a Agent) map[string]string {
	if a.Panel == nil {
		return nil
	}
	base := "/ui/panels/" + a.Name + "/"
	m := map[string]string{"script": base + panelScript}
	if _, err := fs.Stat(a.Panel, panelStyle); err == nil {
		m["style"] = base + panelStyle
	}
	return m
}

// panelRoutes serves agents' panels: GET /ui/panels/{agent}/{file}, a
// JavaScript or CSS file at the top of the agent's Panel. Like the page,
// they need no key: they are code, and what they show they fetch with
// the page's key.
func (s *Server) panelRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /ui/panels/{agent}/{file}", s.servePanel)
}

func (s *Server) servePanel(w http.ResponseWriter, r *http.Request) {
	name, file := r.PathValue("agent"), r.PathValue("file")
	a, ok := s.agents[name]
	if !ok || a.Panel == nil {
		writeError(w, errorf(http.StatusNotFound, "not_found", "agent %q has no panel", name))
		return
	}
	ctype, ok := panelTypes[path.Ext(file)]
	if !ok || !fs.ValidPath(file) {
		writeError(w, errorf(http.StatusNotFound, "not_found", "a panel serves only its .js and .css files, not %q", file))
		return
	}
	f, err := a.Panel.Open(file)
	if err != nil {
		writeError(w, errorf(http.StatusNotFound, "not_found", "agent %q's panel has no file %q", name, file))
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.IsDir() || st.Size() > maxPanelFile {
		writeError(w, errorf(http.StatusNotFound, "not_found", "agent %q's panel has no file %q", name, file))
		return
	}
	b, err := io.ReadAll(io.LimitReader(f, maxPanelFile))
	if err != nil {
		writeError(w, fmt.Errorf("read agent %q's panel file %q: %w", name, file, err))
		return
	}
	sum := sha256.Sum256(b)
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("ETag", `"`+hex.EncodeToString(sum[:12])+`"`)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(b))
}
