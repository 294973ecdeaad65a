package sandbox

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loomkit/loom/internal/testenv"
)

var (
	checkOnce sync.Once
	checkErr  error
)

// runner is a Runner with limits small enough for tests, or a skip naming
// what is missing (a failure under CI=true).
func runner(t *testing.T) *Runner {
	t.Helper()
	checkOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		checkErr = (&Runner{}).Check(ctx)
	})
	if checkErr != nil && !errors.Is(checkErr, ErrUnavailable) {
		t.Fatalf("sandbox: %v", checkErr)
	}
	testenv.Need(t, "the sandbox (bwrap, /usr/bin/python3 with pandas, numpy and matplotlib, prlimit)", checkErr)
	return &Runner{Limits: Limits{
		CPUTime:  3 * time.Second,
		Wall:     60 * time.Second,
		Memory:   1 << 30,
		Procs:    24,
		Output:   256 << 10,
		FileSize: 4 << 20,
		Disk:     16 << 20,
	}}
}

func run(t *testing.T, r *Runner, job Job) *Result {
	t.Helper()
	res, err := r.Run(context.Background(), job)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Logf("exit %d reason %q stopped %q elapsed %s\nstdout: %.300s\nstderr: %.600s",
		res.ExitCode, res.Reason, res.Stopped, res.Elapsed, res.Stdout, lastLines(res.Stderr, 4))
	return res
}

// stillWorks runs a trivial script after a hostile one: the sandbox and
// the process running it are unaffected.
func stillWorks(t *testing.T, r *Runner) {
	t.Helper()
	res := run(t, r, Job{Code: "print(6*7)\n"})
	if !res.OK() || strings.TrimSpace(res.Stdout) != "42" {
		t.Fatalf("the next run did not work: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
}
