package server_test

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/loomkit/loom/apps/cabin"
	"github.com/loomkit/loom/apps/dataagent"
	"github.com/loomkit/loom/apps/report"
	"github.com/loomkit/loom/apps/schedule"
	"github.com/loomkit/loom/apps/sqlagent"
	"github.com/loomkit/loom/server"
)

// TestLangGraphSDK runs the Node tests in sdktest/ — the official
// LangGraph JS client (@langchain/langgraph-sdk) and the OpenAI JS client,
// unchanged — against a server on a loopback port. Under CI=true a missing
// node or npm fails the test; elsewhere it skips.
func TestLangGraphSDK(t *testing.T) {
	const keyA, keyB = "sdk-key-a", "sdk-key-b"
	ts := startServer(t, server.Options{Keys: []string{keyA, keyB}, Heartbeat: 200 * time.Millisecond})
	runSDK(t, ts.URL, keyA, keyB)
}

// TestMermaid runs sdktest/mermaid.test.mjs, which parses the Mermaid
// drawing of every agent with the mermaid package, against a server with
// the agents loom serve registers and the test agents beside them.
func TestMermaid(t *testing.T) {
	const key = "mermaid-key"
	reg := servedAgents(t)
	ts := startServer(t, server.Options{Agents: reg, Keys: []string{key}})
	runSDK(t, ts.URL, key, "", "mermaid.test.mjs")
}

// runSDK runs the Node tests against the server at url, which knows the
// API keys keyA and keyB: every test file in sdktest, or those named.
func runSDK(t *testing.T, url, keyA, keyB string, files ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts Node; skipped with -short")
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed; CI needs Node.js 20+ and npm to run server/sdktest", tool)
			}
			t.Skipf("%s is not installed: skipping the LangGraph and OpenAI JS client tests in server/sdktest", tool)
		}
	}
	dir, err := filepath.Abs("sdktest")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if stale, err := npmStale(dir); err != nil {
		t.Fatal(err)
	} else if stale {
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	cmd := exec.CommandContext(ctx, "node", append([]string{"--test", "--test-concurrency=1"}, files...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LOOM_URL="+url, "LOOM_KEY="+keyA, "LOOM_OTHER_KEY="+keyB)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test in %s: %v\n%s", dir, err, out)
	}
	t.Logf("node --test:\n%s", out)
}

// npmStale reports whether dir's node_modules is missing or older than its
// package-lock.json (npm ci writes node_modules/.package-lock.json).
func npmStale(dir string) (bool, error) {
	installed, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json"))
	if os.IsNotExist(err) {
		return true, nil
	} else if err != nil {
		return false, err
	}
	lock, err := os.Stat(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return false, err
	}
	return lock.ModTime().After(installed.ModTime()), nil
}

// servedAgents are the test agents and the agents loom serve registers,
// without a model.
func servedAgents(t *testing.T) *server.Registry {
	t.Helper()
	reg := testAgents(t)
	quiet := slog.New(slog.DiscardHandler)
	for _, a := range []server.Agent{
		cabin.ServerAgent(cabin.ServerOptions{Logger: quiet}),
		schedule.ServerAgent(schedule.ServerOptions{Logger: quiet}),
		sqlagent.ServerAgent(sqlagent.ServerOptions{Logger: quiet, DemoPath: filepath.Join(t.TempDir(), "shop.db")}),
		dataagent.ServerAgent(dataagent.ServerOptions{Logger: quiet, DemoPath: filepath.Join(t.TempDir(), "shop.db")}),
		report.ServerAgent(report.ServerOptions{Logger: quiet}),
	} {
		if err := reg.Register(a); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}
