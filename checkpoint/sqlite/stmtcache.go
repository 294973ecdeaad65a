package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
)

// maxCachedStmts bounds the statements a connection keeps prepared: SQL
// that a caller builds on the fly (a list of columns, say) runs
// unprepared once the cache is full, rather than growing it for ever.
const maxCachedStmts = 256

// connector opens the saver's connections through the sqlite driver
// (modernc.org/sqlite, with the functions registered on it), each one
// keeping the statements it executes prepared (see cachingConn).
type connector struct {
	dsn string
	d   driver.Driver
}

// newConnector returns a connector for dsn on the driver that
// modernc.org/sqlite registers as "sqlite".
func newConnector(dsn string) (*connector, error) {
	db, err := sql.Open("sqlite", "") // opens no connection: only finds the driver
	if err != nil {
		return nil, fmt.Errorf("find the sqlite driver: %w", err)
	}
	d := db.Driver()
	if err := db.Close(); err != nil {
		return nil, fmt.Errorf("find the sqlite driver: %w", err)
	}
	return &connector{dsn: dsn, d: d}, nil
}

func (c *connector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.d.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return newCachingConn(conn)
}

func (c *connector) Driver() driver.Driver { return c.d }

// inner is what database/sql uses of a modernc.org/sqlite connection.
type inner interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// cachingConn is a connection whose ExecContext prepares each statement
// once and runs it prepared from then on: every write of the process goes
// through the one write connection (the saver's group commit), and
// SQLite's parsing and planning of the same few INSERTs and UPDATEs in
// each of them would otherwise be a good part of the work done holding
// the write lock. Queries are not cached: their rows may still be open
// when the same query runs again in the same transaction.
//
// database/sql uses a connection from one goroutine at a time, so the
// cache needs no lock. SQLite prepares a statement again by itself when
// the schema it was planned against changes.
type cachingConn struct {
	inner
	stmts map[string]driver.StmtExecContext
}

func newCachingConn(c driver.Conn) (driver.Conn, error) {
	in, ok := c.(inner)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("sqlite driver connection %T lacks methods database/sql needs", c)
	}
	return &cachingConn{inner: in, stmts: make(map[string]driver.StmtExecContext)}, nil
}

// ExecContext implements driver.ExecerContext with the statement prepared
// at the first call.
func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	st, ok := c.stmts[query]
	if !ok {
		if len(c.stmts) >= maxCachedStmts {
			return c.inner.ExecContext(ctx, query, args)
		}
		ds, err := c.inner.PrepareContext(ctx, query)
		if err != nil {
			return nil, err
		}
		if st, ok = ds.(driver.StmtExecContext); !ok {
			ds.Close()
			return c.inner.ExecContext(ctx, query, args)
		}
		c.stmts[query] = st
	}
	return st.ExecContext(ctx, args)
}

// Close finalizes the cached statements and closes the connection.
func (c *cachingConn) Close() error {
	var errs []error
	for q, st := range c.stmts {
		if cl, ok := st.(driver.Stmt); ok {
			errs = append(errs, cl.Close())
		}
		delete(c.stmts, q)
	}
	errs = append(errs, c.inner.Close())
	return errors.Join(errs...)
}
