package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// batchTx is a transaction whose BEGIN goes out in one batch with its
// first statements, and whose COMMIT in one batch with its last ones:
// pgx.BeginFunc spends a round trip on each. Its caller queues "BEGIN"
// and "COMMIT" itself (see inBatchTx). It is a pgx.Tx for River, which
// inserts and completes jobs in it.
type batchTx struct {
	c *pgx.Conn
}

// errNestedTx is the error of batchTx.Begin.
var errNestedTx = errors.New("a transaction begun in a batch has no nested transactions")

// inBatchTx runs fn with a batchTx on a connection of pool. What fn leaves
// open of the transaction (an error, a batch cut short) is rolled back; a
// connection whose rollback failed is closed rather than handed back.
func inBatchTx(ctx context.Context, pool *pgxpool.Pool, fn func(tx *batchTx) error) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire a connection: %w", err)
	}
	defer func() {
		if pc := conn.Conn().PgConn(); !pc.IsClosed() && pc.TxStatus() != 'I' {
			if _, err := conn.Exec(context.WithoutCancel(ctx), "ROLLBACK"); err != nil {
				// The pool drops a connection that is not idle.
				_ = pc.Close(context.WithoutCancel(ctx))
			}
		}
		conn.Release()
	}()
	return fn(&batchTx{c: conn.Conn()})
}

// Begin implements pgx.Tx: a batchTx has no savepoints.
func (t *batchTx) Begin(context.Context) (pgx.Tx, error) { return nil, errNestedTx }

// Commit implements pgx.Tx.
func (t *batchTx) Commit(ctx context.Context) error {
	_, err := t.c.Exec(ctx, "COMMIT")
	return err
}

// Rollback implements pgx.Tx.
func (t *batchTx) Rollback(ctx context.Context) error {
	_, err := t.c.Exec(ctx, "ROLLBACK")
	return err
}

// CopyFrom implements pgx.Tx.
func (t *batchTx) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	return t.c.CopyFrom(ctx, table, cols, src)
}

// SendBatch implements pgx.Tx.
func (t *batchTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return t.c.SendBatch(ctx, b)
}

// LargeObjects implements pgx.Tx; large objects are not used here, and
// the value it returns cannot reach them.
func (t *batchTx) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }

// Prepare implements pgx.Tx.
func (t *batchTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	return t.c.Prepare(ctx, name, sql)
}

// Exec implements pgx.Tx.
func (t *batchTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return t.c.Exec(ctx, sql, args...)
}

// Query implements pgx.Tx.
func (t *batchTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return t.c.Query(ctx, sql, args...)
}

// QueryRow implements pgx.Tx.
func (t *batchTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return t.c.QueryRow(ctx, sql, args...)
}

// Conn implements pgx.Tx.
func (t *batchTx) Conn() *pgx.Conn { return t.c }
