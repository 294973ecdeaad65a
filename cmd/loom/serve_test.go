package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `loom serve` says where it serves on its first line, answers /healthz,
// and stops on its context.
func TestServe(t *testing.T) {
	t.Setenv("LOOM_DATABASE_URL", "sqlite://"+filepath.Join(t.TempDir(), "serve.db"))
	line, stop := startServe(t)
	if !strings.HasPrefix(line, "Loom is serving http://127.0.0.1:") || !strings.HasSuffix(line, "/ — agents: "+strings.Join(agents().Names(), ", ")+"\n") || !strings.Contains(line, "demo") {
		t.Fatalf("first line %q", line)
	}
	url := strings.Fields(line)[3]
	resp, err := http.Get(url + "healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// startServe runs `loom serve` on a free loopback port without API keys and
// returns its first line, and stop, which ends it and returns its error.
func startServe(t *testing.T) (line string, stop func() error) {
	t.Helper()
	t.Setenv("LOOM_API_KEYS", "")
	t.Setenv("LOOM_API_KEYS_FILE", "")
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0"}, pw); pw.Close() }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	return line, func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			return errors.New("serve did not stop")
		}
	}
}

func TestServeErrors(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys")
	os.WriteFile(keys, []byte("# no keys here\n\n"), 0o600)
	for _, c := range []struct {
		name, db, keysEnv string
		args              []string
		want              string
	}{
		{"unsupported database", "mysql://loom@localhost/loom", "", []string{"serve"}, `database URL scheme "mysql": unsupported database URL`},
		{"open address without keys", "", "", []string{"serve", "--addr", "0.0.0.0:0"}, "without API keys"},
		{"empty keys file", "", "", []string{"serve", "--keys", keys}, "has no keys"},
		{"bad argument", "", "", []string{"serve", "extra"}, `unexpected argument "extra"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.db == "" {
				c.db = filepath.Join(t.TempDir(), "x.db")
			}
			t.Setenv("LOOM_DATABASE_URL", c.db)
			t.Setenv("LOOM_API_KEYS", c.keysEnv)
			t.Setenv("LOOM_API_KEYS_FILE", "")
			err := run(context.Background(), c.args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one with %q", err, c.want)
			}
		})
	}
}

func TestAPIKeys(t *testing.T) {
	f := filepath.Join(t.TempDir(), "keys")
	os.WriteFile(f, []byte("alpha\n# comment\n\n beta \n"), 0o600)
	got, err := apiKeys(f, "gamma, ,delta")
	if err != nil || strings.Join(got, ",") != "alpha,beta,gamma,delta" {
		t.Fatalf("apiKeys = %v, %v", got, err)
	}
}

// TestServeMountsCabin checks that loom serve serves the cabin agent's own
// endpoints next to Loom's API.
func TestServeMountsCabin(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("LOOM_DATABASE_URL", "")
	line, stop := startServe(t)
	url := strings.Fields(line)[3]
	resp, err := http.Post(url+"api/v1/agent/chat", "application/json", strings.NewReader(`{"session_id":"s1","text":"打开车窗"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "routing") {
		t.Errorf("cabin chat: %d %s", resp.StatusCode, body)
	}
	if err := stop(); err != nil {
		t.Errorf("serve: %v", err)
	}
}
