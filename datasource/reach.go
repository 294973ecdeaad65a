package datasource

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrUnavailable is what the errors of a source whose database cannot be
// reached now match with errors.Is.
var ErrUnavailable = errors.New("data source unavailable")

// UnavailableError says a source's database cannot be reached now. Its
// text names only the reason, in a few words ("connection refused", "the
// database file is missing"), never a host, a path or a user: it may be
// shown to whoever asked. Cause, for the server's log, is the driver's
// error without the password.
type UnavailableError struct {
	// Reason is why, in a few words.
	Reason string
	// Cause is the driver's error, without the password; it may name the
	// host, the user or the file.
	Cause error
}

func (e *UnavailableError) Error() string { return "data source unavailable: " + e.Reason }

// Is makes the error match ErrUnavailable.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// Unwrap returns the cause.
func (e *UnavailableError) Unwrap() error { return e.Cause }

// Backoff between attempts to reach a database that did not answer.
const (
	firstWait = time.Second
	maxWait   = 30 * time.Second
	// connectTimeout bounds one attempt to connect.
	connectTimeout = 10 * time.Second
	// probeTimeout bounds the ping that tells a lost connection from a
	// statement's own error.
	probeTimeout = 3 * time.Second
)

// conn returns the source's database once it has answered, connecting
// first when it has not (one attempt at a time, none during the backoff
// after a failure).
func (s *Source) conn(ctx context.Context) (*sql.DB, error) {
	if db, err, done := s.state(); done {
		return db, err
	}
	select {
	case s.gate <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-s.gate }()
	// Another caller may have connected or failed while this one waited.
	if db, err, done := s.state(); done {
		return db, err
	}
	err := s.connect(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if ctx.Err() != nil {
			// The caller gave up (a client went away): that says
			// nothing of the database.
			return nil, ctx.Err()
		}
		return nil, s.failed(err)
	}
	s.ready, s.err, s.wait, s.retryAt = true, nil, 0, time.Time{}
	return s.db, nil
}

// state says, under the lock, whether conn can answer without an attempt:
// the database when ready, the last failure during its backoff.
func (s *Source) state() (*sql.DB, error, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.ready:
		return s.db, nil, true
	case s.err != nil && time.Now().Before(s.retryAt):
		return nil, s.err, true
	}
	return nil, nil, false
}

// failed records a failed attempt (s.mu held): the source is not ready
// and the next attempt waits for the backoff.
func (s *Source) failed(cause error) *UnavailableError {
	s.ready = false
	s.wait = min(max(s.wait*2, firstWait), maxWait)
	s.retryAt = time.Now().Add(s.wait)
	s.err = &UnavailableError{Reason: reason(cause), Cause: s.scrub(cause)}
	return s.err
}

// connect makes sure the database answers: the file is there (SQLite),
// a ping, and for MySQL which server it is.
func (s *Source) connect(ctx context.Context) error {
	if s.path != "" {
		st, err := os.Stat(s.path)
		switch {
		case err != nil:
			return fmt.Errorf("no such file %s: %w", s.redacted, errMissingFile)
		case st.IsDir():
			return fmt.Errorf("%s is a directory: %w", s.redacted, errMissingFile)
		}
	}
	pctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if err := s.db.PingContext(pctx); err != nil {
		return err
	}
	if s.dialect == MySQL {
		var v string
		if err := s.db.QueryRowContext(pctx, "SELECT VERSION()").Scan(&v); err != nil {
			return err
		}
		s.mu.Lock()
		s.mariadb = strings.Contains(strings.ToLower(v), "mariadb")
		s.mu.Unlock()
	}
	return nil
}

var (
	errMissingFile = errors.New("the database file is missing")
	errClosed      = errors.New("the data source is closed")
)

