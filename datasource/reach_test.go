package datasource

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomkit/loom/datasource/datasourcetest"
	"github.com/loomkit/loom/store/storetest"
)

// TestDialUnreachable dials a PostgreSQL and a MySQL server that are not
// there: Dial succeeds, every use is an *UnavailableError that names
// neither the host, the user nor the password, and a use during the
// backoff makes no new attempt.
func TestDialUnreachable(t *testing.T) {
	ctx := context.Background()
	const secret = "s3cr3t-pa55"
	addr := datasourcetest.ClosedAddr(t)
	for _, raw := range []string{
		"postgres://loomuser:" + secret + "@" + addr + "/shop?sslmode=disable",
		"mysql://loomuser:" + secret + "@" + addr + "/shop",
	} {
		t.Run(strings.SplitN(raw, ":", 2)[0], func(t *testing.T) {
			s, err := Dial(raw, Limits{Timeout: 5 * time.Second})
			if err != nil {
				t.Fatalf("Dial: %v", err)
			}
			defer s.Close()
			_, err = s.Query(ctx, "SELECT 1")
			var u *UnavailableError
			if !errors.As(err, &u) || !errors.Is(err, ErrUnavailable) {
				t.Fatalf("Query = %v, want an *UnavailableError", err)
			}
			if u.Reason != "connection refused" {
				t.Errorf("Reason = %q, want connection refused", u.Reason)
			}
			for _, leak := range []string{secret, "loomuser", "127.0.0.1", addr} {
				if strings.Contains(err.Error(), leak) {
					t.Errorf("the error shows %q: %v", leak, err)
				}
			}
			if u.Cause == nil || strings.Contains(u.Cause.Error(), secret) {
				t.Errorf("Cause = %v (want the driver's error without the password)", u.Cause)
			}
			// During the backoff: the same failure, no new attempt.
			_, err2 := s.Tables(ctx)
			var u2 *UnavailableError
			if !errors.As(err2, &u2) || u2 != u {
				t.Errorf("Tables during the backoff = %v, want the same failure", err2)
			}
			if err := s.Ping(ctx); !errors.Is(err, ErrUnavailable) {
				t.Errorf("Ping = %v", err)
			}
		})
	}
}

// TestDialComesBack dials a SQLite file that is not there yet: it is
// unavailable until the file is made, and then answers without a new
// Source.
func TestDialComesBack(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "later.db")
	s, err := Dial(path, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Query(ctx, "SELECT 1")
	var u *UnavailableError
	if !errors.As(err, &u) || u.Reason != "the database file is missing" {
		t.Fatalf("Query before the file = %v", err)
	}
	if strings.Contains(err.Error(), path) {
		t.Errorf("the error shows the path: %v", err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	// Still in the backoff: the recorded failure.
	if _, err := s.Query(ctx, "SELECT x FROM t"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Query during the backoff = %v", err)
	}
	s.mu.Lock()
	s.retryAt = time.Now() // the backoff is over
	s.mu.Unlock()
	res, err := s.Query(ctx, "SELECT x FROM t")
	if err != nil {
		t.Fatalf("Query after the file was made: %v", err)
	}
	if len(res.Rows) != 1 || res.Rows[0][0] != float64(42) && res.Rows[0][0] != int64(42) {
		t.Errorf("rows = %v", res.Rows)
	}
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping = %v", err)
	}
	// Gone again: the next use says so.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Ping after the file went = %v", err)
	}
}

// TestBackoffGrows checks the wait between attempts doubles up to its
// bound.
func TestBackoffGrows(t *testing.T) {
	s := &Source{}
	var waits []time.Duration
	for range 8 {
		s.failed(errors.New("x"))
		waits = append(waits, s.wait)
	}
	want := []time.Duration{1, 2, 4, 8, 16, 30, 30, 30}
	for i, w := range waits {
		if w != want[i]*time.Second {
			t.Fatalf("waits = %v", waits)
		}
	}
}

