package report_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/report"
	"github.com/loomkit/loom/apps/report/render"
)

// TestHostileTemplates, the attacks of issue 22 on the agent's own
// surface: a template whose DOCTYPE reads a local file, with the schema
// configured as the README recommends, is refused at its line and no
// byte of the file reaches the client; a template with a 200,000 point
// page does not pass validation, and its preview is drawn within the
// rasterizer's bound.
func TestHostileTemplates(t *testing.T) {
	schema := sharedData(t, "jrxml/xsd/jasperreport.xsd")
	if _, err := exec.LookPath("xmllint"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("xmllint is not installed (Debian package libxml2-utils)")
		}
		t.Skip("xmllint is not installed (Debian package libxml2-utils)")
	}
	canary := fmt.Sprintf("LOOM_CANARY_%d", os.Getpid())
	secret := filepath.Join(t.TempDir(), "environ")
	if err := os.WriteFile(secret, []byte("LOOM_API_KEYS="+canary+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l := serve(t, nil, filepath.Join(t.TempDir(), "loom.db"), report.ServerOptions{Schemas: []string{schema}})

	// the file-reading DOCTYPE
	evil := strings.Replace(goodJRXML, "\n<jasperReport", "\n<!DOCTYPE jasperReport [ <!ENTITY % p SYSTEM \"file://"+secret+"\"> %p; ]>\n<jasperReport", 1)
	id := l.uploadID("h1", "evil.jrxml", []byte(evil))
	st := l.run("h1", report.Input{Upload: id}).state
	if st.Turn.Status != "fail" || len(st.Turn.Problems) != 1 || st.Turn.Problems[0].Line != 2 || st.Turn.Problems[0].Check != "external" {
		t.Errorf("the DOCTYPE: status %q, problems %+v", st.Turn.Status, st.Turn.Problems)
	}
	if !strings.Contains(st.Turn.Reply, "- line 2: a template may not declare a DOCTYPE") {
		t.Errorf("the reply does not say what is refused: %q", st.Turn.Reply)
	}
	for _, p := range []string{"/threads/h1/state", "/api/v1/report/threads/h1/preview.png", "/api/v1/report/threads/h1/current.pdf"} {
		if _, b := l.Do(keyA, "GET", p, nil); bytes.Contains(b, []byte(canary)) {
			t.Errorf("GET %s shows the file's content", p)
		}
	}
	if b, _ := json.Marshal(st); bytes.Contains(b, []byte(canary)) {
		t.Error("the state holds the file's content")
	}

	// the 200,000 point page
	huge := strings.Replace(strings.Replace(goodJRXML, `pageWidth="595"`, `pageWidth="200000"`, 1), `pageHeight="842"`, `pageHeight="200000"`, 1)
	id = l.uploadID("h2", "huge.jrxml", []byte(huge))
	st = l.run("h2", report.Input{Upload: id}).state
	if st.Turn.Status != "fail" || strings.Contains(st.Turn.Reply, "passes validation") {
		t.Errorf("a 200,000 point page: status %q, reply %q", st.Turn.Status, st.Turn.Reply)
	}
	code, b := l.Do(keyA, "GET", "/api/v1/report/threads/h2/preview.png", nil)
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
