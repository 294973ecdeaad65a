package ui_test

import (
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"

	dataagentpanel "github.com/loomkit/loom/apps/dataagent/panel"
	reportpanel "github.com/loomkit/loom/apps/report/panel"
	schedulepanel "github.com/loomkit/loom/apps/schedule/panel"
	"github.com/loomkit/loom/server/ui"
)

// The framework's page names no app: an agent's own view is its panel,
// which the assistant's metadata names. No file of the page holds an
// app's name as a word in quotes or a path, nor an app's API.
func TestPageNamesNoApp(t *testing.T) {
	dirs, err := os.ReadDir("../../apps")
	if err != nil {
		t.Fatal(err)
	}
	files, err := ui.Files()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range dirs {
		if !d.IsDir() || d.Name() == "internal" {
			continue
		}
		n++
		named := regexp.MustCompile(`['"/]` + regexp.QuoteMeta(d.Name()) + `['"/]|/api/v1/` + regexp.QuoteMeta(d.Name()))
		for name, b := range files {
			if loc := named.FindIndex(b); loc != nil {
				line := 1 + strings.Count(string(b[:loc[0]]), "\n")
				t.Errorf("%s:%d names the app %s: %q", name, line, d.Name(), b[loc[0]:loc[1]])
			}
		}
	}
	if n < 3 {
		t.Fatalf("found %d apps in ../../apps", n)
	}
}

// Agents' panels keep the page's rules: DOM calls only (no HTML from
// strings), nothing from other hosts, no code from strings, and both
// languages for every message they add.
func TestPanelsAreSafe(t *testing.T) {
	unsafe := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|https?:|@import|\bimport\s*\(`)
	for app, panel := range map[string]fs.FS{"report": reportpanel.Files, "dataagent": dataagentpanel.Files, "schedule": schedulepanel.Files} {
		for _, name := range []string{"panel.js", "panel.css"} {
			b, err := fs.ReadFile(panel, name)
			if err != nil {
				t.Errorf("%s's panel: %v", app, err)
				continue
			}
			if loc := unsafe.FindIndex(b); loc != nil {
				line := 1 + strings.Count(string(b[:loc[0]]), "\n")
				t.Errorf("%s/panel/%s:%d: %q", app, name, line, b[loc[0]:loc[1]])
			}
			if name != "panel.js" {
				continue
			}
			// Each message key is in both catalogues.
			js := string(b)
			en, zh := strings.Index(js, "\n  en: {"), strings.Index(js, "\n  zh: {")
			if en < 0 || zh < en {
				t.Errorf("%s's panel has no en and zh messages", app)
				continue
			}
			key := regexp.MustCompile(`'([a-z]+\.[A-Za-z0-9_.]+)':`)
			keys := func(s string) map[string]bool {
				m := map[string]bool{}
				for _, k := range key.FindAllStringSubmatch(s, -1) {
					m[k[1]] = true
				}
				return m
			}
			end := strings.Index(js[zh:], "\n};")
			if end < 0 {
				t.Errorf("%s's panel: the messages do not end", app)
				continue
			}
			ek, zk := keys(js[en:zh]), keys(js[zh:zh+end])
			for k := range ek {
				if !zk[k] {
					t.Errorf("%s's panel has %s in English only", app, k)
				}
			}
			for k := range zk {
				if !ek[k] {
					t.Errorf("%s's panel has %s in Chinese only", app, k)
				}
			}
			if len(ek) < 5 {
				t.Errorf("%s's panel has %d messages", app, len(ek))
			}
		}
	}
}