func TestIdentity(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "loom.db")
	if err := os.WriteFile(real, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	same := [][2]string{
		{real, "sqlite://" + real},
		{real, "file:" + real},
		{real, link},
		{real, filepath.Join(dir, "sub", "..", "loom.db")},
		{"postgres://a:b@localhost/app?sslmode=disable", "postgres://c@127.0.0.1:5432/app"},
		{"postgresql://db.internal:6543/app", "postgres://x:y@DB.internal:6543/app?search_path=other"},
		{"mysql://u:p@localhost/shop", "mysql://v@127.0.0.1:3306/shop"},
	}
	differ := [][2]string{
		{real, filepath.Join(dir, "other.db")},
		{"postgres://localhost/app", "postgres://localhost/app2"},
		{"postgres://localhost:5432/app", "postgres://localhost:5433/app"},
		{"postgres://db1/app", "postgres://db2/app"},
	}
	id := func(raw string) string {
		d, s, err := Identity(raw)
		if err != nil {
			t.Fatalf("Identity(%s): %v", raw, err)
		}
		return string(d) + " " + s
	}
	for _, p := range same {
		if a, b := id(p[0]), id(p[1]); a != b {
			t.Errorf("%s and %s: %q != %q", p[0], p[1], a, b)
		}
	}
	for _, p := range differ {
		if a, b := id(p[0]), id(p[1]); a == b {
			t.Errorf("%s and %s are both %q", p[0], p[1], a)
		}
	}
}

// TestMySQLAccountScrubbed: MySQL's errors name the account with the
// address Loom connects from; a source's errors do not.
func TestMySQLAccountScrubbed(t *testing.T) {
	s := &Source{dialect: MySQL}
	err := s.scrub(errors.New("Error 1142 (42000): SELECT command denied to user 'reader'@'10.0.3.7' for table 'payroll'"))
	if strings.Contains(err.Error(), "10.0.3.7") || strings.Contains(err.Error(), "'reader'") || !strings.Contains(err.Error(), "for table 'payroll'") {
		t.Errorf("scrubbed = %q", err)
	}
}

// TestServerSourceComesBack dials a database that does not exist yet on
// the test PostgreSQL and MySQL servers: unavailable ("the database does
// not exist"); once created it answers on the same Source; on
// PostgreSQL, dropped (its connections ended) it is unavailable again,
// and created again it answers again.
func TestServerSourceComesBack(t *testing.T) {
	ctx := context.Background()
	name := fmt.Sprintf("loomback_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6)
	type server struct {
		dialect Dialect
		admin   *sql.DB
		url     string
	}
	var servers []server
	t.Run("setup", func(t *testing.T) {
		pgBase := storetest.ServerURL(t)
		pg, err := sql.Open("pgx", pgBase)
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(pgBase)
		u.Path = "/" + name
		servers = append(servers, server{Postgres, pg, u.String()})
	})
	t.Run("setup-mysql", func(t *testing.T) {
		myBase := datasourcetest.ServerURL(t)
		my, err := sql.Open("mysql", datasourcetest.Config(t, myBase).FormatDSN())
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(myBase)
		u.Path = "/" + name
		servers = append(servers, server{MySQL, my, u.String()})
	})
	for _, sv := range servers {
		t.Run(string(sv.dialect), func(t *testing.T) {
			defer sv.admin.Close()
			exec := func(stmt string) {
				t.Helper()
				if _, err := sv.admin.ExecContext(ctx, stmt); err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}
			t.Cleanup(func() { sv.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name) })
			s, err := Dial(sv.url, Limits{Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			again := func() {
				s.mu.Lock()
				s.retryAt = time.Now() // the backoff is over
				s.mu.Unlock()
			}
			var u *UnavailableError
			if _, err := s.Query(ctx, "SELECT 1"); !errors.As(err, &u) || u.Reason != "the database does not exist" {
				t.Fatalf("before the database: %v", err)
			}
			exec("CREATE DATABASE " + name)
			again()
			if _, err := s.Query(ctx, "SELECT 1"); err != nil {
				t.Fatalf("once created: %v", err)
			}
			if sv.dialect != Postgres {
				return
			}
			exec("DROP DATABASE " + name + " WITH (FORCE)")
			if _, err := s.Query(ctx, "SELECT 1"); !errors.Is(err, ErrUnavailable) {
				t.Fatalf("once dropped: %v", err)
			}
			exec("CREATE DATABASE " + name)
			again()
			if _, err := s.Tables(ctx); err != nil {
				t.Fatalf("created again: %v", err)
			}
		})
	}
}
