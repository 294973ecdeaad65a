package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// workRoot is a fresh directory for run directories, which the sandbox's
// user can reach.
func workRoot(t *testing.T) string {
	t.Helper()
	// Not t.TempDir(), whose parent the sandbox's user cannot reach.
	dir, err := os.MkdirTemp("", "sandbox-root-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// leftover makes a run directory as a process pid would leave it: a
// query result in its work directory, and, when locked, its lock held
// (by this process, as the run would) until the test ends.
func leftover(t *testing.T, root string, pid int, locked bool, age time.Duration) string {
	t.Helper()
	dir := filepath.Join(root, basePrefix+strconv.Itoa(pid)+"-"+strconv.Itoa(len(mustRead(t, root))+100))
	if err := os.MkdirAll(filepath.Join(dir, "work"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "work", "data_1.csv"), []byte("secret,rows\n1,2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if locked {
		if err := flock(f); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
	} else {
		f.Close()
	}
	when := time.Now().Add(-age)
	if err := os.Chtimes(dir, when, when); err != nil {
		t.Fatal(err)
	}
	return dir
}

func mustRead(t *testing.T, dir string) []os.DirEntry {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// gonePID returns the id of a process that has exited.
func gonePID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// livePID returns the id of a process that runs until the test ends.
func livePID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

// TestSweep removes the run directories killed processes left and keeps
// those in use: a gone process's is removed; a live process's whose lock
// is held, or that is young, or that has no lock, is kept; one of a live
// process id with its lock free and old (the id taken by another
// process since) is removed; this process's own are kept.
func TestSweep(t *testing.T) {
	root := workRoot(t)
	gone := leftover(t, root, gonePID(t), false, 0)
	live := livePID(t)
	inUse := leftover(t, root, live, true, time.Hour)
	young := leftover(t, root, live, false, 0)
	reused := leftover(t, root, live, false, time.Hour)
	mine := leftover(t, root, os.Getpid(), false, time.Hour)
	noLock := leftover(t, root, live, false, time.Hour)
	if err := os.Remove(filepath.Join(noLock, lockName)); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(root, "not-a-sandbox")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	n, err := Sweep(root)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("Sweep removed %d, want 2", n)
	}
	for _, c := range []struct {
		dir  string
		kept bool
	}{{gone, false}, {inUse, true}, {young, true}, {reused, false}, {mine, true}, {noLock, true}, {other, true}} {
		_, err := os.Stat(c.dir)
		if kept := err == nil; kept != c.kept {
			t.Errorf("%s: kept %v, want %v", filepath.Base(c.dir), kept, c.kept)
		}
	}
}

// TestKilledRunSwept kills a process in the middle of a run, as a SIGKILL
// of the server would: its run directory, with the query result the
// script read, is left; the first run of a new Runner on the same root
// removes it. Runs that succeed, fail, or are refused leave nothing.
func TestKilledRunSwept(t *testing.T) {
	r := runner(t)
	r.WorkRoot = workRoot(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	helper := exec.Command(exe, "-test.run=^TestSweepHelper$")
	helper.Env = append(os.Environ(), "LOOM_SANDBOX_HELPER="+r.WorkRoot)
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	defer helper.Wait()
	// Wait for the helper's run to be under way: its input is written.
	var left []string
	for end := time.Now().Add(time.Minute); time.Now().Before(end) && len(left) == 0; time.Sleep(50 * time.Millisecond) {
		left, _ = filepath.Glob(filepath.Join(r.WorkRoot, basePrefix+"*", "work", "data_1.csv"))
	}
	if len(left) == 0 {
		helper.Process.Kill()
		t.Fatal("the helper's run never started")
	}
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	helper.Wait()
	if _, err := os.Stat(left[0]); err != nil {
		t.Fatalf("the killed run left nothing to sweep: %v", err)
	}
	if !strings.Contains(filepath.Base(filepath.Dir(filepath.Dir(left[0]))), strconv.Itoa(helper.Process.Pid)) {
		t.Errorf("the run directory %s is not named after its process %d", left[0], helper.Process.Pid)
	}

	stillWorks(t, r)
	if _, err := os.Stat(filepath.Dir(filepath.Dir(left[0]))); !os.IsNotExist(err) {
		t.Errorf("the killed run's directory is still there: %v", err)
	}
	run(t, r, Job{Code: "raise SystemExit(3)", Files: map[string][]byte{"data_1.csv": []byte("a\n1\n")}})
	if _, err := r.Run(context.Background(), Job{Code: "pass", Files: map[string][]byte{"../out.csv": nil}}); err == nil {
		t.Error("an input outside the work directory was taken")
	}
	if es := mustRead(t, r.WorkRoot); len(es) != 0 {
		t.Errorf("left behind: %v", es)
	}
}

// TestSweepHelper is the process TestKilledRunSwept kills: it runs a
// script that reads its input and sleeps.
func TestSweepHelper(t *testing.T) {
	root := os.Getenv("LOOM_SANDBOX_HELPER")
	if root == "" {
		t.Skip("run by TestKilledRunSwept")
	}
	r := &Runner{WorkRoot: root}
	r.Run(context.Background(), Job{Code: "open('data_1.csv').read()\nimport time\ntime.sleep(120)\n",
		Files: map[string][]byte{"data_1.csv": []byte("secret,rows\n1,2\n")}})
}
