package datasource

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/loomkit/loom/datasource/datasourcetest"
	"github.com/loomkit/loom/store/storetest"
)

// engine is a database of the test's own on one engine.
type engine struct {
	dialect Dialect
	url     string  // what Open takes
	admin   *sql.DB // a writable connection, for setting up
	// roURL is the database as a least-privilege account sees it: one
	// that may only read the tables (as the README shows how to create);
	// the same file for SQLite.
	roURL string
}

// engines returns a fresh database on each engine, with the fixture
// tables created: SQLite in a temporary file, a schema of its own on the
// test Postgres server, a database of its own on the test MySQL server.
func engines(t testing.TB) []engine {
	return []engine{sqliteEngine(t), postgresEngine(t), mysqlEngine(t)}
}

func sqliteEngine(t testing.TB) engine {
	path := filepath.Join(t.TempDir(), "test.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e := engine{SQLite, path, db, path}
	e.setup(t)
	return e
}

func postgresEngine(t testing.TB) engine {
	u := storetest.PostgresURL(t)
	db, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e := engine{dialect: Postgres, url: u, admin: db}
	e.setup(t)
	// The least-privilege role of the README: it may log in, use the
	// schema and read its tables, and nothing else.
	var schema string
	if err := db.QueryRow("SELECT current_schema()").Scan(&schema); err != nil {
		t.Fatal(err)
	}
	role := "loomro_" + strings.TrimPrefix(schema, "loomtest_")
	for _, stmt := range []string{
		"CREATE ROLE " + role + " LOGIN",
		"GRANT USAGE ON SCHEMA " + schema + " TO " + role,
		"GRANT SELECT ON ALL TABLES IN SCHEMA " + schema + " TO " + role,
		"ALTER ROLE " + role + " SET default_transaction_read_only = on",
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	t.Cleanup(func() {
		for _, stmt := range []string{"DROP OWNED BY " + role, "DROP ROLE " + role} {
			if _, err := db.Exec(stmt); err != nil {
				t.Errorf("%s: %v", stmt, err)
			}
		}
	})
	ru, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	ru.User = url.User(role)
	e.roURL = ru.String()
	return e
}

func mysqlEngine(t testing.TB) engine {
	u, db := datasourcetest.Database(t)
	name := strings.TrimPrefix(u[strings.LastIndex(u, "/"):], "/")
	e := engine{dialect: MySQL, url: u, admin: db}
	e.setup(t)
	// The least-privilege account of the README: SELECT and SHOW VIEW on
	// this database only.
	user := "loomro_" + strings.TrimPrefix(name, "loomtest_")
	var pw [8]byte
	rand.Read(pw[:])
	pass := hex.EncodeToString(pw[:])
	for _, stmt := range []string{
		"CREATE USER '" + user + "'@'%' IDENTIFIED BY '" + pass + "'",
		"GRANT SELECT, SHOW VIEW ON " + name + ".* TO '" + user + "'@'%'",
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	t.Cleanup(func() {
		if _, err := db.Exec("DROP USER '" + user + "'@'%'"); err != nil {
			t.Errorf("drop user: %v", err)
		}
	})
	ru, _ := url.Parse(u)
	ru.User = url.UserPassword(user, pass)
	e.roURL = ru.String()
	return e
}

// fixture is the test tables, in SQL every engine takes once BLOB and
// the blob literal are put in.
const fixture = `
CREATE TABLE customers (id INTEGER PRIMARY KEY, name VARCHAR(100) NOT NULL, email VARCHAR(200) DEFAULT 'none',
  created_at TIMESTAMP NULL, score DOUBLE PRECISION, avatar BLOB);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL, total DECIMAL(10,2), paid BOOLEAN, note TEXT,
  FOREIGN KEY (customer_id) REFERENCES customers (id));
CREATE INDEX orders_customer ON orders (customer_id);
CREATE VIEW big_orders AS SELECT * FROM orders WHERE total > 100;
INSERT INTO customers VALUES (1, 'Ada', 'ada@example.com', '2024-01-02 03:04:05', 7.5, X'0001FF');
INSERT INTO customers VALUES (2, 'Bob', NULL, NULL, 3, NULL);
INSERT INTO customers VALUES (3, 'Cy', 'cy@example.com', '2024-02-03 04:05:06', 9.25, NULL);
INSERT INTO orders VALUES (1, 1, 12.50, TRUE, 'first');
INSERT INTO orders VALUES (2, 1, 250.00, FALSE, NULL);
INSERT INTO orders VALUES (3, 2, 99.99, TRUE, 'it''s');
INSERT INTO orders VALUES (4, 3, 5.00, TRUE, '多语言');
`

func (e engine) setup(t testing.TB) {
	t.Helper()
	sqlText := fixture
	if e.dialect == Postgres {
		sqlText = strings.NewReplacer("BLOB", "BYTEA", "X'0001FF'", `'\x0001ff'`).Replace(sqlText)
	}
	for _, stmt := range strings.Split(sqlText, ";") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if _, err := e.admin.Exec(stmt); err != nil {
			t.Fatalf("%s: fixture: %v\n%s", e.dialect, err, stmt)
		}
	}
}

// open opens the engine's database as a Source.
func (e engine) open(t testing.TB, l Limits) *Source {
	t.Helper()
	s, err := Open(context.Background(), e.url, l)
	if err != nil {
		t.Fatalf("%s: open: %v", e.dialect, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