// lost returns err, or an *UnavailableError when err came from a
// database that no longer answers (then the source is no longer ready,
// and the next use reconnects after the backoff). An error the database
// itself answered with, a refusal, a timeout or a caller that gave up is
// returned as it is.
func (s *Source) lost(ctx context.Context, err error) error {
	var refused *RefusedError
	if err == nil || ctx.Err() != nil || errors.Is(err, ErrTimeout) || errors.Is(err, ErrNoTable) ||
		errors.Is(err, ErrUnavailable) || errors.As(err, &refused) || answered(err) {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	perr := s.ping(pctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if perr == nil || ctx.Err() != nil || s.closed {
		return err
	}
	return s.failed(perr)
}

// answered says whether err is the database's answer to a statement (a
// syntax error, a missing column, a permission), as opposed to a
// connection that could not be made or was ended.
func answered(err error) bool {
	var ce *pgconn.ConnectError
	var pg *pgconn.PgError
	var my *mysql.MySQLError
	switch {
	case errors.As(err, &ce):
		return false
	case errors.As(err, &pg):
		// Class 08: connection exceptions; 57P: the server is going
		// down or ended the session; 28 and 3D000 come when connecting.
		c := pg.Code
		return !strings.HasPrefix(c, "08") && !strings.HasPrefix(c, "57P") && !strings.HasPrefix(c, "28") && c != "3D000"
	case errors.As(err, &my):
		switch my.Number {
		case 1040, 1044, 1045, 1049, 1053, 1152, 1184, 1927:
			// Too many connections, access denied, no such database,
			// shutdown in progress, aborted or killed connections.
			return false
		}
		return true
	}
	return false
}

// ping checks the database answers now.
func (s *Source) ping(ctx context.Context) error {
	if s.path != "" {
		if _, err := os.Stat(s.path); err != nil {
			return fmt.Errorf("no such file %s: %w", s.redacted, errMissingFile)
		}
	}
	return s.db.PingContext(ctx)
}

// Ping says whether the source's database answers now: nil, or an
// *UnavailableError (the last one, without a new attempt, during the
// backoff after a failure). A readiness check calls it.
func (s *Source) Ping(ctx context.Context) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return errClosed
	}
	db, err := s.conn(ctx)
	if err != nil || db == nil {
		return err
	}
	if err := s.ping(ctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.failed(err)
	}
	return nil
}

// reason says in a few words, naming no host, user or file, why a
// database could not be reached.
func reason(err error) string {
	var pg *pgconn.PgError
	var my *mysql.MySQLError
	var dns *net.DNSError
	var ne net.Error
	switch {
	case errors.Is(err, errMissingFile):
		return errMissingFile.Error()
	case errors.As(err, &pg):
		switch {
		case pg.Code == "28P01" || pg.Code == "28000":
			return "the database refused the credentials"
		case pg.Code == "3D000":
			return "the database does not exist"
		case strings.HasPrefix(pg.Code, "57P"):
			return "the database is starting up or shutting down"
		case pg.Code == "53300":
			return "the database has too many connections"
		}
	case errors.As(err, &my):
		switch my.Number {
		case 1044, 1045:
			return "the database refused the credentials"
		case 1049:
			return "the database does not exist"
		case 1040:
			return "the database has too many connections"
		}
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(err, &dns):
		return "its host name does not resolve"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "its host cannot be reached"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "it did not answer in time"
	case strings.Contains(err.Error(), "connection refused"):
		return "connection refused"
	}
	return "the database cannot be reached"
}

// Identity names the database rawURL would open, for telling two URLs
// of the same database apart from different ones: a SQLite file's
// absolute, cleaned path (its links resolved when it exists), or
// HOST:PORT/DATABASE for a server, with localhost, 127.0.0.1 and ::1 as
// one host and the default port filled in. It opens nothing.
func Identity(rawURL string) (Dialect, string, error) {
	switch {
	case strings.HasPrefix(rawURL, "postgres://"), strings.HasPrefix(rawURL, "postgresql://"):
		cfg, err := pgx.ParseConfig(rawURL)
		if err != nil {
			return Postgres, "", errors.New("the URL does not parse as a PostgreSQL URL")
		}
		return Postgres, serverIdentity(cfg.Host, int(cfg.Port), cfg.Database), nil
	case strings.HasPrefix(rawURL, "mysql://"):
		u, err := url.Parse(rawURL)
		if err != nil {
			return MySQL, "", errors.New("the URL does not parse")
		}
		port, _ := strconv.Atoi(u.Port())
		if port == 0 {
			port = 3306
		}
		return MySQL, serverIdentity(u.Hostname(), port, strings.TrimPrefix(u.Path, "/")), nil
	case strings.HasPrefix(rawURL, "sqlite:"), strings.HasPrefix(rawURL, "file:"), !strings.Contains(rawURL, "://"):
		s := &Source{}
		if err := s.openSQLite(rawURL); err != nil {
			return SQLite, "", err
		}
		s.db.Close()
		return SQLite, FileIdentity(s.path), nil
	}
	return "", "", fmt.Errorf("unknown scheme in %s", Redact(rawURL))
}

// FileIdentity is Identity for the SQLite file at path.
func FileIdentity(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	// A file not there yet: its folder's links resolved.
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(dir, filepath.Base(abs))
	}
	return abs
}

// serverIdentity is HOST:PORT/DATABASE, the loopback names as one.
func serverIdentity(host string, port int, database string) string {
	switch h := strings.ToLower(strings.Trim(host, "[]")); h {
	case "localhost", "127.0.0.1", "::1", "":
		host = "localhost"
	default:
		host = h
	}
	return net.JoinHostPort(host, strconv.Itoa(port)) + "/" + database
}
