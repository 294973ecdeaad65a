package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrUnavailable is wrapped by Check's and Run's errors when the sandbox
// cannot run here: bwrap, python3, prlimit or a Python library is
// missing, or bwrap cannot make its namespaces. The caller then analyses
// without Python and says so.
var ErrUnavailable = errors.New("python sandbox unavailable")

// Limits bound one run. A zero field takes its value from DefaultLimits.
type Limits struct {
	// CPUTime is the CPU time each process may use (rounded up to whole
	// seconds).
	CPUTime time.Duration
	// Wall is how long the run may take from start to exit.
	Wall time.Duration
	// Memory is the address space each process may map, in bytes.
	// Importing pandas and matplotlib maps about 400 MB.
	Memory int64
	// Procs is how many processes and threads may run at once in the
	// sandbox, its own two included.
	Procs int
	// Output is how many bytes of stdout and stderr together are kept;
	// printing more stops the script.
	Output int64
	// FileSize is the largest file the script may write, in bytes.
	FileSize int64
	// Disk is how many bytes the script may write in the work directory
	// besides its inputs (checked five times a second) and, separately, in
	// /tmp; it also caps the files returned.
	Disk int64
}

// DefaultLimits returns the limits a Runner uses for fields left zero:
// 30 s of CPU, 60 s of wall time, 1 GiB of memory, 32 processes, 1 MiB
// of output, files up to 16 MiB and 64 MiB written. Each call returns a
// new value.
func DefaultLimits() Limits {
	return Limits{
		CPUTime:  30 * time.Second,
		Wall:     60 * time.Second,
		Memory:   1 << 30,
		Procs:    32,
		Output:   1 << 20,
		FileSize: 16 << 20,
		Disk:     64 << 20,
	}
}

// Runner runs Python scripts in a bubblewrap sandbox. The zero value is
// ready to use. A Runner may be used by several goroutines at once.
type Runner struct {
	// Python is the interpreter, /usr/bin/python3 when empty. It must
	// live under /usr, the only tree of programs the sandbox sees.
	Python string
	// Bwrap is the bubblewrap program, "bwrap" looked up on PATH when
	// empty.
	Bwrap string
	// Limits bound each run; zero fields take DefaultLimits.
	Limits Limits
	// WorkRoot is where each run's private directory is made and
	// removed, os.TempDir() when empty. When Loom runs as root, user
	// 65534 must be able to reach it (bwrap runs as that user).
	WorkRoot string
}

// Job is one script to run.
type Job struct {
	// Code is the Python source.
	Code string
	// Files are put in the work directory (the script's current
	// directory, /work) before it runs, by relative slash-separated name:
	// CSV or JSON data, say.
	Files map[string][]byte
}

// Reason names the limit or rule that stopped a script.
type Reason string

// The reasons a script is stopped for.
const (
	ReasonCPU      Reason = "cpu time"
	ReasonMemory   Reason = "memory"
	ReasonProcs    Reason = "processes"
	ReasonWall     Reason = "wall time"
	ReasonOutput   Reason = "output size"
	ReasonFileSize Reason = "file size"
	ReasonDisk     Reason = "disk"
	ReasonNetwork  Reason = "network"
	ReasonSignal   Reason = "signal"
)

// Result is what a run gave back. A script that fails (a traceback, a
// limit) is a Result with ExitCode ≠ 0, not an error.
type Result struct {
	// Stdout and Stderr are what the script printed, at most
	// Limits.Output bytes together.
	Stdout, Stderr string
	// Files are the files the script wrote or changed in the work
	// directory (charts, CSV), by slash-separated name, at most
	// Limits.Disk bytes together.
	Files map[string][]byte
	// Omitted names files the script wrote that were not returned
	// because Files was full.
	Omitted []string
	// ExitCode is the script's exit status: 128+n when signal n ended
	// it, -1 when the sandbox was killed (wall time, output, disk).
	ExitCode int
	// Reason is the limit that stopped the script, "" when none did.
	Reason Reason
	// Stopped says why the script was stopped and what to do instead, in
	// words for a model to act on; "" when it was not stopped.
	Stopped string
	// Elapsed is the wall time of the run.
	Elapsed time.Duration
}

