package leash

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loomkit/loom/internal/testenv"
)

func needPrlimit(t *testing.T) {
	t.Helper()
	testenv.NeedProgram(t, "prlimit", "Debian package util-linux")
}

func TestRunPassesInputAndKeepsEnvironmentOut(t *testing.T) {
	needPrlimit(t)
	t.Setenv("LOOM_LEASH_SECRET", "canary-7731")
	res, err := Run(context.Background(), Limits{}, Cmd{Name: "sh", Args: []string{"-c", "cat; env; exit 3"}, Stdin: strings.NewReader("hello\n")})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(res.Stdout), "hello\n") || res.ExitCode != 3 {
		t.Fatalf("stdout %q, exit %d; want hello first and exit 3", res.Stdout, res.ExitCode)
	}
	if strings.Contains(string(res.Stdout), "canary-7731") {
		t.Fatalf("the server's environment reached the program: %s", res.Stdout)
	}
}

func TestRunKillsAtTheWallLimit(t *testing.T) {
	needPrlimit(t)
	_, err := Run(context.Background(), Limits{Wall: 200 * time.Millisecond, CPU: 10 * time.Second}, Cmd{Name: "sh", Args: []string{"-c", "sleep 30 & sleep 30"}})
	var le *Error
	if !errors.As(err, &le) || !strings.Contains(le.Error(), "ran past its 200ms limit") {
		t.Fatalf("err = %v, want the wall limit", err)
	}
}

func TestRunStopsAProgramPastItsMemory(t *testing.T) {
	needPrlimit(t)
	// python3 asks for 512 MiB under a 64 MiB address space: it fails.
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is missing")
	}
	res, err := Run(context.Background(), Limits{Memory: 64 << 20}, Cmd{Name: "python3", Args: []string{"-c", "b = bytearray(512 << 20)"}})
	if err == nil && res.ExitCode == 0 {
		t.Fatal("a program asking for 512 MiB under a 64 MiB limit finished normally")
	}
}

func TestRunCapsOutput(t *testing.T) {
	needPrlimit(t)
	res, err := Run(context.Background(), Limits{Output: 1 << 20}, Cmd{Name: "sh", Args: []string{"-c", "yes"}})
	var le *Error
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "printed more than 1 MiB") {
		t.Fatalf("err = %v, want the output cap", err)
	}
	if len(res.Stdout) != 1<<20 {
		t.Fatalf("kept %d bytes, want %d", len(res.Stdout), 1<<20)
	}
}

func TestRunMissingProgram(t *testing.T) {
	_, err := Run(context.Background(), Limits{}, Cmd{Name: "loom-no-such-program"})
	if err == nil || !strings.Contains(err.Error(), "loom-no-such-program is not installed") {
		t.Fatalf("err = %v", err)
	}
}

func TestSweepRemovesOnlyDeadProcessesFolders(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	mine, err := TempDir("ocr")
	if err != nil {
		t.Fatal(err)
	}
	// A process that has exited: its pid is free.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(tmp, "loom-ocr-"+strconv.Itoa(cmd.Process.Pid)+"-123")
	other := filepath.Join(tmp, "loom-ocr-notapid-1")
	for _, d := range []string{dead, other} {
		if err := os.MkdirAll(filepath.Join(d, "work"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "work", "data_1.csv"), []byte("secret"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	n, err := Sweep()
	if err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v; want 1 folder removed", n, err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the dead process's folder is still there: %v", err)
	}
	for _, d := range []string{mine, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
	if fi, _ := os.Stat(mine); fi.Mode().Perm() != 0o700 {
		t.Errorf("TempDir made %v, want 0700", fi.Mode().Perm())
	}
}
