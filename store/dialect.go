package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Dialect is a database's flavour of SQL.
type Dialect string

// The dialects.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// Rebind rewrites the ? placeholders of q for the dialect: $1, $2 … for
// Postgres; SQLite takes ? as it is. A ? inside quotes is left alone.
func (d Dialect) Rebind(q string) string {
	if d != Postgres || !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 8)
	n := 0
	var quote byte
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// IsUnique reports whether err is a violated primary key or unique
// constraint, on either dialect: the row exists already.
func IsUnique(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "23505"
	}
	var se *msqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE
	}
	return false
}

// IsInvalidText reports whether err is PostgreSQL refusing text it cannot
// hold (the character NUL): an error in what was asked, which names
// nothing that is stored.
func IsInvalidText(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "22021" || pe.Code == "22P05") // character_not_in_repertoire, untranslatable_character
}

// IsUnavailable reports whether err says the database could not be
// reached, went away during the request (a restart, a failover, a
// network fault) or cannot be written just now (a read-only file or
// replica, a full disk, an I/O error): a condition of the database, not
// of what was asked, for which a server answers 503 and a client retries.
func IsUnavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, ErrUnavailable) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "57P01", "57P02", "57P03", "53300": // admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections
			return true
		case "25006", "53100", "58030": // read_only_sql_transaction (a standby, default_transaction_read_only), disk_full, io_error
			return true
		}
		return strings.HasPrefix(pe.Code, "08") // connection exceptions
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), pgconn.SafeToRetry(err), pgconn.Timeout(err),
		errors.Is(err, pgconn.ErrConnClosed), errors.Is(err, driver.ErrBadConn),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	var se *msqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff { // the primary code, whatever the extended one
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM:
			return true
		}
	}
	return false
}

// IsReadOnly reports whether err says the database refuses writes: a
// SQLite file that is read-only (its permissions, a read-only mount, a
// file moved away while open) or a PostgreSQL read-only transaction (a
// standby, default_transaction_read_only).
func IsReadOnly(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "25006"
	}
	var se *msqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_READONLY
}

// isBusy reports whether err is SQLite's busy timeout: another process
// held the database's lock too long.
func isBusy(err error) bool {
	var se *msqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}
