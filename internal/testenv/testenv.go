// Package testenv decides what a test does when something it needs from
// outside the repository (a database, a program, a font, data beside the
// repository) is missing: it skips, saying what is missing, except under
// CI=true, where everything must be present and the test fails instead.
package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// CI reports whether the tests run under CI=true, where everything a
// test needs must be present.
func CI() bool { return os.Getenv("CI") == "true" }

// Need skips t when err is not nil, naming what is missing and how to
// provide it (what) and why (err); under CI=true it fails t instead. It
// does nothing when err is nil.
func Need(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if CI() {
		t.Fatalf("%s (required under CI=true): %v", what, err)
	} else {
		t.Skipf("%s: %v", what, err)
	}
}

// NeedProgram is Need for a program on PATH, installed by pkg (such as
// "Debian package libxml2-utils").
func NeedProgram(t testing.TB, program, pkg string) {
	t.Helper()
	_, err := exec.LookPath(program)
	Need(t, program+" ("+pkg+")", err)
}

// NeedFile is Need for a file, such as a font, that what names and says
// how to install.
func NeedFile(t testing.TB, path, what string) {
	t.Helper()
	_, err := os.Stat(path)
	Need(t, what, err)
}
