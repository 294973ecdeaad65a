package datasource

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"modernc.org/sqlite"
)

// Dialect is the SQL dialect of a data source.
type Dialect string

// The dialects a Source speaks.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
	MySQL    Dialect = "mysql"
)

// Limits bound what one statement may do. Zero fields take the defaults.
type Limits struct {
	// Timeout bounds one statement (default 30s). The engine enforces it
	// too: statement_timeout on Postgres, max_execution_time (MySQL) or
	// max_statement_time (MariaDB), an interrupt on SQLite.
	Timeout time.Duration
	// MaxRows is how many rows a result keeps (default 1000); a result
	// with more says Truncated.
	MaxRows int
	// MaxBytes bounds the values a result keeps (default 4 MiB), measured
	// as their text.
	MaxBytes int
}

// Defaults for Limits.
const (
	DefaultTimeout  = 30 * time.Second
	DefaultMaxRows  = 1000
	DefaultMaxBytes = 4 << 20
)

func (l Limits) withDefaults() Limits {
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	if l.MaxRows <= 0 {
		l.MaxRows = DefaultMaxRows
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	return l
}

// Source is an open data source: a user's database, read only. It is safe
// for concurrent use.
type Source struct {
	dialect  Dialect
	db       *sql.DB
	redacted string
	secrets  []string
	limits   Limits
	path     string // SQLite: the file, absolute

	// gate lets one connection attempt run at a time; mu guards the
	// fields below it.
	gate    chan struct{}
	mu      sync.Mutex
	ready   bool
	mariadb bool
	err     *UnavailableError // the last failed attempt's
	retryAt time.Time         // no new attempt before then
	wait    time.Duration     // the backoff after the last failure
	closed  bool              // by Close: errors are this side's, not the database's
}

// Open opens the database rawURL names, read only, and makes sure it
// answers:
//
//   - SQLite: a file path, sqlite:///abs/path, sqlite://rel/path or
//     file:path. The file must exist; it is opened mode=ro with
//     query_only, and SQLite's authorizer admits only reads.
//   - PostgreSQL: postgres://user:pass@host:port/db?sslmode=… (any pgx
//     URL). Statements run in READ ONLY transactions with
//     statement_timeout.
//   - MySQL and MariaDB: mysql://user:pass@host:port/db. Statements run in
//     START TRANSACTION READ ONLY with the server's statement time limit.
//
// The password never appears in String, in errors, or anywhere else the
// Source reports. Dial is Open for a server that must start while the
// database is down.
func Open(ctx context.Context, rawURL string, limits Limits) (*Source, error) {
	s, err := Dial(rawURL, limits)
	if err != nil {
		return nil, err
	}
	if _, err := s.conn(ctx); err != nil {
		s.db.Close()
		var u *UnavailableError
		if errors.As(err, &u) {
			err = u.Cause
		}
		return nil, s.scrub(fmt.Errorf("open data source %s: %w", s.redacted, err))
	}
	return s, nil
}

// Dial returns the source rawURL names (see Open) without reaching it:
// only a URL that can never work (an unknown scheme, a parameter the
// driver does not know) is an error. The first use connects; while the
// database cannot be reached every use returns an *UnavailableError at
// once, and a new attempt is made only after a backoff (1 s, doubling to
// 30 s), so a source that comes back is used again without a restart.
func Dial(rawURL string, limits Limits) (*Source, error) {
	s := &Source{limits: limits.withDefaults(), gate: make(chan struct{}, 1)}
	var err error
	switch {
	case strings.HasPrefix(rawURL, "postgres://"), strings.HasPrefix(rawURL, "postgresql://"):
		err = s.openPostgres(rawURL)
	case strings.HasPrefix(rawURL, "mysql://"):
		err = s.openMySQL(rawURL)
	case strings.HasPrefix(rawURL, "sqlite:"), strings.HasPrefix(rawURL, "file:"), !strings.Contains(rawURL, "://"):
		err = s.openSQLite(rawURL)
	default:
		u := rawURL[:strings.Index(rawURL, "://")]
		return nil, fmt.Errorf("open data source: unknown scheme %q (want a SQLite path, postgres:// or mysql://)", u)
	}
	if err != nil {
		return nil, s.scrub(fmt.Errorf("open data source %s: %w", s.redacted, err))
	}
	return s, nil
}

// Dialect returns the source's SQL dialect.
func (s *Source) Dialect() Dialect { return s.dialect }

// String returns the source's URL without its password.
func (s *Source) String() string { return s.redacted }

// Limits returns the source's limits, with defaults filled in.
func (s *Source) Limits() Limits { return s.limits }

// Close closes the source's connections.
func (s *Source) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return s.db.Close()
}

// scrub removes the source's secrets from an error's text.
func (s *Source) scrub(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := msg
	for _, sec := range s.secrets {
		clean = strings.ReplaceAll(clean, sec, "xxxxx")
	}
	if s.dialect == MySQL {
		// MySQL names the account with the address Loom connects
		// from: 'reader'@'10.0.3.7'.
		clean = mysqlAccount.ReplaceAllString(clean, "the source's account")
	}
	if clean == msg {
		return err
	}
	return &scrubbedError{msg: clean, err: err}
}

// mysqlAccount is how MySQL's errors name an account and its host.
var mysqlAccount = regexp.MustCompile(`'[^'@\s]*'@'[^'\s]*'`)

