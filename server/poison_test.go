//go:build unix

package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/store/storetest"
)

// The tests here start this test binary again as a server of its own
// (TestHelperServer), on a SQLite file, and kill it or watch it die.

const helperEnv = "LOOM_TEST_HELPER_SERVER"

// TestHelperServer is not a test: started by the tests below with
// LOOM_TEST_HELPER_SERVER=1, it is a server of the echo agent and of the
// crash agent, whose one node kills the process (SIGKILL, as the kernel's
// OOM killer would), on the database LOOM_DATABASE_URL names (SQLite or
// Postgres, where a dead replica's job is rescued after a second). It prints
// "listening URL" and serves until SIGTERM; when New fails it prints the
// error and exits 3.
func TestHelperServer(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("a server for the tests that start one in a process of its own")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	var reg server.Registry
	type crashState struct {
		Note string `json:"note"`
	}
	crash := graph.New[crashState]("crash").
		Node("die", func(ctx context.Context, s crashState) (crashState, error) {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}).
		Edge(graph.Start, "die").Edge("die", graph.End)
	for _, a := range []server.Agent{
		{Name: "echo", Description: "echoes", Build: server.Compile(echoGraph())},
		{Name: "crash", Description: "kills the process it runs in", Build: server.Compile(crash)},
	} {
		if err := reg.Register(a); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := server.New(ctx, server.Options{
		Agents:   &reg,
		Database: os.Getenv("LOOM_DATABASE_URL"),
		Logger:   slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Grace:    time.Second,
		// On Postgres: a dead replica's job is taken up again soon.
		Lease:       300 * time.Millisecond,
		RescueAfter: time.Second,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(3)
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("listening http://%s\n", ln.Addr())
	if err := srv.Serve(ctx, ln); err != nil {
		t.Fatal(err)
	}
}

// helper is a server started by startHelper.
type helper struct {
	cmd    *exec.Cmd
	url    chan string // the URL once it listens
	exited chan struct{}
	mu     sync.Mutex
	stderr bytes.Buffer
}

// startHelper starts TestHelperServer on the SQLite file db, through
// wrap (a command line that runs its arguments, e.g. a shell setting a
// limit) when given.
func startHelper(t *testing.T, db string, wrap ...string) *helper {
	t.Helper()
	args := append(wrap, os.Args[0], "-test.run=^TestHelperServer$", "-test.count=1")
	h := &helper{cmd: exec.Command(args[0], args[1:]...), url: make(chan string, 1), exited: make(chan struct{})}
	h.cmd.Env = append(os.Environ(), helperEnv+"=1", "LOOM_DATABASE_URL="+db)
	out, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	h.cmd.Stderr = &lockedWriter{mu: &h.mu, w: &h.stderr}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				h.url <- u
			}
		}
		io.Copy(io.Discard, out)
		h.cmd.Wait()
		close(h.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-h.exited:
		default:
			h.cmd.Process.Kill()
			<-h.exited
		}
	})
	return h
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (h *helper) log() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stderr.String()
}

// died waits for the helper to exit, and says whether a SIGKILL ended it.
func (h *helper) died(t *testing.T) bool {
	t.Helper()
	select {
	case <-h.exited:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the server did not stop; its log:\n%s", h.log())
	}
	ws, ok := h.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// serving waits until the helper listens, and returns its URL; it fails
// the test when the helper exits first.
func (h *helper) serving(t *testing.T) string {
	t.Helper()
	select {
	case u := <-h.url:
		return u
	case <-h.exited:
		t.Fatalf("the server exited (%v); its log:\n%s", h.cmd.ProcessState, h.log())
	case <-time.After(2 * time.Minute):
		t.Fatalf("the server did not start; its log:\n%s", h.log())
	}
	return ""
}

// A run that kills the process each time it runs, on SQLite: the first
// start recovers it, and dies; so does the second; the third marks it
// failed with the reason instead of running it, and stays up, serving
// runs. On Postgres the same, each death a replica whose job River's
// rescuer gives to the next.
func TestPoisonRunIsFailedAfterTwoRecoveries(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server four times; skipped with -short")
	}
	t.Run("sqlite", func(t *testing.T) { poisonTest(t, filepath.Join(t.TempDir(), "loom.db")) })
	t.Run("postgres", func(t *testing.T) { poisonTest(t, storetest.PostgresURL(t)) })
}

