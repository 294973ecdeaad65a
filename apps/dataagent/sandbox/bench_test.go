package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// benchScript is a trivial pandas script: import, read a small CSV, sum.
const benchScript = `import pandas as pd
df = pd.read_csv("data.csv")
print(int(df["v"].sum()))
`

var benchCSV = []byte("k,v\na,1\nb,2\nc,3\n")

// BenchmarkSandboxRun is start to exit of a trivial pandas script in the
// sandbox, the work directory made and removed included.
func BenchmarkSandboxRun(b *testing.B) {
	r := &Runner{}
	if err := r.Check(context.Background()); err != nil {
		if os.Getenv("CI") == "true" {
			b.Fatal(err)
		}
		b.Skip(err)
	}
	job := Job{Code: benchScript, Files: map[string][]byte{"data.csv": benchCSV}}
	for b.Loop() {
		res, err := r.Run(context.Background(), job)
		if err != nil {
			b.Fatal(err)
		}
		if strings.TrimSpace(res.Stdout) != "6" {
			b.Fatalf("stdout %q stderr %q", res.Stdout, res.Stderr)
		}
	}
}

// BenchmarkDirectRun is the same script run by the same interpreter
// without the sandbox, for comparison.
func BenchmarkDirectRun(b *testing.B) {
	py := (&Runner{}).python()
	if _, err := os.Stat(py); err != nil {
		if os.Getenv("CI") == "true" {
			b.Fatal(err)
		}
		b.Skipf("needs %s: %v", py, err)
	}
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "data.csv"), benchCSV, 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.py"), []byte(benchScript), 0o644); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		cmd := exec.Command(py, "-I", "-B", "main.py")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "6" {
			b.Fatalf("%v: %s", err, out)
		}
	}
}
