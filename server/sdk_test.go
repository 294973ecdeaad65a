package server_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

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

// runSDK runs the Node tests against the server at url, which knows the
// API keys keyA and keyB.
func runSDK(t *testing.T, url, keyA, keyB string) {
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
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); os.IsNotExist(err) {
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	cmd := exec.CommandContext(ctx, "node", "--test", "--test-concurrency=1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LOOM_URL="+url, "LOOM_KEY="+keyA, "LOOM_OTHER_KEY="+keyB)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test in %s: %v\n%s", dir, err, out)
	}
	t.Logf("node --test:\n%s", out)
}
