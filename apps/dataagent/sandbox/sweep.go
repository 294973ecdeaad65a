package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Each run's directory is named after the process that made it,
// loom-sandbox-PID-RANDOM, and holds lockName locked (flock) while the
// run lasts, so that the directory a killed process left behind (the
// query results the script read, say) can be told from one in use, even
// when the process id has been taken by another process since.
const (
	basePrefix = "loom-sandbox-"
	lockName   = ".lock"
	// staleAfter is how old a directory of a live process id must be,
	// with its lock free, to be taken for a killed process's: a run
	// takes the lock as it makes the directory, so a younger one may be
	// between the two.
	staleAfter = time.Minute
)

// makeBase makes a run's directory under root (os.TempDir() when empty)
// and locks it; unlock releases the lock.
func makeBase(root string) (base string, unlock func(), err error) {
	base, err = os.MkdirTemp(root, basePrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", nil, fmt.Errorf("making the sandbox directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(base, lockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		if err = flock(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		removeAll(base)
		return "", nil, fmt.Errorf("locking the sandbox directory: %w", err)
	}
	return base, func() { f.Close() }, nil
}

// swept keeps the roots this process has swept.
var swept sync.Map

// sweepOnce sweeps root the first time this process runs a script there.
func sweepOnce(root string) {
	if _, done := swept.LoadOrStore(root, true); !done {
		_, _ = Sweep(root)
	}
}

// Sweep removes the run directories under root (os.TempDir() when empty)
// that a process killed during a run left behind: those of a process
// that is gone, and those whose lock nobody holds. Directories of this
// process and runs in progress elsewhere are kept. It says how many it
// removed. The first Run under a root calls it; a server calls it when
// it starts.
func Sweep(root string) (int, error) {
	if root == "" {
		root = os.TempDir()
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return 0, fmt.Errorf("sweeping sandbox directories: %w", err)
	}
	n := 0
	var errs []error
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if !e.IsDir() || !strings.HasPrefix(e.Name(), basePrefix) || !stale(dir, e.Name()) {
			continue
		}
		removeAll(dir)
		if _, err := os.Lstat(dir); err == nil {
			errs = append(errs, fmt.Errorf("could not remove %s", e.Name()))
			continue
		}
		n++
	}
	if err := errors.Join(errs...); err != nil {
		return n, fmt.Errorf("sweeping sandbox directories: %w", err)
	}
	return n, nil
}

// stale says whether the run directory dir, called name, was left by a
// process killed during a run.
func stale(dir, name string) bool {
	pidText, _, _ := strings.Cut(strings.TrimPrefix(name, basePrefix), "-")
	pid, err := strconv.Atoi(pidText)
	switch {
	case err != nil || pid <= 0:
		// Named before runs carried their process id: stale once older
		// than any run may last.
		return olderThan(dir, 10*DefaultLimits().Wall)
	case pid == os.Getpid():
		return false // this process removes its own
	case !alive(pid):
		return true
	}
	// The process id is in use: by the process that made dir, running,
	// or by another one since that process was killed. The lock tells.
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if flock(f) != nil {
		return false // held: a run in progress
	}
	return olderThan(dir, staleAfter)
}

// flock locks f for this open file, without waiting; the lock goes when
// f is closed, or when the process ends however it ends.
func flock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

func olderThan(dir string, d time.Duration) bool {
	st, err := os.Stat(dir)
	return err == nil && time.Since(st.ModTime()) > d
}

// alive says whether process pid exists (EPERM: it does, as another user).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