// OK reports whether the script ran to the end and exited 0.
func (r *Result) OK() bool { return r.ExitCode == 0 && r.Reason == "" }

// Failure says what went wrong, for a model to correct the script: why
// it was stopped, then the end of its stderr (the traceback), or its exit
// status. It is "" when the script succeeded.
func (r *Result) Failure() string {
	if r.OK() {
		return ""
	}
	var parts []string
	if r.Stopped != "" {
		parts = append(parts, r.Stopped)
	}
	if tail := strings.TrimSpace(lastLines(r.Stderr, failureLines)); tail != "" {
		parts = append(parts, tail)
	}
	if len(parts) == 0 {
		parts = append(parts, fmt.Sprintf("The script exited with status %d.", r.ExitCode))
	}
	return strings.Join(parts, "\n")
}

// failureLines is how many lines of stderr Failure gives.
const failureLines = 20

// sandboxUID is the user the script runs as inside the sandbox, and, when
// Loom runs as root, outside it too: root is exempt from the process
// limit, nobody is not.
const sandboxUID = 65534

func (r *Runner) python() string {
	if r.Python != "" {
		return r.Python
	}
	return "/usr/bin/python3"
}

func (r *Runner) bwrap() (string, error) {
	name := r.Bwrap
	if name == "" {
		name = "bwrap"
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: bwrap not found (install the bubblewrap package): %v", ErrUnavailable, err)
	}
	return p, nil
}

func (r *Runner) limits() Limits {
	l, d := r.Limits, DefaultLimits()
	orDefault(&l.CPUTime, d.CPUTime)
	orDefault(&l.Wall, d.Wall)
	orDefault(&l.Memory, d.Memory)
	orDefault(&l.Procs, d.Procs)
	orDefault(&l.Output, d.Output)
	orDefault(&l.FileSize, d.FileSize)
	orDefault(&l.Disk, d.Disk)
	return l
}

