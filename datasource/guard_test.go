package datasource_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/loomkit/loom/datasource"
)

var dialects = []datasource.Dialect{datasource.SQLite, datasource.Postgres, datasource.MySQL}

func TestCheckAllows(t *testing.T) {
	for _, c := range []struct {
		d    []datasource.Dialect
		stmt string
		want string // the cleaned statement; "" means stmt
	}{
		{dialects, "SELECT 1", ""},
		{dialects, "  select 1 ;; ", "select 1"},
		{dialects, "SELECT 'DROP TABLE x; DELETE FROM y'", ""},
		{dialects, "SELECT 1 -- ; DELETE FROM t", "SELECT 1"},
		{dialects, "SELECT /* DELETE */ 1", ""},
		{dialects, "WITH x AS (SELECT 1 AS a) SELECT a FROM x", ""},
		{dialects, "(SELECT 1) UNION (SELECT 2)", ""},
		{dialects, "SELECT replace('a', 'a', 'b')", ""},
		{dialects, "SELECT t.update FROM t", ""},
		{dialects, "SELECT count(*) OVER (PARTITION BY a ORDER BY b) FROM t", ""},
		{dialects, `SELECT "delete" FROM t`, ""},
		{dialects, "EXPLAIN SELECT 1", ""},
		{[]datasource.Dialect{datasource.SQLite}, "EXPLAIN QUERY PLAN SELECT 1", ""},
		{[]datasource.Dialect{datasource.SQLite}, "SELECT [insert] FROM t", ""},
		{[]datasource.Dialect{datasource.Postgres}, "SELECT $$DROP TABLE x$$", ""},
		{[]datasource.Dialect{datasource.Postgres}, "SELECT $tag$ it's ; DELETE $tag$", ""},
		{[]datasource.Dialect{datasource.Postgres}, `SELECT E'it\'s; DELETE FROM t'`, ""},
		{[]datasource.Dialect{datasource.Postgres}, "SELECT 1 /* nested /* DELETE */ still */", "SELECT 1"},
		{[]datasource.Dialect{datasource.Postgres}, "EXPLAIN (ANALYZE, FORMAT JSON) SELECT 1", ""},
		{[]datasource.Dialect{datasource.Postgres}, "SHOW search_path", ""},
		{[]datasource.Dialect{datasource.Postgres}, "TABLE t", ""},
		{[]datasource.Dialect{datasource.Postgres}, "SELECT substring('abc' FROM 1 FOR 2)", ""},
		{[]datasource.Dialect{datasource.Postgres}, "SELECT * FROM t FETCH FIRST 3 ROWS ONLY", ""},
		{[]datasource.Dialect{datasource.MySQL}, "SELECT INSERT('abc', 1, 1, 'x')", ""},
		{[]datasource.Dialect{datasource.MySQL}, "SELECT 1--1", ""},
		{[]datasource.Dialect{datasource.MySQL}, "SHOW TABLES", ""},
		{[]datasource.Dialect{datasource.MySQL}, "DESCRIBE t", ""},
		{[]datasource.Dialect{datasource.MySQL}, "EXPLAIN t", ""},
		{[]datasource.Dialect{datasource.MySQL}, "EXPLAIN FORMAT=JSON SELECT 1", ""},
		{[]datasource.Dialect{datasource.MySQL}, "SELECT `select` FROM t # DELETE", "SELECT `select` FROM t"},
	} {
		for _, d := range c.d {
			got, err := datasource.Check(d, c.stmt)
			want := c.want
			if want == "" {
				want = c.stmt
			}
			if err != nil || got != want {
				t.Errorf("%s: Check(%q) = %q, %v; want %q, nil", d, c.stmt, got, err, want)
			}
		}
	}
}

