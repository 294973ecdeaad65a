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