func orDefault[T int | int64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Check says whether scripts can run here: bwrap, the interpreter and
// prlimit are installed, a sandbox can be made, and pandas, numpy and
// matplotlib import in it. Its error wraps ErrUnavailable and names what
// is missing.
func (r *Runner) Check(ctx context.Context) error {
	if _, err := r.bwrap(); err != nil {
		return err
	}
	py := r.python()
	if _, err := os.Stat(py); err != nil {
		return fmt.Errorf("%w: %s not found (install the python3 package): %v", ErrUnavailable, py, err)
	}
	if !strings.HasPrefix(py, "/usr/") {
		return fmt.Errorf("%w: %s is not under /usr, which is all the sandbox sees", ErrUnavailable, py)
	}
	if _, err := prlimit(); err != nil {
		return err
	}
	res, err := r.Run(ctx, Job{Code: "import pandas, numpy, matplotlib\nprint('ok')\n"})
	if errors.Is(err, ErrUnavailable) {
		return err
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if res.OK() && strings.TrimSpace(res.Stdout) == "ok" {
		return nil
	}
	for _, m := range []string{"pandas", "numpy", "matplotlib"} {
		if strings.Contains(res.Stderr, "No module named '"+m+"'") {
			return fmt.Errorf("%w: the Python library %s is missing (install python3-%s)", ErrUnavailable, m, m)
		}
	}
	return fmt.Errorf("%w: importing pandas, numpy and matplotlib failed in the sandbox (exit %d) %s: %s",
		ErrUnavailable, res.ExitCode, res.Stopped, lastLines(res.Stderr, 5))
}

func prlimit() (string, error) {
	p, err := exec.LookPath("prlimit")
	if err != nil {
		return "", fmt.Errorf("%w: prlimit not found (install the util-linux package): %v", ErrUnavailable, err)
	}
	if p, err = filepath.EvalSymlinks(p); err != nil {
		return "", fmt.Errorf("%w: resolving prlimit: %v", ErrUnavailable, err)
	}
	if !strings.HasPrefix(p, "/usr/") {
		return "", fmt.Errorf("%w: %s is not under /usr, which is all the sandbox sees", ErrUnavailable, p)
	}
	return p, nil
}

// Run runs job in a fresh sandbox and removes the sandbox's directory
// afterwards. The error is for a sandbox that could not be made or a
// context that ended (it wraps ErrUnavailable when bwrap could not make
// the sandbox); whatever the script did is in the Result.
func (r *Runner) Run(ctx context.Context, job Job) (*Result, error) {
	lim := r.limits()
	bw, err := r.bwrap()
	if err != nil {
		return nil, err
	}
	pl, err := prlimit()
	if err != nil {
		return nil, err
	}
	sweepOnce(r.WorkRoot)
	base, unlock, err := makeBase(r.WorkRoot)
	if err != nil {
		return nil, err
	}
	defer unlock() // after the directory is gone
	defer removeAll(base)
	work := filepath.Join(base, "work")
	script := filepath.Join(base, "main.py")
	inputs, err := prepare(base, work, script, job)
	if err != nil {
		return nil, err
	}
	workRoot, err := os.OpenRoot(work)
	if err != nil {
		return nil, fmt.Errorf("opening the work directory: %w", err)
	}
	defer workRoot.Close()

	status, statusW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("making the status pipe: %w", err)
	}
	defer status.Close()
	filter, err := seccompPipe()
	if err != nil {
		statusW.Close()
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bw, r.args(lim, pl, work, script, filter != nil)...)
	cmd.Dir = "/"
	cmd.Env = []string{}
	cmd.ExtraFiles = []*os.File{statusW} // fd 3
	if filter != nil {
		defer filter.Close()
		cmd.ExtraFiles = append(cmd.ExtraFiles, filter) // fd 4
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() == 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: sandboxUID, Gid: sandboxUID, Groups: []uint32{}}
	}
	var once sync.Once
	var reason Reason
	stop := func(why Reason) {
		once.Do(func() {
			reason = why
			if cmd.Process != nil {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			}
		})
	}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out := &capped{max: lim.Output, full: func() { stop(ReasonOutput) }}
	cmd.Stdout, cmd.Stderr = out.writer(0), out.writer(1)

	start := time.Now()
	if err := cmd.Start(); err != nil {
		statusW.Close()
		return nil, fmt.Errorf("starting bwrap: %w", err)
	}
	statusW.Close()
	statusC := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(status, 64<<10))
		statusC <- b
	}()
	wall := time.AfterFunc(lim.Wall, func() { stop(ReasonWall) })
	watchDone := make(chan struct{})
	budget := lim.Disk // what the script writes, on top of its inputs
	for _, b := range inputs {
		budget += int64(len(b))
	}
	go watchDisk(workRoot, budget, watchDone, func() { stop(ReasonDisk) })
	waitErr := cmd.Wait()
	elapsed := time.Since(start)
	close(watchDone)
	wall.Stop()
	once.Do(func() {}) // no stop after this point
	status.SetReadDeadline(time.Now().Add(time.Second))
	exited := bytes.Contains(<-statusC, []byte(`"exit-code"`))

	if ctx.Err() != nil {
		return nil, fmt.Errorf("running the script: %w", ctx.Err())
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) && !errors.Is(waitErr, exec.ErrWaitDelay) {
		return nil, fmt.Errorf("running bwrap: %w", waitErr)
	}
	stdout, stderr := out.strings()
	if !exited && reason == "" {
		return nil, fmt.Errorf("%w: making the sandbox: %s", ErrUnavailable, strings.TrimSpace(lastLines(stderr, 5)))
	}
	res := &Result{Stdout: stdout, Stderr: stderr, ExitCode: cmd.ProcessState.ExitCode(), Reason: reason, Elapsed: elapsed}
	if res.Reason == "" {
		res.Reason = classify(res.ExitCode, stderr)
	}
	res.Stopped = explain(res.Reason, res.ExitCode, lim)
	res.Files, res.Omitted = collect(workRoot, inputs, lim.Disk)
	return res, nil
}

