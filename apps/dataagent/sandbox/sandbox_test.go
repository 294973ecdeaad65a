package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestHappyPandasCSV(t *testing.T) {
	r := runner(t)
	csv := "city,sales\nParis,10\nLyon,5\nParis,7\n北京,3\n"
	res := run(t, r, Job{
		Code: `import pandas as pd
df = pd.read_csv("sales.csv")
print(df.groupby("city")["sales"].sum().sort_index().to_json(force_ascii=False))
`,
		Files: map[string][]byte{"sales.csv": []byte(csv)},
	})
	if !res.OK() {
		t.Fatalf("exit %d: %s", res.ExitCode, res.Stderr)
	}
	if got, want := strings.TrimSpace(res.Stdout), `{"Lyon":5,"Paris":17,"北京":3}`; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	if len(res.Files) != 0 {
		t.Errorf("an unchanged input came back as a written file: %v", keys(res.Files))
	}
}

func TestHappyMatplotlibPNG(t *testing.T) {
	r := runner(t)
	res := run(t, r, Job{
		Code: `import json
import matplotlib.pyplot as plt
rows = json.load(open("data/rows.json"))
fig, ax = plt.subplots(figsize=(4, 3), dpi=50)
ax.bar([r["k"] for r in rows], [r["v"] for r in rows])
ax.set_title("销售额 Sales")
fig.savefig("out/chart.png")
print("saved")
`,
		Files: map[string][]byte{
			"data/rows.json": []byte(`[{"k":"a","v":3},{"k":"b","v":5}]`),
			"out/.keep":      nil,
		},
	})
	if !res.OK() {
		t.Fatalf("exit %d: %s", res.ExitCode, res.Stderr)
	}
	b, ok := res.Files["out/chart.png"]
	if !ok {
		t.Fatalf("chart not returned; files %v", keys(res.Files))
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("chart is not a PNG: %v", err)
	}
	if s := img.Bounds().Size(); s.X != 200 || s.Y != 150 {
		t.Errorf("chart is %v, want 200x150", s)
	}
	if len(res.Files) != 1 {
		t.Errorf("files = %v, want only the chart", keys(res.Files))
	}
	if strings.Contains(res.Stderr, "missing from") || strings.Contains(res.Stderr, "findfont") {
		t.Errorf("the Chinese title lacks a font: %s", res.Stderr)
	}
}

func TestConcurrentRuns(t *testing.T) {
	r := runner(t)
	bomb := make(chan *Result)
	go func() {
		res, err := r.Run(context.Background(), Job{Code: "import os\nwhile True:\n    os.fork()\n"})
		if err != nil {
			t.Error(err)
		}
		bomb <- res
	}()
	// Runs next to the bomb, each with its own process count.
	for range 3 {
		stillWorks(t, r)
	}
	if res := <-bomb; res != nil {
		wantStopped(t, res, ReasonProcs, "processes")
	}
}

func TestScriptErrorIsAResult(t *testing.T) {
	r := runner(t)
	res := run(t, r, Job{Code: "import pandas as pd\npd.read_csv('missing.csv')\n"})
	if res.ExitCode != 1 || res.Reason != "" || res.Stopped != "" {
		t.Errorf("exit %d reason %q, want 1 and no reason", res.ExitCode, res.Reason)
	}
	if !strings.Contains(res.Stderr, "FileNotFoundError") {
		t.Errorf("stderr has no traceback: %q", res.Stderr)
	}
	if f := res.Failure(); !strings.Contains(f, "FileNotFoundError") || !strings.Contains(f, "missing.csv") {
		t.Errorf("Failure() = %q, want the traceback's end", f)
	}
	if ok := run(t, r, Job{Code: "print(1)"}); ok.Failure() != "" {
		t.Errorf("Failure() of a success = %q", ok.Failure())
	}
}

func TestBadInputName(t *testing.T) {
	r := runner(t)
	for _, name := range []string{"../escape.csv", "/etc/x.csv", "", "."} {
		if _, err := r.Run(context.Background(), Job{Code: "pass", Files: map[string][]byte{name: []byte("x")}}); err == nil {
			t.Errorf("input file %q was accepted", name)
		}
	}
	if _, err := os.Stat(filepath.Join(os.TempDir(), "escape.csv")); err == nil {
		t.Errorf("an input file was written outside the work directory")
	}
}

