package faults

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/checkpoint/redis"
)

const (
	redisEnv = "LOOM_TEST_REDIS_URL"
	redisURL = "redis://127.0.0.1:6379/0"
	redisDir = "/var/lib/redis"
)

func redisUp() bool {
	return exec.Command("redis-cli", "-h", "127.0.0.1", "-p", "6379", "ping").Run() == nil
}

// startRedis starts the local Redis server as .ci/run does, and waits
// until it answers.
func startRedis(t testing.TB) {
	t.Helper()
	os.MkdirAll(redisDir, 0o755)
	os.MkdirAll("/var/log/redis", 0o755)
	sh(t, "redis-server", "--daemonize", "yes", "--bind", "127.0.0.1", "-::1", "--port", "6379", "--save", "", "--appendonly", "no",
		"--dir", redisDir, "--logfile", "/var/log/redis/ci.log")
	if !until(30*time.Second, redisUp) {
		t.Fatal("Redis did not start in 30 s")
	}
}

// stopRedis shuts the local Redis server down, saving its data to
// redisDir first or not.
func stopRedis(t testing.TB, save bool) {
	t.Helper()
	how := "nosave"
	if save {
		sh(t, "redis-cli", "-h", "127.0.0.1", "-p", "6379", "config", "set", "dir", redisDir)
		how = "save"
	}
	exec.Command("redis-cli", "-h", "127.0.0.1", "-p", "6379", "shutdown", how).Run() // the connection drops: no useful status
	if !until(30*time.Second, func() bool { return !redisUp() }) {
		t.Fatal("Redis did not stop in 30 s")
	}
}

// step appends a checkpoint to thread after head, its state the list of
// the first n numbers (so each state grows by a little: a delta).
func step(t testing.TB, s checkpoint.Saver, thread string, head *checkpoint.Checkpoint, n int) *checkpoint.Checkpoint {
	t.Helper()
	cp := checkpoint.Next(thread, head, checkpoint.SourceStep)
	var b bytes.Buffer
	b.WriteString(`{"n":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, i)
	}
	b.WriteString(`]}`)
	cp.State = b.Bytes()
	if err := s.Put(context.Background(), cp); err != nil {
		t.Fatalf("put %d: %v", n, err)
	}
	return cp
}

// The Redis saver across restarts of the server, without being opened
// again: after a restart that kept the data (SHUTDOWN SAVE) the history
// reads back and goes on; while the server is down, calls fail within
// their deadline; after a restart that lost the data, the old thread is
// not found and a write that follows its old head conflicts (the saver's
// cache of states makes no write against state the server no longer
// has), and a new history reads back whole.
func TestRedisRestart(t *testing.T) {
	gate(t)
	url := os.Getenv(redisEnv)
	if url == "" {
		url = redisURL
	}
	local(t, redisEnv, url)
	if !redisUp() {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis unreachable under CI=true (set %s, default %s)", redisEnv, redisURL)
		}
		t.Skipf("redis unreachable; set %s (default %s)", redisEnv, redisURL)
	}
	t.Cleanup(func() {
		if !redisUp() {
			startRedis(t)
		}
		os.Remove(filepath.Join(redisDir, "dump.rdb"))
	})
	var rb [8]byte
	rand.Read(rb[:])
	prefix := "loomtest:" + hex.EncodeToString(rb[:]) + ":"
	ctx := context.Background()
	s, err := redis.Open(ctx, url, redis.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t.Cleanup(func() {
		o, _ := goredis.ParseURL(url)
		c := goredis.NewClient(o)
		defer c.Close()
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
	})

	var head *checkpoint.Checkpoint
	var want []*checkpoint.Checkpoint
	for n := 1; n <= 20; n++ {
		head = step(t, s, "a", head, n)
		want = append(want, head)
	}

	// A restart that keeps the data.
	stopRedis(t, true)
	startRedis(t)
	os.Remove(filepath.Join(redisDir, "dump.rdb")) // loaded; not for the next start
	got, err := s.Get(ctx, "a", "")
	if err != nil || got.ID != head.ID || !bytes.Equal(got.State, head.State) {
		t.Fatalf("head after a restart that kept the data: %v, %v", got, err)
	}
	for n := 21; n <= 30; n++ {
		head = step(t, s, "a", head, n)
		want = append(want, head)
	}
	hist, err := s.List(ctx, "a", 0)
	if err != nil || len(hist) != len(want) {
		t.Fatalf("history after the restart: %d checkpoints, %v; want %d", len(hist), err, len(want))
	}
	for i, cp := range hist {
		w := want[len(want)-1-i]
		if cp.ID != w.ID || cp.Seq != w.Seq || !bytes.Equal(cp.State, w.State) {
			t.Fatalf("checkpoint seq %d after the restart: %s %s, want %s %s", w.Seq, cp.ID, cp.State, w.ID, w.State)
		}
	}

	// Down: calls fail, within their deadline.
	stopRedis(t, false)
	for _, call := range []func(context.Context) error{
		func(ctx context.Context) error { _, err := s.Get(ctx, "a", ""); return err },
		func(ctx context.Context) error {
			cp := checkpoint.Next("a", head, checkpoint.SourceStep)
			cp.State = []byte(`{}`)
			return s.Put(ctx, cp)
		},
	} {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		began := time.Now()
		err := call(cctx)
		cancel()
		if err == nil || time.Since(began) > 20*time.Second { // the call honours its 2 s context; 20 s only catches a hang
			t.Fatalf("a call while Redis is down: %v after %v", err, time.Since(began))
		}
	}

	// A restart that lost the data.
	startRedis(t)
	if _, err := s.Get(ctx, "a", ""); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("old thread after the data was lost: %v, want not found", err)
	}
	late := checkpoint.Next("a", head, checkpoint.SourceStep)
	late.State = append(bytes.Clone(head.State[:len(head.State)-2]), []byte(`,30]}`)...)
	if err := s.Put(ctx, late); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("a write after the lost head: %v, want a conflict", err)
	}
	head, want = nil, nil
	for n := 1; n <= 10; n++ {
		head = step(t, s, "a", head, n)
		want = append(want, head)
	}
	for _, w := range want {
		got, err := s.Get(ctx, "a", w.ID)
		if err != nil || got.Seq != w.Seq || !bytes.Equal(got.State, w.State) {
			t.Fatalf("checkpoint seq %d of the new history: %v, %v", w.Seq, got, err)
		}
	}
}
