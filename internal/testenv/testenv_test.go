package testenv

import (
	"errors"
	"testing"
)

// recorder is a testing.TB that records what Need did.
type recorder struct {
	testing.TB
	skipped, failed bool
}

func (r *recorder) Helper() {}
func (r *recorder) Skipf(format string, args ...any) {
	r.skipped = true
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = true
}

func TestNeed(t *testing.T) {
	missing := errors.New("connection refused")
	for _, tt := range []struct {
		ci                  string
		err                 error
		wantSkip, wantFatal bool
	}{
		{"", nil, false, false},
		{"true", nil, false, false},
		{"", missing, true, false},
		{"false", missing, true, false},
		{"true", missing, false, true},
	} {
		t.Setenv("CI", tt.ci)
		r := &recorder{TB: t}
		Need(r, "postgres unreachable", tt.err)
		if r.skipped != tt.wantSkip || r.failed != tt.wantFatal {
			t.Errorf("CI=%q err=%v: skipped %v, failed %v; want %v, %v", tt.ci, tt.err, r.skipped, r.failed, tt.wantSkip, tt.wantFatal)
		}
	}
}

func TestNeedProgramAndFile(t *testing.T) {
	t.Setenv("CI", "")
	r := &recorder{TB: t}
	NeedProgram(r, "go", "the Go toolchain")
	NeedFile(r, "testenv.go", "this package's source")
	if r.skipped || r.failed {
		t.Errorf("present: skipped %v, failed %v; want neither", r.skipped, r.failed)
	}
	NeedProgram(r, "loom-no-such-program", "nothing")
	if !r.skipped || r.failed {
		t.Errorf("a missing program: skipped %v, failed %v; want skipped", r.skipped, r.failed)
	}
	t.Setenv("CI", "true")
	r = &recorder{TB: t}
	NeedFile(r, "no-such-file.ttf", "a font")
	if r.skipped || !r.failed {
		t.Errorf("a missing file under CI: skipped %v, failed %v; want failed", r.skipped, r.failed)
	}
}
