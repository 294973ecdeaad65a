package datasource

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// corpusEntry is one statement of testdata/corpus.txt or legit.txt.
type corpusEntry struct {
	line     int
	section  string
	dialects []Dialect
	rows     int
	stmt     string
}

// readCorpus reads a corpus file; legit files have a ROWS column.
func readCorpus(t testing.TB, name string, legit bool) []corpusEntry {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []corpusEntry
	section := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "# ") && !strings.Contains(line, ".") {
			section = strings.TrimPrefix(line, "# ")
		}
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.SplitN(line, "\t", 3)
		e := corpusEntry{line: n, section: section}
		if !legit {
			fields = append(fields[:1], append([]string{"0"}, fields[1:]...)...)
		}
		if len(fields) != 3 {
			t.Fatalf("%s:%d: want DIALECTS<TAB>…", name, n)
		}
		if e.rows, err = strconv.Atoi(fields[1]); err != nil {
			t.Fatalf("%s:%d: rows: %v", name, n, err)
		}
		if fields[0] == "all" {
			e.dialects = []Dialect{SQLite, Postgres, MySQL}
		} else {
			for _, d := range strings.Split(fields[0], ",") {
				e.dialects = append(e.dialects, Dialect(d))
			}
		}
		e.stmt = strings.NewReplacer(`\n`, "\n", `\t`, "\t").Replace(fields[2])
		out = append(out, e)
	}
	return out
}

// corpus is the adversarial corpus with the Denylist's examples added.
func corpus(t testing.TB) []corpusEntry {
	c := readCorpus(t, "corpus.txt", false)
	for _, den := range denylist {
		stmt := strings.ReplaceAll(den.Example, " FROM t", " FROM customers")
		c = append(c, corpusEntry{section: "denylist " + den.Name, dialects: den.Dialects, stmt: stmt})
	}
	return c
}

// snapshot is what must not change: the tables' contents, the catalog as
// the engine lists it, and the files the corpus names.
func snapshot(t testing.TB, e engine) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{"SELECT * FROM customers ORDER BY id", "SELECT * FROM orders ORDER BY id", "SELECT * FROM big_orders ORDER BY id"} {
		rows, err := e.admin.Query(q)
		if err != nil {
			t.Fatalf("%s: snapshot: %v", e.dialect, err)
		}
		res, err := collect(rows, Limits{MaxRows: 1000, MaxBytes: 1 << 20})
		rows.Close()
		if err != nil {
			t.Fatal(err)
		}
		j, _ := json.Marshal(res.Rows)
		b.Write(j)
	}
	var catalog []string
	switch e.dialect {
	case SQLite:
		catalog = []string{"SELECT type || name || sql FROM sqlite_schema ORDER BY name", "PRAGMA user_version", "PRAGMA journal_mode"}
	case Postgres:
		catalog = []string{
			"SELECT n.nspname || '.' || c.relname || c.relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname NOT LIKE 'pg_temp%' AND n.nspname NOT LIKE 'pg_toast%' AND (n.nspname = current_schema() OR n.nspname IN ('public', 'pg_catalog')) ORDER BY 1",
			"SELECT count(*) FROM pg_largeobject_metadata",
			"SELECT count(*) FROM pg_namespace WHERE nspname = 'evil'",
			"SELECT count(*) FROM pg_roles WHERE rolname = 'evil'",
			"SELECT count(*) FROM pg_extension",
		}
	case MySQL:
		catalog = []string{
			"SELECT concat(TABLE_NAME, TABLE_TYPE, ENGINE) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() ORDER BY 1",
			"SELECT count(*) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE()",
			"SELECT count(*) FROM information_schema.EVENTS WHERE EVENT_SCHEMA = DATABASE()",
			"SELECT count(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'evil'",
			"SELECT count(*) FROM mysql.user WHERE User = 'evil'",
			"SELECT @@global.read_only",
		}
	}
	for _, q := range catalog {
		rows, err := e.admin.Query(q)
		if err != nil {
			t.Fatalf("%s: snapshot %s: %v", e.dialect, q, err)
		}
		for rows.Next() {
			var v any
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s|", v)
		}
		rows.Close()
	}
	if e.dialect == SQLite {
		data, err := os.ReadFile(e.url)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%x", sha256.Sum256(data))
		entries, _ := os.ReadDir(filepath.Dir(e.url))
		for _, en := range entries {
			b.WriteString(en.Name() + ",")
		}
	}
	return b.String()
}