// scrubbedError keeps the wrapped error for errors.Is and errors.As but
// prints without secrets.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// Redact returns rawURL with its password replaced by xxxxx; a string that
// does not parse as a URL is returned as its scheme only.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		if i := strings.Index(rawURL, "://"); i > 0 {
			return rawURL[:i] + "://…"
		}
		return "…"
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	q := u.Query()
	for k := range q {
		if strings.EqualFold(k, "password") {
			q.Set(k, "xxxxx")
			u.RawQuery = q.Encode()
		}
	}
	return u.String()
}

// secretsOf returns the password of rawURL, raw and escaped, if it has one.
func secretsOf(u *url.URL) []string {
	var out []string
	add := func(p string) {
		if len(p) >= 3 { // shorter strings would scrub ordinary text
			out = append(out, p, url.QueryEscape(p), url.PathEscape(p))
		}
	}
	if p, ok := u.User.Password(); ok {
		add(p)
	}
	for k, v := range u.Query() {
		if strings.EqualFold(k, "password") {
			for _, p := range v {
				add(p)
			}
		}
	}
	return out
}

func (s *Source) openPostgres(rawURL string) error {
	s.dialect, s.redacted = Postgres, Redact(rawURL)
	u, err := url.Parse(rawURL)
	if err != nil {
		return errors.New("the URL does not parse")
	}
	s.secrets = secretsOf(u)
	cfg, err := pgx.ParseConfig(rawURL)
	if err != nil {
		return errors.New("the URL does not parse as a PostgreSQL URL")
	}
	if cfg.Password != "" && len(cfg.Password) >= 3 {
		s.secrets = append(s.secrets, cfg.Password)
	}
	s.db = stdlib.OpenDB(*cfg)
	s.db.SetMaxOpenConns(8)
	return nil
}

func (s *Source) openMySQL(rawURL string) error {
	s.dialect, s.redacted = MySQL, Redact(rawURL)
	u, err := url.Parse(rawURL)
	if err != nil {
		return errors.New("the URL does not parse")
	}
	s.secrets = secretsOf(u)
	cfg := mysql.NewConfig()
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	cfg.Net = "tcp"
	cfg.Addr = u.Host
	if u.Port() == "" {
		cfg.Addr = net.JoinHostPort(u.Hostname(), "3306")
	}
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	if cfg.DBName == "" {
		return errors.New("the URL names no database (mysql://user:pass@host:port/DB)")
	}
	cfg.ParseTime = true
	cfg.MultiStatements = false
	cfg.Timeout = 10 * time.Second
	for k, v := range u.Query() {
		switch k {
		case "tls":
			cfg.TLSConfig = v[0]
		case "charset", "collation", "loc":
		default:
			return fmt.Errorf("unknown parameter %q in the URL", k)
		}
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	s.db = sql.OpenDB(conn)
	s.db.SetMaxOpenConns(8)
	return nil
}

// sqliteDriver opens SQLite files with the read-only authorizer on every
// connection.
var sqliteDriver = func() *sqlite.Driver {
	d := &sqlite.Driver{}
	d.RegisterConnectionHook(func(c sqlite.ExecQuerierContext, _ string) error {
		a, ok := c.(sqlite.AuthorizerRegisterer)
		if !ok {
			return errors.New("the SQLite driver has no authorizer")
		}
		return a.RegisterAuthorizer(authorize)
	})
	return d
}()

type sqliteConnector struct{ dsn string }

func (c sqliteConnector) Connect(context.Context) (driver.Conn, error) {
	return sqliteDriver.Open(c.dsn)
}
func (c sqliteConnector) Driver() driver.Driver { return sqliteDriver }

func (s *Source) openSQLite(rawURL string) error {
	s.dialect = SQLite
	path := rawURL
	for _, p := range []string{"sqlite://", "sqlite:", "file://", "file:"} {
		if strings.HasPrefix(path, p) {
			path = strings.TrimPrefix(path, p)
			break
		}
	}
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	s.redacted = "sqlite://" + path
	if path == "" {
		return errors.New("no file named")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	s.path = abs
	u := url.URL{Scheme: "file", Path: abs}
	dsn := u.String() + "?mode=ro&_pragma=query_only(1)&_pragma=busy_timeout(5000)&_pragma=trusted_schema(0)"
	s.db = sql.OpenDB(sqliteConnector{dsn: dsn})
	return nil
}

// authorize is SQLite's verdict on every action of a statement it
// compiles: reading tables and calling functions outside the Denylist is
// allowed, everything else (writes, DDL, ATTACH, PRAGMA, transactions) is
// denied before the statement can run.
func authorize(action sqlite.AuthorizerActionCode, arg1, arg2, _, _ string) sqlite.AuthorizerReturnCode {
	switch action {
	case sqlite.AuthSelect, sqlite.AuthRead, sqlite.AuthRecursive:
		return sqlite.AuthorizerOK
	case sqlite.AuthFunction:
		if deniedFunction(SQLite, arg2) != nil {
			return sqlite.AuthorizerDeny
		}
		return sqlite.AuthorizerOK
	case sqlite.AuthPragma:
		// Pragmas that only read (pragma_table_info('t') and the like;
		// arg2 is their argument), which introspection uses.
		if readPragmas[strings.ToLower(arg1)] {
			return sqlite.AuthorizerOK
		}
	}
	return sqlite.AuthorizerDeny
}

// readPragmas are the pragmas that only read, which introspection uses.
var readPragmas = map[string]bool{
	"table_info": true, "table_xinfo": true, "foreign_key_list": true, "index_list": true, "index_info": true,
	"index_xinfo": true, "table_list": true,
}
