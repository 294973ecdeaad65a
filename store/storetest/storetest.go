// Package storetest gives tests a database of their own on the test
// PostgreSQL server: a fresh schema per test, dropped when it ends.
//
// The server is the one LOOM_TEST_POSTGRES_URL names (default
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable). When it cannot
// be reached the test is skipped, naming the variable, or fails under
// CI=true, where the database is part of the test setup.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/loomkit/loom/internal/testenv"
)

// EnvURL names the variable with the test server's URL.
const EnvURL = "LOOM_TEST_POSTGRES_URL"

// DefaultURL is the test server's URL when EnvURL is not set.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

var reach struct {
	once sync.Once
	url  string
	err  error
}

// ServerURL returns the test server's URL, or skips (fails under CI=true)
// when it cannot be reached.
func ServerURL(t testing.TB) string {
	t.Helper()
	reach.once.Do(func() {
		reach.url = os.Getenv(EnvURL)
		if reach.url == "" {
			reach.url = DefaultURL
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, reach.url)
		if err != nil {
			reach.err = err
			return
		}
		reach.err = conn.Ping(ctx)
		conn.Close(ctx)
	})
	testenv.Need(t, fmt.Sprintf("postgres unreachable; set %s to a reachable database (default %s)", EnvURL, DefaultURL), reach.err)
	return reach.url
}

// PostgresURL creates an empty schema, dropped when t ends, and returns
// the test server's URL with that schema as its search_path.
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := ServerURL(t)
	var b [8]byte
	rand.Read(b[:])
	name := "loomtest_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to %s: %v", EnvURL, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		// Retried: the server may be restarting, or a replica's last
		// connections still closing.
		var err error
		for range 20 {
			var conn *pgx.Conn
			if conn, err = pgx.Connect(ctx, base); err == nil {
				_, err = conn.Exec(ctx, "DROP SCHEMA "+name+" CASCADE")
				conn.Close(ctx)
			}
			if err == nil {
				return
			}
			time.Sleep(250 * time.Millisecond)
		}
		t.Errorf("drop schema %s: %v", name, err)
	})
	return WithSearchPath(t, base, name)
}

// WithSearchPath returns base (a URL or key=value string) with schema as
// its search_path.
func WithSearchPath(t testing.TB, base, schema string) string {
	t.Helper()
	if !strings.Contains(base, "://") {
		return base + " search_path=" + schema
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", EnvURL, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