// corpusFiles returns the files the corpus would write, if any exist.
func corpusFiles() []string {
	m, _ := filepath.Glob(filepath.Join(os.TempDir(), "loom-corpus-*"))
	m2, _ := filepath.Glob("/tmp/loom-corpus-*")
	return append(m, m2...)
}

// TestCorpus runs every statement of the adversarial corpus on every
// engine of its dialects, twice: through Query, where each must be refused
// or fail, and on the engine layer alone (the guard skipped) as the
// least-privilege account the README describes, where each write must
// fail. The contents, the catalog and the file system are the same
// afterwards. Then every legitimate query runs.
func TestCorpus(t *testing.T) {
	entries := corpus(t)
	pairs := 0
	for _, c := range entries {
		pairs += len(c.dialects)
	}
	if len(entries) < 200 {
		t.Fatalf("the corpus has %d statements, want at least 200", len(entries))
	}
	t.Logf("%d statements, %d statement-dialect pairs", len(entries), pairs)
	for _, f := range corpusFiles() {
		os.Remove(f)
	}
	ctx := context.Background()
	for _, e := range engines(t) {
		t.Run(string(e.dialect), func(t *testing.T) {
			before := snapshot(t, e)
			s := e.open(t, Limits{Timeout: 2 * time.Second})
			refused, failed := 0, 0
			for _, c := range entries {
				if !slices.Contains(c.dialects, e.dialect) {
					continue
				}
				res, err := s.Query(ctx, c.stmt)
				switch {
				case errors.Is(err, ErrRefused):
					refused++
				case err != nil:
					failed++
				default:
					t.Errorf("line %d (%s): %q ran: %v", c.line, c.section, c.stmt, res.Rows)
				}
			}
			t.Logf("through Query: %d refused by the guard, %d failed in the engine", refused, failed)
			if after := snapshot(t, e); after != before {
				t.Errorf("the database changed:\nbefore %s\nafter  %s", before, after)
			}
			if f := corpusFiles(); len(f) > 0 {
				t.Errorf("files appeared: %v", f)
			}

			// The engine layer alone, as the least-privilege account.
			ro, err := Open(ctx, e.roURL, Limits{Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer ro.Close()
			ran := 0
			for _, c := range entries {
				if !slices.Contains(c.dialects, e.dialect) || !writes(c) {
					continue
				}
				ran++
				if res, err := ro.run(ctx, c.stmt, ro.limits); err == nil {
					t.Errorf("engine alone: line %d (%s): %q ran: %v", c.line, c.section, c.stmt, res.Rows)
				}
			}
			t.Logf("engine layer alone: %d writes, all failed", ran)
			if after := snapshot(t, e); after != before {
				t.Errorf("the database changed on the engine layer alone:\nbefore %s\nafter  %s", before, after)
			}
			if f := corpusFiles(); len(f) > 0 {
				t.Errorf("files appeared: %v", f)
			}

			for _, c := range readCorpus(t, "legit.txt", true) {
				if !slices.Contains(c.dialects, e.dialect) {
					continue
				}
				res, err := s.Query(ctx, c.stmt)
				if err != nil {
					t.Errorf("legit line %d: %q: %v", c.line, c.stmt, err)
				} else if len(res.Rows) < c.rows {
					t.Errorf("legit line %d: %q gave %d rows, want at least %d", c.line, c.stmt, len(res.Rows), c.rows)
				}
			}
		})
	}
}

// writes reports whether a corpus entry writes to the database (rather
// than reading files, sleeping or changing the session): the statements
// the engine layer must stop on its own.
func writes(c corpusEntry) bool {
	switch c.section {
	case "Pragmas":
		return strings.Contains(c.stmt, "=")
	case "DML", "DDL", "Data-modifying CTEs and writes inside queries":
		return !strings.HasPrefix(c.stmt, "EXPLAIN") || strings.Contains(c.stmt, "ANALYZE")
	case "SELECT INTO":
		return !strings.Contains(c.stmt, "@")
	}
	return false
}
