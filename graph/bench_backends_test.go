package graph_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"

	"github.com/loomkit/loom/checkpoint/postgres"
	"github.com/loomkit/loom/checkpoint/redis"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/internal/testenv"
)

// The servers the backend benchmarks use, named as in the checkpoint
// packages' tests. An unreachable server skips the benchmark, or fails it
// under CI=true.
const (
	envPostgres     = "LOOM_TEST_POSTGRES_URL"
	defaultPostgres = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	envRedis        = "LOOM_TEST_REDIS_URL"
	defaultRedis    = "redis://127.0.0.1:6379/0"
)

func serviceURL(env, def string) string {
	if u := os.Getenv(env); u != "" {
		return u
	}
	return def
}

func unreachable(b *testing.B, what, env string, err error) {
	b.Helper()
	testenv.Need(b, fmt.Sprintf("%s unreachable; set %s to a reachable server", what, env), err)
}

func randomName(prefix string) string {
	var r [8]byte
	rand.Read(r[:])
	return prefix + hex.EncodeToString(r[:])
}

// reportPerStep adds the time per graph step to a benchInvoke result on
// a chain of steps nodes.
func reportPerStep(b *testing.B, steps int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(steps), "ns/step")
}

// openPostgres opens a saver in a schema of its own, dropped at the end,
// with the session settings in params (added to the URL).
func openPostgres(b *testing.B, params map[string]string) *postgres.Saver {
	b.Helper()
	ctx := context.Background()
	base := serviceURL(envPostgres, defaultPostgres)
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, base)
	if err == nil {
		err = conn.Ping(cctx)
	}
	if err != nil {
		unreachable(b, "postgres", envPostgres, err)
	}
	schema := randomName("loombench_")
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			b.Errorf("drop schema %s: %v", schema, err)
		}
		conn.Close(ctx)
	})
	var u string
	if strings.Contains(base, "://") {
		pu, err := url.Parse(base)
		if err != nil {
			b.Fatal(err)
		}
		q := pu.Query()
		q.Set("search_path", schema)
		for k, v := range params {
			q.Set(k, v)
		}
		pu.RawQuery = q.Encode()
		u = pu.String()
	} else {
		u = base + " search_path=" + schema
		for k, v := range params {
			u += " " + k + "=" + v
		}
	}
	s, err := postgres.Open(ctx, u)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// openRedis opens a saver under a key prefix of its own, whose keys are
// deleted at the end.
func openRedis(b *testing.B) *redis.Saver {
	b.Helper()
	ctx := context.Background()
	u := serviceURL(envRedis, defaultRedis)
	o, err := goredis.ParseURL(u)
	if err != nil {
		b.Fatalf("%s: %v", envRedis, err)
	}
	c := goredis.NewClient(o)
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Ping(cctx).Err(); err != nil {
		c.Close()
		unreachable(b, "redis", envRedis, err)
	}
	prefix := randomName("loombench:") + ":"
	b.Cleanup(func() {
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
		if err := iter.Err(); err != nil {
			b.Errorf("clean up %s*: %v", prefix, err)
		}
		c.Close()
	})
	s, err := redis.Open(ctx, u, redis.WithPrefix(prefix))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkChain100Postgres runs the 100-node counter chain with a
// checkpoint after every step, in PostgreSQL: with the server's own
// synchronous_commit (on by default: every commit waits for a WAL flush,
// so a step costs at least one fsync of the server's disk), and with
// synchronous_commit=off set in the URL (commits are flushed by the WAL
// writer shortly after; a crash of the server or its machine may lose the
// last ones, as SQLite's synchronous=NORMAL may on a power cut).
func BenchmarkChain100Postgres(b *testing.B) {
	for _, bc := range []struct {
		name   string
		params map[string]string
	}{
		{"commit=server", nil},
		{"commit=async", map[string]string{"synchronous_commit": "off"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := openPostgres(b, bc.params)
			benchInvoke(b, must(countChain(100).Compile(graph.WithSaver(s)))(b), 100)
			reportPerStep(b, 100)
		})
	}
}

// BenchmarkChain100Redis runs the 100-node counter chain with a
// checkpoint after every step, in Redis.
func BenchmarkChain100Redis(b *testing.B) {
	s := openRedis(b)
	benchInvoke(b, must(countChain(100).Compile(graph.WithSaver(s)))(b), 100)
	reportPerStep(b, 100)
}
