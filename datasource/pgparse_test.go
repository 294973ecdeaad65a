//go:build cgo

package datasource

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckPostgresAlone runs PostgreSQL's parser verdict without the
// lexer in front of it: it holds on its own.
func TestCheckPostgresAlone(t *testing.T) {
	for _, c := range []struct {
		stmt, reason string // "" reason: allowed
	}{
		{"SELECT 1", ""},
		{"SELECT 'DELETE FROM t'", ""},
		{"WITH x AS (SELECT 1) SELECT * FROM x", ""},
		{"EXPLAIN SELECT 1", ""},
		{"SHOW search_path", ""},
		{"VALUES (1)", ""},
		{"TABLE t", ""},
		{"DELETE FROM t", "found DELETE"},
		{"SELECT 1; SELECT 2", "found 2 statements"},
		{"WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "found DELETE"},
		{"WITH u AS (UPDATE t SET a = 1 RETURNING *) SELECT 1", "found UPDATE"},
		{"SELECT * INTO x FROM t", "INTO"},
		{"SELECT * FROM t FOR SHARE", "locks rows"},
		{"SELECT * FROM (SELECT 1 FROM t FOR UPDATE) s", "locks rows"},
		{"SELECT (SELECT pg_catalog.pg_sleep(1))", "pg_sleep()"},
		{"SELECT count(*) FILTER (WHERE lo_import('/etc/passwd') > 0) FROM t", "lo_import()"},
		{"EXPLAIN ANALYZE DELETE FROM t", "EXPLAIN DELETE"},
		{"COPY t TO PROGRAM 'id'", "found COPY"},
		{"SET statement_timeout = 0", "found SET"},
		{"BEGIN", "transaction statement"},
		{"CREATE TABLE x (a int)", "found Create statement"},
		{"SELEC 1", "does not parse"},
	} {
		err := checkPostgres(c.stmt)
		switch {
		case c.reason == "" && err != nil:
			t.Errorf("%q: %v, want allowed", c.stmt, err)
		case c.reason != "" && (!errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.reason)):
			t.Errorf("%q: %v, want a refusal with %q", c.stmt, err, c.reason)
		}
	}
}
