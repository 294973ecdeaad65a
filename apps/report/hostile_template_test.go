package report_test

import (
	"bytes"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/report"
	"github.com/loomkit/loom/apps/report/render"
)

// TestHostileTemplates, the attacks of issue 22 on the agent's own
// surface: a template whose DOCTYPE reads a local file, with the schema
// configured as the README recommends, is refused at upload, at its
// line, and no byte of the file reaches the client (that templates a
// model writes go through the same refusal is jrxml's and xsd's tests);
// a template with a 200,000 point page does not pass validation, and its
// preview is drawn within the rasterizer's bound.
func TestHostileTemplates(t *testing.T) {
	schema := jasperSchema(t)
	canary := fmt.Sprintf("LOOM_CANARY_%d", os.Getpid())
	secret := filepath.Join(t.TempDir(), "environ")
	if err := os.WriteFile(secret, []byte("LOOM_API_KEYS="+canary+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l := serve(t, nil, filepath.Join(t.TempDir(), "loom.db"), report.ServerOptions{Schemas: []string{schema}})

	// the file-reading DOCTYPE
	evil := strings.Replace(goodJRXML, "\n<jasperReport", "\n<!DOCTYPE jasperReport [ <!ENTITY % p SYSTEM \"file://"+secret+"\"> %p; ]>\n<jasperReport", 1)
	code, b := l.upload("h1", "evil.jrxml", []byte(evil))
	if code != 422 || !strings.Contains(string(b), "line 2:1: a template may not declare a DOCTYPE") {
		t.Errorf("the DOCTYPE upload: %d %s, want a 422 naming line 2", code, b)
	}
	if bytes.Contains(b, []byte(canary)) {
		t.Error("the refusal shows the file's content")
	}
	if code, _ := l.Do(keyA, "GET", "/threads/h1", nil); code != 404 {
		t.Errorf("the refused upload made a thread: %d", code)
	}

	// the 200,000 point page
	huge := strings.Replace(strings.Replace(goodJRXML, `pageWidth="595"`, `pageWidth="200000"`, 1), `pageHeight="842"`, `pageHeight="200000"`, 1)
	id := l.uploadID("h2", "huge.jrxml", []byte(huge))
	st := l.run("h2", report.Input{Upload: id}).state
	if st.Turn.Status != "fail" || strings.Contains(st.Turn.Reply, "passes validation") {
		t.Errorf("a 200,000 point page: status %q, reply %q", st.Turn.Status, st.Turn.Reply)
	}
	code, b = l.Do(keyA, "GET", "/api/v1/report/threads/h2/preview.png", nil)
	if code != 200 {
		t.Fatalf("preview of the huge page: %d %s", code, b)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil || cfg.Width*cfg.Height > render.MaxPixels || cfg.Width > render.MaxSide || cfg.Height > render.MaxSide {
		t.Errorf("preview %dx%d (%v), past the rasterizer's bound", cfg.Width, cfg.Height, err)
	}
	if code, _ := l.Do(keyA, "GET", "/threads/h2/state", nil); code != 200 {
		t.Errorf("the server after the preview: %d", code)
	}
}
