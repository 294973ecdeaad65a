package memory

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/loomkit/loom/internal/testenv"
)

// envRedis names the variable with the Redis server the tests use (as
// checkpoint/redis's tests); each test works under a prefix of its own,
// whose keys are deleted when it ends.
const envRedis = "LOOM_TEST_REDIS_URL"

const defaultRedis = "redis://127.0.0.1:6379/0"

var redisReach struct {
	once sync.Once
	url  string
	err  error
}

// redisClient is a client to the test server, closed when t ends; the
// test skips when the server cannot be reached (fails under CI=true).
func redisClient(t testing.TB) *goredis.Client {
	t.Helper()
	redisReach.once.Do(func() {
		redisReach.url = os.Getenv(envRedis)
		if redisReach.url == "" {
			redisReach.url = defaultRedis
		}
		o, err := goredis.ParseURL(redisReach.url)
		if err != nil {
			redisReach.err = err
			return
		}
		c := goredis.NewClient(o)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		redisReach.err = c.Ping(ctx).Err()
	})
	testenv.Need(t, fmt.Sprintf("redis unreachable; set %s to a reachable server (default %s)", envRedis, defaultRedis), redisReach.err)
	o, _ := goredis.ParseURL(redisReach.url)
	c := goredis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

// redisPrefix is a key prefix no other test uses, cleaned when t ends.
func redisPrefix(t testing.TB) string {
	var b [8]byte
	rand.Read(b[:])
	prefix := "loomtest:store:" + hex.EncodeToString(b[:]) + ":"
	c := redisClient(t)
	t.Cleanup(func() {
		ctx := context.Background()
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
	})
	return prefix
}