// args are bwrap's arguments: a new namespace of every kind (no network),
// the seccomp filter on fd 4 when there is one, a read-only /usr and the few files of /etc that Python, numpy and
// matplotlib read, a private /tmp, the work directory at /work, the
// script read-only, a cleared environment, and the limits set by prlimit
// on the interpreter.
func (r *Runner) args(l Limits, prlimit, work, script string, seccomp bool) []string {
	a := []string{
		"--unshare-all", "--unshare-user", "--disable-userns",
		"--uid", strconv.Itoa(sandboxUID), "--gid", strconv.Itoa(sandboxUID),
		"--hostname", "sandbox",
		"--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--json-status-fd", "3",
	}
	if seccomp {
		a = append(a, "--seccomp", "4")
	}
	a = append(a,
		"--ro-bind", "/usr", "/usr",
		"--tmpfs", "/usr/local", // programs and libraries installed by hand, not Debian's
	)
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		if t, err := os.Readlink(d); err == nil {
			a = append(a, "--symlink", t, d)
		} else if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			a = append(a, "--ro-bind", d, d)
		}
	}
	for _, f := range []string{
		"/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
		"/etc/matplotlibrc", "/etc/fonts", "/etc/localtime", "/etc/mime.types",
	} {
		a = append(a, "--ro-bind-try", f, f)
	}
	size := strconv.FormatInt(l.Disk, 10)
	a = append(a,
		"--proc", "/proc", "--dev", "/dev",
		"--size", size, "--tmpfs", "/tmp",
		"--bind", work, "/work",
		"--ro-bind", script, "/sandbox/main.py",
		"--ro-bind", filepath.Join(filepath.Dir(script), "matplotlibrc"), "/sandbox/matplotlibrc",
		"--chdir", "/work",
		"--clearenv",
		"--setenv", "PATH", "/usr/bin:/bin",
		"--setenv", "HOME", "/tmp",
		"--setenv", "LANG", "C.UTF-8",
		"--setenv", "MPLBACKEND", "Agg",
		"--setenv", "MATPLOTLIBRC", "/sandbox/matplotlibrc",
		"--setenv", "MPLCONFIGDIR", "/tmp/matplotlib",
		"--setenv", "XDG_CACHE_HOME", "/tmp/cache",
		"--setenv", "OPENBLAS_NUM_THREADS", "1",
		"--setenv", "OMP_NUM_THREADS", "1",
		"--setenv", "MKL_NUM_THREADS", "1",
		// Last: the root the mounts above were made on, and /dev, a tmpfs.
		"--remount-ro", "/", "--remount-ro", "/dev", "--remount-ro", "/usr/local",
	)
	cpu := int64((l.CPUTime + time.Second - 1) / time.Second)
	a = append(a, "--", prlimit,
		fmt.Sprintf("--cpu=%d:%d", cpu, cpu+1), // SIGXCPU first, SIGKILL a second later
		fmt.Sprintf("--as=%d", l.Memory),
		fmt.Sprintf("--nproc=%d", l.Procs),
		fmt.Sprintf("--fsize=%d", l.FileSize),
		"--core=0", "--nofile=256",
		"--", r.python(), "-I", "-B", "/sandbox/main.py")
	return a
}

// prepare writes the script and the job's files and gives the work
// directory to the sandbox's user. It returns the inputs by name.
func prepare(base, work, script string, job Job) (map[string][]byte, error) {
	// bwrap runs as the sandbox's user, which must reach the script.
	if err := os.Chmod(base, 0o711); err != nil {
		return nil, fmt.Errorf("opening the sandbox directory: %w", err)
	}
	if err := os.WriteFile(script, []byte(job.Code), 0o644); err != nil {
		return nil, fmt.Errorf("writing the script: %w", err)
	}
	if err := os.WriteFile(filepath.Join(base, "matplotlibrc"), []byte(matplotlibrc()), 0o644); err != nil {
		return nil, fmt.Errorf("writing matplotlibrc: %w", err)
	}
	// The work directory and the inputs (query results) are the
	// sandbox user's alone: other users of the machine may list the
	// temporary directory.
	if err := os.Mkdir(work, 0o700); err != nil {
		return nil, fmt.Errorf("making the work directory: %w", err)
	}
	root, err := os.OpenRoot(work)
	if err != nil {
		return nil, fmt.Errorf("opening the work directory: %w", err)
	}
	defer root.Close()
	inputs := make(map[string][]byte, len(job.Files))
	for name, data := range job.Files {
		clean := path.Clean(name)
		if name == "" || !filepath.IsLocal(filepath.FromSlash(clean)) || clean == "." {
			return nil, fmt.Errorf("input file %q: not a relative path inside the work directory", name)
		}
		if dir := path.Dir(clean); dir != "." {
			if err := root.MkdirAll(dir, 0o700); err != nil {
				return nil, fmt.Errorf("input file %q: %w", name, err)
			}
		}
		if err := root.WriteFile(clean, data, 0o600); err != nil {
			return nil, fmt.Errorf("input file %q: %w", name, err)
		}
		inputs[clean] = data
	}
	if os.Geteuid() == 0 {
		err := filepath.WalkDir(work, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, sandboxUID, sandboxUID)
		})
		if err != nil {
			return nil, fmt.Errorf("giving the work directory to the sandbox user: %w", err)
		}
	}
	return inputs, nil
}

