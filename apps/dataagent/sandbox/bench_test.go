package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/internal/testenv"
)

// benchScripts are a trivial pandas script (import, read a small CSV,
// sum) and a bare one, which shows what the sandbox itself costs.
var benchScripts = []struct{ name, code, want string }{
	{"pandas", "import pandas as pd\ndf = pd.read_csv(\"data.csv\")\nprint(int(df[\"v\"].sum()))\n", "6"},
	{"bare", "print(6)\n", "6"},
}

var benchCSV = []byte("k,v\na,1\nb,2\nc,3\n")

// BenchmarkSandboxRun is start to exit of a trivial script in the
// sandbox, the work directory made and removed included.
func BenchmarkSandboxRun(b *testing.B) {
	r := &Runner{}
	testenv.Need(b, "the sandbox (bwrap, /usr/bin/python3 with pandas, numpy and matplotlib, prlimit)", r.Check(context.Background()))
	for _, s := range benchScripts {
		b.Run(s.name, func(b *testing.B) {
			job := Job{Code: s.code, Files: map[string][]byte{"data.csv": benchCSV}}
			for b.Loop() {
				res, err := r.Run(context.Background(), job)
				if err != nil {
					b.Fatal(err)
				}
				if strings.TrimSpace(res.Stdout) != s.want {
					b.Fatalf("stdout %q stderr %q", res.Stdout, res.Stderr)
				}
			}
		})
	}
}

// BenchmarkDirectRun is the same scripts run by the same interpreter
// without the sandbox, for comparison.
func BenchmarkDirectRun(b *testing.B) {
	py := (&Runner{}).python()
	testenv.NeedFile(b, py, "the Python interpreter")
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "data.csv"), benchCSV, 0o644); err != nil {
		b.Fatal(err)
	}
	for _, s := range benchScripts {
		b.Run(s.name, func(b *testing.B) {
			if err := os.WriteFile(filepath.Join(dir, "main.py"), []byte(s.code), 0o644); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				cmd := exec.Command(py, "-I", "-B", "main.py")
				cmd.Dir = dir
				// The sandbox's environment: one BLAS thread, as there.
				cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "LANG=C.UTF-8", "MPLBACKEND=Agg",
					"OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1", "MKL_NUM_THREADS=1"}
				out, err := cmd.CombinedOutput()
				if err != nil || strings.TrimSpace(string(out)) != s.want {
					b.Fatalf("%v: %s", err, out)
				}
			}
		})
	}
}
