package sqlagent_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
)

// loadPostgres runs a dump of statements on the database url names.
func loadPostgres(t *testing.T, url, dump string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, dump); err != nil {
		t.Fatalf("load: %v", err)
	}
}

// mysqlDatabase creates a database of the test's own on the MySQL server
// LOOM_TEST_MYSQL_URL names (default mysql://root@127.0.0.1:3306/), runs
// dump in it, and returns its URL. It skips when the server cannot be
// reached, and fails under CI=true.
func mysqlDatabase(t *testing.T, dump string) string {
	t.Helper()
	raw := os.Getenv("LOOM_TEST_MYSQL_URL")
	if raw == "" {
		raw = "mysql://root@127.0.0.1:3306/"
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("LOOM_TEST_MYSQL_URL: %v", err)
	}
	cfg := mysql.NewConfig()
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	cfg.Net, cfg.Addr, cfg.MultiStatements = "tcp", u.Host, true
	root, err := sql.Open("mysql", cfg.FormatDSN())
	if err == nil {
		err = root.Ping()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("MySQL unreachable under CI=true (set LOOM_TEST_MYSQL_URL, default mysql://root@127.0.0.1:3306/): %v", err)
		}
		t.Skipf("MySQL unreachable; set LOOM_TEST_MYSQL_URL (default mysql://root@127.0.0.1:3306/): %v", err)
	}
	defer root.Close()
	var b [6]byte
	rand.Read(b[:])
	name := "loomtest_" + hex.EncodeToString(b[:])
	if _, err := root.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("mysql", cfg.FormatDSN())
		if err == nil {
			_, err = db.Exec("DROP DATABASE " + name)
			db.Close()
		}
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	if _, err := root.Exec("USE " + name + ";\n" + strings.TrimSpace(dump)); err != nil {
		t.Fatalf("load: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}