func TestCheckRefuses(t *testing.T) {
	for _, c := range []struct {
		d      []datasource.Dialect
		stmt   string
		reason string // a part of the reason
	}{
		{dialects, "", "empty"},
		{dialects, "DELETE FROM t", "only one read-only statement is allowed; found DELETE"},
		{dialects, "delete from t", "found DELETE"},
		{dialects, "SELECT 1; DELETE FROM t", "found a second one (DELETE)"},
		{dialects, "SELECT 1; SELECT 2", "only one read-only statement"},
		{dialects, "/* x */ DROP TABLE t", "found DROP"},
		{dialects, "SELECT 'unterminated", "unterminated string"},
		{dialects, "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "found DELETE"},
		{dialects, "EXPLAIN DELETE FROM t", "EXPLAIN DELETE"},
		{dialects, "SELECT * INTO t2 FROM t", "INTO"},
		{dialects, "BEGIN", "found BEGIN"},
		{[]datasource.Dialect{datasource.SQLite}, "ATTACH DATABASE '/tmp/x.db' AS x", "found ATTACH"},
		{[]datasource.Dialect{datasource.SQLite}, "PRAGMA writable_schema = 1", "found PRAGMA"},
		{[]datasource.Dialect{datasource.SQLite}, "VACUUM INTO '/tmp/x.db'", "found VACUUM"},
		{[]datasource.Dialect{datasource.Postgres}, "COPY t TO PROGRAM 'id'", "found COPY"},
		{[]datasource.Dialect{datasource.Postgres}, "SELECT 1 /* unterminated", "unterminated comment"},
		{[]datasource.Dialect{datasource.Postgres}, "SELECT $x$ open", "unterminated"},
		{[]datasource.Dialect{datasource.Postgres}, "EXPLAIN ANALYZE DELETE FROM t", "DELETE"},
		{[]datasource.Dialect{datasource.Postgres}, "SELECT pg_catalog.pg_sleep(1)", "pg_sleep() sleeps"},
		{[]datasource.Dialect{datasource.Postgres}, `SELECT "pg_sleep"(1)`, "pg_sleep()"},
		{[]datasource.Dialect{datasource.MySQL}, "SELECT 1 /*! , sleep(10) */", "executes"},
		{[]datasource.Dialect{datasource.MySQL}, `SELECT 'a\'; DELETE FROM t; '`, "ambiguous"},
		{[]datasource.Dialect{datasource.MySQL}, "LOAD DATA INFILE '/etc/passwd' INTO TABLE t", "found LOAD"},
		{[]datasource.Dialect{datasource.MySQL}, "REPLACE INTO t VALUES (1)", "found REPLACE"},
		{[]datasource.Dialect{datasource.MySQL}, "SELECT * FROM t INTO OUTFILE '/tmp/x'", "INTO OUTFILE writes a server file"},
		{[]datasource.Dialect{datasource.MySQL}, "SELECT @a := 1", ":= assigns"},
		{[]datasource.Dialect{datasource.MySQL}, "SeLeCt SlEeP(5)", "sleep() sleeps"},
	} {
		for _, d := range c.d {
			_, err := datasource.Check(d, c.stmt)
			var re *datasource.RefusedError
			if !errors.As(err, &re) || !errors.Is(err, datasource.ErrRefused) {
				t.Errorf("%s: Check(%q) = %v, want a refusal", d, c.stmt, err)
				continue
			}
			if !strings.Contains(re.Reason, c.reason) || strings.Contains(re.Reason, "\n") {
				t.Errorf("%s: Check(%q) reason %q, want one line with %q", d, c.stmt, re.Reason, c.reason)
			}
		}
	}
}

// TestDenylist runs every entry of the list on its dialects.
func TestDenylist(t *testing.T) {
	if len(datasource.Denylist()) < 60 {
		t.Fatalf("the denylist has %d entries", len(datasource.Denylist()))
	}
	for _, den := range datasource.Denylist() {
		for _, d := range den.Dialects {
			_, err := datasource.Check(d, den.Example)
			if !errors.Is(err, datasource.ErrRefused) {
				t.Errorf("%s: %s: Check(%q) = %v, want a refusal", d, den.Name, den.Example, err)
				continue
			}
			if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(den.Name)) && den.Name != "INTO" {
				t.Errorf("%s: %s: reason %q does not name it", d, den.Name, err)
			}
			// Upper-cased, the call is refused all the same.
			if _, err := datasource.Check(d, strings.ToUpper(den.Example)); !errors.Is(err, datasource.ErrRefused) {
				t.Errorf("%s: %s upper-cased: %v, want a refusal", d, den.Name, err)
			}
		}
	}
}
