// Package leash runs external programs — tesseract, pdftoppm, xmllint —
// on a leash: a wall-clock deadline, CPU-time and address-space limits
// set with prlimit (util-linux), output kept up to a cap, the whole
// process group killed at the deadline, and an environment of its own.
// It also keeps their temporary folders: each is named after the process
// that made it, so a process that starts can remove the folders of one
// that was killed.
package leash

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Limits bound one run of a program. Zero fields take the defaults.
type Limits struct {
	// Wall is how long the program may run before it is killed
	// (default 60 s).
	Wall time.Duration
	// CPU is the CPU time it may use (default: Wall).
	CPU time.Duration
	// Memory is its address space in bytes (default 1 GiB).
	Memory int64
	// Output is how many bytes of its standard output are kept; past
	// that it is killed (default 64 MiB). Standard error keeps 64 KiB.
	Output int64
}

func (l Limits) withDefaults() Limits {
	if l.Wall <= 0 {
		l.Wall = time.Minute
	}
	if l.CPU <= 0 {
		l.CPU = l.Wall
	}
	if l.Memory <= 0 {
		l.Memory = 1 << 30
	}
	if l.Output <= 0 {
		l.Output = 64 << 20
	}
	return l
}

// errWall is the cause of a run's context when its wall time is up.
var errWall = errors.New("wall time is up")

// maxStderr is how much of a program's standard error is kept.
const maxStderr = 64 << 10

// Error is a program that did not finish on its own: it ran past a
// limit, or was killed by a signal (running out of memory under the
// address-space limit usually ends this way). Its message names the
// program and the limit, nothing the program printed.
type Error struct {
	Program string
	// Reason is what stopped it, in words: "ran past its 30s limit".
	Reason string
}

func (e *Error) Error() string { return e.Program + " " + e.Reason }

// Cmd is a program to run.
type Cmd struct {
	// Name is the program, looked up on PATH.
	Name string
	Args []string
	// Stdin is its standard input (none when nil).
	Stdin io.Reader
	// Dir is its working directory (default: the system's temporary
	// folder, never the server's own).
	Dir string
	// Env is its environment, besides PATH and LANG=C.UTF-8, which it
	// always gets; the server's own environment is never passed on.
	Env []string
}

// Result is what a program printed and how it ended.
type Result struct {
	Stdout, Stderr []byte
	// ExitCode is its exit status; non-zero is not an error of Run's.
	ExitCode int
}

// Run runs c under l. The error is for a program that could not be
// started (ErrNotFound wrapped when it is not installed) or that did not
// finish on its own (*Error); a program that exits non-zero is a Result
// with its ExitCode.
func Run(ctx context.Context, l Limits, c Cmd) (*Result, error) {
	l = l.withDefaults()
	bin, err := exec.LookPath(c.Name)
	if err != nil {
		return nil, fmt.Errorf("%s is not installed: %w", c.Name, err)
	}
	pl, err := exec.LookPath("prlimit")
	if err != nil {
		return nil, fmt.Errorf("running %s: prlimit is not installed (Debian package util-linux): %w", c.Name, err)
	}
	cpu := int64((l.CPU + time.Second - 1) / time.Second)
	args := append([]string{
		"--as=" + strconv.FormatInt(l.Memory, 10),
		"--cpu=" + strconv.FormatInt(cpu, 10),
		"--core=0",
		"--", bin,
	}, c.Args...)
	ctx, cancel := context.WithTimeoutCause(ctx, l.Wall, errWall)
	defer cancel()
	cmd := exec.CommandContext(ctx, pl, args...)
	cmd.Stdin = c.Stdin
	cmd.Dir = c.Dir
	if cmd.Dir == "" {
		cmd.Dir = os.TempDir()
	}
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "OMP_THREAD_LIMIT=1"}, c.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	stdout := &capped{max: l.Output, full: func() { _ = cmd.Cancel() }}
	stderr := &capped{max: maxStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err = cmd.Run()
	res := &Result{Stdout: stdout.b.Bytes(), Stderr: stderr.b.Bytes()}
	switch {
	case stdout.over:
		return res, &Error{Program: c.Name, Reason: fmt.Sprintf("printed more than %d MiB", l.Output>>20)}
	case context.Cause(ctx) == errWall:
		return res, &Error{Program: c.Name, Reason: fmt.Sprintf("ran past its %s limit", l.Wall)}
	case ctx.Err() != nil:
		return res, fmt.Errorf("running %s: %w", c.Name, context.Cause(ctx))
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			reason := "was killed by signal " + ws.Signal().String()
			switch ws.Signal() {
			case syscall.SIGXCPU, syscall.SIGKILL:
				reason = fmt.Sprintf("ran past its CPU limit (%ds)", cpu)
			case syscall.SIGSEGV, syscall.SIGABRT, syscall.SIGBUS:
				reason = fmt.Sprintf("stopped: it ran out of memory under its %d MiB limit, or crashed", l.Memory>>20)
			}
			return res, &Error{Program: c.Name, Reason: reason}
		}
		res.ExitCode = exit.ExitCode()
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("running %s: %w", c.Name, err)
	}
	return res, nil
}

// capped keeps up to max bytes and notes when more came.
type capped struct {
	b    bytes.Buffer
	max  int64
	over bool
	full func()
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - int64(c.b.Len()); int64(len(p)) > room {
		c.b.Write(p[:max(room, 0)])
		if !c.over && c.full != nil {
			c.full()
		}
		c.over = true
		return len(p), nil
	}
	return c.b.Write(p)
}

// prefix starts the name of every folder TempDir makes.
const prefix = "loom-"

// TempDir makes a temporary folder for purpose (a word: "xsd", "ocr"),
// named after this process ("loom-ocr-1234-…"), readable by its owner
// only. The caller removes it; Sweep removes it when this process was
// killed first.
func TempDir(purpose string) (string, error) {
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%s-%d-", prefix, purpose, os.Getpid()))
	if err != nil {
		return "", fmt.Errorf("making a temporary folder for %s: %w", purpose, err)
	}
	return dir, nil
}

// Sweep removes the folders TempDir made in processes that are no
// longer running (one killed before it could clean up), and says how
// many it removed. A process calls it when it starts. A folder that
// cannot be removed does not keep the others: the error names each.
func Sweep() (int, error) {
	root := os.TempDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		return 0, fmt.Errorf("sweeping temporary folders: %w", err)
	}
	n := 0
	var errs []error
	for _, e := range entries {
		pid, ok := owner(e.Name())
		if !ok || !e.IsDir() || alive(pid) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(root, e.Name())); err != nil {
			errs = append(errs, fmt.Errorf("sweeping temporary folders: %w", err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// owner reads the process id from a name TempDir made: loom-PURPOSE-PID-RANDOM.
func owner(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	parts := strings.Split(rest, "-")
	if len(parts) != 3 {
		return 0, false
	}
	pid, err := strconv.Atoi(parts[1])
	return pid, err == nil && pid > 0
}

// alive says whether process pid exists (EPERM: it does, as another user).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
