// Package reporttest finds the JasperReports reference data the report
// packages' tests read: the demo templates and the report schemas kept
// in the data folder beside the repository (shared/data/jrxml).
package reporttest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/loomkit/loom/internal/testenv"
)

// Dir is the jrxml data folder: LOOM_JRXML_DATA, else shared/data/jrxml
// beside the repository. Without it the test is skipped, or fails under
// CI=true.
func Dir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("LOOM_JRXML_DATA")
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				dir = filepath.Join(d, "..", "shared", "data", "jrxml")
				break
			}
			if filepath.Dir(d) == d {
				t.Fatalf("no go.mod above %s", wd)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "samples")); err != nil {
		testenv.Need(t, "the jrxml data are not beside the repository (set LOOM_JRXML_DATA)", err)
	}
	return dir
}

// Samples are the paths of the demo templates, sorted.
func Samples(t testing.TB) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(Dir(t), "samples", "*.jrxml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no templates in %s: %v", Dir(t), err)
	}
	return paths
}

// Schema is the path of the schema file name (jasperreport.xsd or
// components.xsd).
func Schema(t testing.TB, name string) string {
	t.Helper()
	return filepath.Join(Dir(t), "xsd", name)
}