func TestNoNetwork(t *testing.T) {
	r := runner(t)
	res := run(t, r, Job{Code: `import socket
s = socket.create_connection(("1.1.1.1", 80), timeout=5)
print("connected")
`})
	if res.OK() || strings.Contains(res.Stdout, "connected") {
		t.Fatalf("a connection was made: %q", res.Stdout)
	}
	wantStopped(t, res, ReasonNetwork, "no network")
	// Only a loopback interface exists, and it is the sandbox's own.
	res = run(t, r, Job{Code: `import socket
print(sorted(n for _, n in socket.if_nameindex()))
`})
	if strings.TrimSpace(res.Stdout) != "['lo']" {
		t.Errorf("interfaces = %q, want only lo", res.Stdout)
	}
	stillWorks(t, r)
}

func TestNoShadow(t *testing.T) {
	r := runner(t)
	res := run(t, r, Job{Code: `import os
for p in ["/etc/shadow", "/etc/passwd", "/root", "/home", "/work/../etc/shadow"]:
    print(p, os.path.exists(p))
print("/usr/local", os.listdir("/usr/local"))
print(open("/etc/shadow").read())
`})
	if res.OK() {
		t.Fatalf("/etc/shadow was read: %q", res.Stdout)
	}
	hidden(t, res, "/etc/shadow", "/etc/passwd", "/root", "/home")
	if !strings.Contains(res.Stdout, "/usr/local []") {
		t.Errorf("/usr/local is not hidden: %q", res.Stdout)
	}
	if !strings.Contains(res.Stderr, "FileNotFoundError") {
		t.Errorf("stderr = %q, want FileNotFoundError", res.Stderr)
	}
	stillWorks(t, r)
}

