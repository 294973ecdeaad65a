package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func sqlFixture(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shop.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT, price REAL);
		INSERT INTO products VALUES (1, 'tea', 3.5), (2, 'cake', 4.25), (3, 'jam', NULL), (4, '乌龙茶', 8)`); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSQLCommand(t *testing.T) {
	ctx := context.Background()
	db := sqlFixture(t)
	var out strings.Builder
	if err := run(ctx, []string{"sql", "--db", db, "SELECT name, price FROM products WHERE id <= 3 ORDER BY id"}, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if !strings.HasPrefix(lines[0], "name  price") || !strings.HasPrefix(lines[2], "tea   3.5") || !strings.HasPrefix(lines[4], "jam   NULL") ||
		!strings.HasPrefix(lines[5], "(3 rows, ") {
		t.Errorf("table:\n%s", out.String())
	}

	// Chinese text is two columns wide a character: the columns after
	// it line up by display width, not by bytes or characters.
	out.Reset()
	if err := run(ctx, []string{"sql", "--db", db, "SELECT name, price, id FROM products ORDER BY id DESC"}, &out); err != nil {
		t.Fatal(err)
	}
	lines = strings.Split(out.String(), "\n")
	for i, w := range []string{"name    price  id", "----    -----  --", "乌龙茶  8      4", "jam     NULL   3", "cake    4.25   2", "tea     3.5    1"} {
		if i >= len(lines) || lines[i] != w {
			t.Errorf("line %d is %q, want %q:\n%s", i, lines[min(i, len(lines)-1)], w, out.String())
		}
	}

	out.Reset()
	if err := run(ctx, []string{"sql", "--db", "sqlite://" + db, "--json", "--max-rows", "2", "SELECT id, name FROM products ORDER BY id"}, &out); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out.String()), &got); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(got) != 4 || got["truncated"] != true || len(got["rows"].([]any)) != 2 || got["ms"] == nil {
		t.Errorf("json %s", out.String())
	}
	if !strings.HasPrefix(out.String(), `{"columns":["id","name"],"rows":[[1,"tea"],[2,"cake"]],"truncated":true,"ms":`) {
		t.Errorf("json %s", out.String())
	}

	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--db", db, "DELETE FROM products"}, 2, "refused: only one read-only statement is allowed; found DELETE"},
		{[]string{"--db", db, "SELECT 1; DROP TABLE products"}, 2, "refused: only one read-only statement is allowed"},
		{[]string{"--db", db, "SELECT * FROM nope"}, 1, "no such table"},
		{[]string{"--db", db, "--timeout", "200ms", "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"}, 1, "timeout"},
		{[]string{"--db", "postgres://postgres:hunter22@127.0.0.1:1/x?sslmode=disable", "SELECT 1"}, 1, "xxxxx"},
		{[]string{"--db", db}, 2, "usage: loom sql"},
		{[]string{"--db", db, "--max-rows", "0", "SELECT 1"}, 2, "must be positive"},
	} {
		err := run(ctx, append([]string{"sql"}, c.args...), &out)
		if err == nil {
			t.Errorf("%v: no error", c.args)
			continue
		}
		code, msg := exitStatus(err)
		if code != c.code || !strings.Contains(msg, c.msg) || strings.Contains(msg, "hunter22") || strings.Contains(msg, "\n") {
			t.Errorf("%v: exit %d %q, want %d with %q", c.args, code, msg, c.code, c.msg)
		}
	}
	// The file is as it was.
	out.Reset()
	if err := run(ctx, []string{"sql", "--db", db, "--json", "SELECT count(*) AS n FROM products"}, &out); err != nil || !strings.Contains(out.String(), `[[4]]`) {
		t.Errorf("after: %s %v", out.String(), err)
	}
}
