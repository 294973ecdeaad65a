// Package datasourcetest gives tests a MySQL or MariaDB database of their
// own on the test server, dropped when the test ends (PostgreSQL has
// store/storetest).
//
// The server is the one LOOM_TEST_MYSQL_URL names (default
// mysql://root@127.0.0.1:3306/). When it cannot be reached the test is
// skipped, naming the variable, or fails under CI=true, where the server
// is part of the test setup.
package datasourcetest

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/loomkit/loom/internal/testenv"
)

// EnvMySQL names the variable with the test server's URL.
const EnvMySQL = "LOOM_TEST_MYSQL_URL"

// DefaultMySQL is the test server's URL when EnvMySQL is not set.
const DefaultMySQL = "mysql://root@127.0.0.1:3306/"

var reach struct {
	once sync.Once
	url  string
	err  error
}

// Config turns a mysql:// URL into the driver's configuration, with
// several statements to an Exec allowed (for loading dumps).
func Config(t testing.TB, raw string) *mysql.Config {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("%s: %v", EnvMySQL, err)
	}
	cfg := mysql.NewConfig()
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	cfg.Net, cfg.Addr = "tcp", u.Host
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	cfg.ParseTime, cfg.MultiStatements = true, true
	cfg.Timeout = 5 * time.Second
	return cfg
}

// ServerURL returns the test server's URL, or skips (fails under
// CI=true) when it cannot be reached.
func ServerURL(t testing.TB) string {
	t.Helper()
	reach.once.Do(func() {
		reach.url = os.Getenv(EnvMySQL)
		if reach.url == "" {
			reach.url = DefaultMySQL
		}
		db, err := sql.Open("mysql", Config(t, reach.url).FormatDSN())
		if err == nil {
			err = db.Ping()
			db.Close()
		}
		reach.err = err
	})
	testenv.Need(t, fmt.Sprintf("MySQL unreachable; set %s to a reachable server (default %s)", EnvMySQL, DefaultMySQL), reach.err)
	return reach.url
}

// Database creates an empty database, dropped when t ends, and returns
// its URL and a connection to it (closed when t ends) that may run
// several statements at once.
func Database(t testing.TB) (string, *sql.DB) {
	t.Helper()
	base := ServerURL(t)
	var b [6]byte
	rand.Read(b[:])
	name := "loomtest_" + hex.EncodeToString(b[:])
	root, err := sql.Open("mysql", Config(t, base).FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := root.Exec("DROP DATABASE " + name); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
		root.Close()
	})
	if _, err := root.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	u, _ := url.Parse(base)
	u.Path = "/" + name
	db, err := sql.Open("mysql", Config(t, u.String()).FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return u.String(), db
}

// ClosedAddr returns a loopback address (host:port) that nothing listens
// on: a database server that is down.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