func TestNoLoomDatabase(t *testing.T) {
	r := runner(t)
	// Readable by everyone on the host: only the sandbox can hide it.
	dir, err := os.MkdirTemp("", "loom-db-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	db := filepath.Join(dir, "loom.db")
	if err := os.WriteFile(db, []byte("SQLite format 3\x00secret-token"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	res := run(t, r, Job{Code: fmt.Sprintf(`import os
for p in [%q, %q, %q, "/tmp"]:
    print(p, os.path.exists(p), os.listdir(p) if os.path.isdir(p) else "")
print(open(%q, "rb").read())
`, db, dir, wd, db)})
	if res.OK() || strings.Contains(res.Stdout, "secret-token") {
		t.Fatalf("the database was read: %q", res.Stdout)
	}
	hidden(t, res, db, dir, wd)
	if !strings.Contains(res.Stdout, "/tmp True []") {
		t.Errorf("the sandbox's /tmp is not its own empty one: %q", res.Stdout)
	}
	stillWorks(t, r)
}

func TestNoWriteOutside(t *testing.T) {
	r := runner(t)
	res := run(t, r, Job{Code: `import os
results = []
for p in ["/usr/pwned", "/etc/pwned", "/pwned", "/sandbox/main.py", "/proc/sys/kernel/hostname", "/dev/pwned"]:
    try:
        with open(p, "w") as f:
            f.write("x")
        results.append(p + " written")
    except OSError as e:
        results.append(p + " refused")
print("\n".join(results))
open("/tmp/scratch", "w").write("ok")
open("inside.txt", "w").write("ok")
`})
	if !res.OK() {
		t.Fatalf("exit %d: %s", res.ExitCode, res.Stderr)
	}
	if strings.Contains(res.Stdout, "written") || strings.Count(res.Stdout, "refused") != 6 {
		t.Errorf("a write outside the work directory succeeded: %q", res.Stdout)
	}
	for _, p := range []string{"/usr/pwned", "/etc/pwned", "/pwned"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s exists on the host", p)
		}
	}
	if string(res.Files["inside.txt"]) != "ok" {
		t.Errorf("the work directory was not writable: files %v", keys(res.Files))
	}
	stillWorks(t, r)
}

func TestRefusedSyscalls(t *testing.T) {
	r := runner(t)
	if f, _ := seccompFilter(); f == nil {
		t.Skipf("no seccomp filter for %s", runtime.GOARCH)
	}
	// Each of these succeeds, or fails otherwise than EPERM, without the
	// filter: keyctl(KEYCTL_GET_KEYRING_ID, session), io_uring_setup(0,
	// NULL), ptrace(PTRACE_TRACEME).
	res := run(t, r, Job{Code: fmt.Sprintf(`import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
for name, nr, args in [("keyctl", %d, (0, -3, 0)), ("io_uring_setup", %d, (0, None)), ("ptrace", %d, (0, 0, None, None))]:
    rc = libc.syscall(nr, *args)
    print(name, rc, errno.errorcode.get(ctypes.get_errno(), "0") if rc < 0 else "ok")
`, unix.SYS_KEYCTL, unix.SYS_IO_URING_SETUP, unix.SYS_PTRACE)})
	if !res.OK() {
		t.Fatalf("exit %d: %s", res.ExitCode, res.Stderr)
	}
	for _, name := range []string{"keyctl", "io_uring_setup", "ptrace"} {
		if !strings.Contains(res.Stdout, name+" -1 EPERM") {
			t.Errorf("%s was not refused: %q", name, res.Stdout)
		}
	}
	stillWorks(t, r)
}

func TestForkBomb(t *testing.T) {
	r := runner(t)
	res := run(t, r, Job{Code: `import os
while True:
    os.fork()
`})
	wantStopped(t, res, ReasonProcs, "processes")
	stillWorks(t, r)
}

func TestThreadBomb(t *testing.T) {
	r := runner(t)
	res := run(t, r, Job{Code: `import threading, time
while True:
    threading.Thread(target=time.sleep, args=(100,), daemon=True).start()
`})
	wantStopped(t, res, ReasonProcs, "threads")
	stillWorks(t, r)
}

func TestMemoryBomb(t *testing.T) {
	r := runner(t)
	// Touching pages is slow on some machines; a smaller limit keeps the
	// CPU-time limit from being reached first.
	r.Limits.Memory = 256 << 20
	r.Limits.CPUTime = 60 * time.Second
	res := run(t, r, Job{Code: `blocks = []
while True:
    blocks.append(bytearray(16 << 20))
`})
	wantStopped(t, res, ReasonMemory, "memory")
	res = run(t, runner(t), Job{Code: "import numpy as np\nx = np.ones(10**10)\n"})
	if res.Reason != ReasonMemory {
		t.Errorf("numpy: reason %q, want memory", res.Reason)
	}
	stillWorks(t, r)
}

func TestInfiniteLoopCPU(t *testing.T) {
	r := runner(t)
	res := run(t, r, Job{Code: "while True:\n    pass\n"})
	wantStopped(t, res, ReasonCPU, "CPU time")
	stillWorks(t, r)
}

func TestSleepWallTime(t *testing.T) {
	r := runner(t)
	// Long enough for Python to start on a busy machine and print.
	r.Limits.Wall = 8 * time.Second
	marker := fmt.Sprint(900000 + os.Getpid()%99999)
	res := run(t, r, Job{Code: fmt.Sprintf(`import subprocess, time
subprocess.Popen(["/bin/sleep", %q])
print("waiting", flush=True)
time.sleep(1000)
`, marker)})
	wantStopped(t, res, ReasonWall, "longer than 8s")
	if res.ExitCode != -1 {
		t.Errorf("exit %d, want -1 (killed)", res.ExitCode)
	}
	if !strings.Contains(res.Stdout, "waiting") {
		t.Errorf("output before the stop was lost: %q", res.Stdout)
	}
	// The child process went with the sandbox.
	deadline := time.Now().Add(30 * time.Second)
	for sleeping(marker) {
		if time.Now().After(deadline) {
			t.Fatalf("sleep %s outlived the sandbox", marker)
		}
		time.Sleep(100 * time.Millisecond)
	}
	stillWorks(t, r)
}

func TestOutputFlood(t *testing.T) {
	r := runner(t)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res := run(t, r, Job{Code: `import sys
line = "x" * 1023 + "\n"
for _ in range(1 << 20):  # 1 GiB
    sys.stdout.write(line)
`})
	runtime.ReadMemStats(&after)
	wantStopped(t, res, ReasonOutput, "printed more than 256 KiB")
	if n := int64(len(res.Stdout) + len(res.Stderr)); n != r.Limits.Output {
		t.Errorf("kept %d bytes of output, want the cap %d", n, r.Limits.Output)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("the Go process allocated %d MiB reading the output", grew>>20)
	}
	stillWorks(t, r)
}

func TestFileSizeAndDisk(t *testing.T) {
	r := runner(t)
	res := run(t, r, Job{Code: `open("big.bin", "wb").write(b"x" * (8 << 20))`})
	wantStopped(t, res, ReasonFileSize, "larger than 4 MiB")
	res = run(t, r, Job{Code: `import time
for i in range(1000):
    open(f"part{i}.bin", "wb").write(b"x" * (3 << 20))
    time.sleep(0.01)
`})
	wantStopped(t, res, ReasonDisk, "16 MiB of files")
	var total int
	for _, b := range res.Files {
		total += len(b)
	}
	if int64(total) > r.Limits.Disk {
		t.Errorf("returned %d bytes of files, over the cap %d", total, r.Limits.Disk)
	}
	if len(res.Omitted) == 0 {
		t.Errorf("no file was reported omitted")
	}
	stillWorks(t, r)
}

func TestLargeInputs(t *testing.T) {
	r := runner(t)
	big := bytes.Repeat([]byte("a,1\n"), int(r.Limits.Disk)/4) // as large as the disk limit
	res := run(t, r, Job{
		// The sleep lets the disk check look at least twice.
		Code:  "import time\nprint(len(open('big.csv').read()))\nopen('small.txt', 'w').write('x')\ntime.sleep(0.6)\n",
		Files: map[string][]byte{"big.csv": big, "part/two.csv": big[:1000]},
	})
	if !res.OK() || strings.TrimSpace(res.Stdout) != fmt.Sprint(len(big)) {
		t.Fatalf("exit %d reason %q stdout %q", res.ExitCode, res.Reason, res.Stdout)
	}
	if len(res.Files) != 1 || string(res.Files["small.txt"]) != "x" {
		t.Errorf("files = %v, want only small.txt", keys(res.Files))
	}
}

func TestSymlinkOut(t *testing.T) {
	r := runner(t)
	res := run(t, r, Job{Code: `import os
os.symlink("/etc/shadow", "shadow")
os.symlink("/etc/hostname", "host")
os.mkdir("d")
os.chmod("d", 0)
`})
	if !res.OK() {
		t.Fatalf("exit %d: %s", res.ExitCode, res.Stderr)
	}
	if len(res.Files) != 0 {
		t.Errorf("links came back as files: %v", keys(res.Files))
	}
	stillWorks(t, r)
}

func TestCancel(t *testing.T) {
	r := runner(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(time.Second, cancel)
	_, err := r.Run(ctx, Job{Code: "import time\ntime.sleep(1000)\n"})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	stillWorks(t, r)
}

func TestCheckMissing(t *testing.T) {
	err := (&Runner{Bwrap: "/nonexistent/bwrap"}).Check(context.Background())
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "bubblewrap") {
		t.Errorf("missing bwrap: %v", err)
	}
	err = (&Runner{Python: "/usr/bin/no-python3"}).Check(context.Background())
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "/usr/bin/no-python3") {
		t.Errorf("missing python: %v", err)
	}
}

func TestWorkDirRemoved(t *testing.T) {
	r := runner(t)
	dir, err := os.MkdirTemp("", "sandbox-root-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // the sandbox's user must reach it
		t.Fatal(err)
	}
	r.WorkRoot = dir
	run(t, r, Job{Code: "open('a.txt','w').write('x')", Files: map[string][]byte{"in.csv": []byte("a\n1\n")}})
	left, err := os.ReadDir(r.WorkRoot)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// wantStopped checks that res was stopped for reason, with words in the
// explanation.
func wantStopped(t *testing.T, res *Result, reason Reason, words string) {
	t.Helper()
	if res.OK() || res.Reason != reason {
		t.Fatalf("exit %d reason %q, want stopped for %s", res.ExitCode, res.Reason, reason)
	}
	if !strings.Contains(res.Stopped, words) {
		t.Errorf("stopped = %q, want it to say %q", res.Stopped, words)
	}
	if f := res.Failure(); !strings.HasPrefix(f, res.Stopped) {
		t.Errorf("Failure() = %q, want it to begin with %q", f, res.Stopped)
	}
}

// hidden checks that the script printed "<path> False" (not there) for
// each path.
func hidden(t *testing.T, res *Result, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if !strings.Contains(res.Stdout, p+" False") {
			t.Errorf("%s is visible in the sandbox: %q", p, res.Stdout)
		}
	}
}

func sleeping(marker string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte("sleep\x00"+marker)) {
			return true
		}
	}
	return false
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