// matplotlibrc lets charts label in Chinese: glyphs DejaVu Sans lacks
// are drawn from a CJK font when one of those Debian packages is
// installed (fonts-noto-cjk, fonts-arphic-gbsn00lp).
func matplotlibrc() string {
	families := []string{"DejaVu Sans"}
	for _, f := range []struct{ file, family string }{
		{"/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc", "Noto Sans CJK SC"},
		{"/usr/share/fonts/truetype/arphic-gbsn00lp/gbsn00lp.ttf", "AR PL SungtiL GB"},
	} {
		if _, err := os.Stat(f.file); err == nil {
			families = append(families, f.family)
		}
	}
	return "backend: Agg\nfont.family: " + strings.Join(families, ", ") + "\naxes.unicode_minus: False\n"
}

// removeAll removes a sandbox directory even where the script took the
// write permission off its own directories.
func removeAll(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}

// capped keeps the first max bytes written to its writers together and
// calls full once when more arrive; it keeps taking (and dropping) bytes
// so the sandbox is never blocked on a pipe nobody reads.
type capped struct {
	mu   sync.Mutex
	max  int64
	n    int64
	buf  [2]bytes.Buffer
	full func()
	over bool
}

type cappedWriter struct {
	c *capped
	i int
}

func (c *capped) writer(i int) io.Writer { return cappedWriter{c, i} }

func (w cappedWriter) Write(p []byte) (int, error) {
	c := w.c
	c.mu.Lock()
	room := c.max - c.n
	keep := p
	if int64(len(keep)) > room {
		keep = keep[:max(room, 0)]
	}
	c.buf[w.i].Write(keep)
	c.n += int64(len(keep))
	over := len(keep) < len(p) && !c.over
	if over {
		c.over = true
	}
	c.mu.Unlock()
	if over {
		c.full()
	}
	return len(p), nil
}

func (c *capped) strings() (string, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// A cut at the cap may split a character.
	return strings.ToValidUTF8(c.buf[0].String(), ""), strings.ToValidUTF8(c.buf[1].String(), "")
}

// watchDisk stops the run when the work directory holds more than max
// bytes or too many files. It reads through root so that links the
// script makes cannot lead it outside.
func watchDisk(root *os.Root, max int64, done <-chan struct{}, stop func()) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		var total, files int64
		_ = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			files++
			if d.Type().IsRegular() {
				if fi, err := d.Info(); err == nil {
					total += fi.Size()
				}
			}
			if total > max || files > maxFiles {
				return fs.SkipAll
			}
			return nil
		})
		if total > max || files > maxFiles {
			stop()
			return
		}
	}
}

// maxFiles is how many files and directories the work directory may hold.
const maxFiles = 10000