func poisonTest(t *testing.T, db string) {
	h := startHelper(t, db)
	u := h.serving(t)
	thread := createThread(t, u, "")
	// The process may die before it answers: the run is recorded first.
	if resp, err := http.Post(u+"/threads/"+thread+"/runs", "application/json",
		strings.NewReader(`{"assistant_id":"crash","input":{}}`)); err == nil {
		resp.Body.Close()
	}
	if !h.died(t) {
		t.Fatalf("the crash run did not kill the server (%v); its log:\n%s", h.cmd.ProcessState, h.log())
	}

	for i := 1; i <= 2; i++ {
		h := startHelper(t, db)
		if !h.died(t) {
			t.Fatalf("start %d after the crash: the recovered run did not kill the server (%v); its log:\n%s", i, h.cmd.ProcessState, h.log())
		}
	}

	h = startHelper(t, db)
	u = h.serving(t)
	var runs []struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
	}
	// On Postgres the run ends once River's rescuer gives its job back,
	// which it looks for every 30 s.
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		st, b := call(t, "GET", u+"/threads/"+thread+"/runs", "", nil)
		if err := json.Unmarshal(b, &runs); err != nil || st != 200 || len(runs) != 1 {
			t.Fatalf("runs of the thread: %d %s (%v)", st, b, err)
		}
		if runs[0].Status != "pending" && runs[0].Status != "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the crash run is still %s; the server's log:\n%s", runs[0].Status, h.log())
		}
	}
	if runs[0].Status != "error" {
		t.Errorf("the crash run is %s after two recoveries, want error", runs[0].Status)
	}
	st, b := call(t, "GET", u+"/threads/"+thread, "", nil)
	if th := mustJSON(t, b); st != 200 || th["status"] != "error" || !strings.Contains(fmt.Sprint(th["error"]), "not run again") {
		t.Errorf("its thread: %d %s; want status error, saying why", st, b)
	}
	if !strings.Contains(h.log(), "not run again") {
		t.Errorf("the server's log does not say why the run was failed:\n%s", h.log())
	}
	// The server stays up and runs what it is asked.
	other := createThread(t, u, "")
	st, b = call(t, "POST", u+"/threads/"+other+"/runs/wait", "", map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "still here"}})
	if st != 200 || !strings.Contains(string(b), "still here") {
		t.Errorf("a run after the poison run was failed: %d %s", st, b)
	}
	select {
	case <-h.exited:
		t.Fatalf("the server exited: %v\n%s", h.cmd.ProcessState, h.log())
	default:
	}
	h.cmd.Process.Signal(syscall.SIGTERM)
	if h.died(t) {
		t.Error("the server did not stop on SIGTERM")
	}
}

// A server that cannot write its database at start says so and exits:
// here every file it writes is limited to 0 bytes (ulimit -f 0, a full
// disk), which holds for root too.
func TestServerThatCannotWriteItsDatabaseExits(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to start the server with a file size limit")
	}
	db := filepath.Join(t.TempDir(), "loom.db")
	// The database is made, then the server restarts on it limited.
	h := startHelper(t, db)
	h.serving(t)
	h.cmd.Process.Signal(syscall.SIGTERM)
	h.died(t)

	h = startHelper(t, db, sh, "-c", `ulimit -f 0 && exec "$@"`, "sh")
	select {
	case <-h.url:
		t.Fatalf("the server started on a database it cannot write; its log:\n%s", h.log())
	case <-h.exited:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the server neither started nor exited; its log:\n%s", h.log())
	}
	if code := h.cmd.ProcessState.ExitCode(); code != 3 {
		t.Errorf("exit code %d, want 3 (New failed); its log:\n%s", code, h.log())
	}
	if !strings.Contains(h.log(), "cannot be written") {
		t.Errorf("the server's error does not say the database cannot be written:\n%s", h.log())
	}
}
