// Package testenv decides what a test does when something it needs from
// outside the repository (a database, a program, a font, data beside the
// repository) is missing: it skips, saying what is missing, except under
// CI=true, where everything must be present and the test fails instead.
package testenv

import (
	"os"
	"testing"
)

// Need skips t when err is not nil, naming what is missing and how to
// provide it (what) and why (err); under CI=true it fails t instead. It
// does nothing when err is nil.
func Need(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (required under CI=true): %v", what, err)
	} else {
		t.Skipf("%s: %v", what, err)
	}
}