// collect reads the regular files of the work directory that are not
// unchanged inputs, up to max bytes together.
func collect(root *os.Root, inputs map[string][]byte, max int64) (map[string][]byte, []string) {
	type file struct {
		name string
		size int64
	}
	var found []file
	_ = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			found = append(found, file{p, fi.Size()})
		}
		if len(found) > maxFiles {
			return fs.SkipAll
		}
		return nil
	})
	sort.Slice(found, func(i, j int) bool { return found[i].name < found[j].name })
	files := map[string][]byte{}
	var omitted []string
	var total int64
	for _, f := range found {
		if in, ok := inputs[f.name]; ok && int64(len(in)) == f.size {
			if b, err := readCapped(root, f.name, f.size); err == nil && bytes.Equal(b, in) {
				continue
			}
		}
		if total+f.size > max {
			omitted = append(omitted, f.name)
			continue
		}
		b, err := readCapped(root, f.name, max-total)
		if err != nil {
			omitted = append(omitted, f.name)
			continue
		}
		files[f.name] = b
		total += int64(len(b))
	}
	return files, omitted
}

// readCapped reads a regular file of at most max bytes. A script still
// dying after a kill may swap a file for a pipe: opening does not wait.
func readCapped(root *os.Root, name string, max int64) ([]byte, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, errors.New("too large")
	}
	return b, nil
}

// classify names the limit a script that exited by itself ran into, from
// its exit status and the end of its stderr.
func classify(code int, stderr string) Reason {
	if code == 0 {
		return ""
	}
	switch code {
	case 128 + int(syscall.SIGXCPU):
		return ReasonCPU
	case 128 + int(syscall.SIGXFSZ):
		return ReasonFileSize
	}
	tail := lastLines(stderr, 3)
	switch {
	case strings.Contains(tail, "MemoryError") || strings.Contains(tail, "Cannot allocate memory") ||
		strings.Contains(tail, "Unable to allocate") || strings.Contains(tail, "bad_alloc"):
		return ReasonMemory
	case strings.Contains(tail, "[Errno 11] Resource temporarily unavailable") ||
		strings.Contains(tail, "can't start new thread"):
		return ReasonProcs
	case strings.Contains(tail, "[Errno 27] File too large"):
		return ReasonFileSize
	case strings.Contains(tail, "[Errno 28] No space left on device"):
		return ReasonDisk
	case strings.Contains(tail, "Network is unreachable") || strings.Contains(tail, "Temporary failure in name resolution") ||
		strings.Contains(tail, "Name or service not known"):
		return ReasonNetwork
	}
	if code > 128 && code < 128+65 {
		return ReasonSignal
	}
	return ""
}

// explain says why a script was stopped and what to do instead.
func explain(r Reason, code int, l Limits) string {
	mib := func(n int64) string { return fmt.Sprintf("%d MiB", n>>20) }
	switch r {
	case ReasonCPU:
		return fmt.Sprintf("Stopped: the script used more than %s of CPU time. Use vectorised pandas or numpy operations instead of Python loops, or work on less data.", l.CPUTime)
	case ReasonMemory:
		return fmt.Sprintf("Stopped: the script ran out of memory (the limit is %s). Load only the columns and rows needed, or aggregate in SQL first.", mib(l.Memory))
	case ReasonProcs:
		return fmt.Sprintf("Stopped: the script tried to run more than %d processes or threads. Do not use subprocess, multiprocessing or thread pools.", l.Procs)
	case ReasonWall:
		return fmt.Sprintf("Stopped: the script ran longer than %s. Make it finish sooner; it cannot wait for input or sleep.", l.Wall)
	case ReasonOutput:
		return fmt.Sprintf("Stopped: the script printed more than %d KiB. Print summaries (head(), describe(), aggregates), not whole tables.", l.Output>>10)
	case ReasonFileSize:
		return fmt.Sprintf("Stopped: the script wrote a file larger than %s. Write smaller files.", mib(l.FileSize))
	case ReasonDisk:
		return fmt.Sprintf("Stopped: the script wrote more than %s of files (or more than %d files). Write fewer, smaller files.", mib(l.Disk), maxFiles)
	case ReasonNetwork:
		return "The script has no network access. Use only the files in the current directory."
	case ReasonSignal:
		return fmt.Sprintf("Stopped: the script was killed by signal %d (%s).", code-128, syscall.Signal(code-128))
	}
	return ""
}

func lastLines(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			if n--; n == 0 {
				return s[i+1:]
			}
		}
	}
	return s
}
