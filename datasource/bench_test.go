package datasource

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkGuard is the parse and verdict of one typical statement.
func BenchmarkGuard(b *testing.B) {
	const stmt = `SELECT c.name, count(o.id) AS orders, sum(o.total) AS spent
FROM customers c JOIN orders o ON o.customer_id = c.id
WHERE o.created_at >= '2024-01-01' AND c.country = 'DE' -- recent ones
GROUP BY c.name ORDER BY spent DESC LIMIT 10`
	for _, d := range []Dialect{SQLite, Postgres, MySQL} {
		b.Run(string(d), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Check(d, stmt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDescribe100 introspects a schema of 100 tables of 8 columns,
// each with a primary key, a foreign key and an index.
func BenchmarkDescribe100(b *testing.B) {
	ctx := context.Background()
	for _, e := range []engine{sqliteEngine(b), postgresEngine(b)} {
		for i := range 100 {
			ref := "customers (id)"
			if i > 0 {
				ref = fmt.Sprintf("t%03d (id)", i-1)
			}
			stmts := []string{
				fmt.Sprintf(`CREATE TABLE t%03d (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES %s, name VARCHAR(50) NOT NULL,
					amount DECIMAL(10,2), created TIMESTAMP, flag BOOLEAN, note TEXT, code VARCHAR(10) DEFAULT 'x')`, i, ref),
				fmt.Sprintf("CREATE INDEX t%03d_name ON t%03d (name)", i, i),
			}
			for _, s := range stmts {
				if _, err := e.admin.Exec(s); err != nil {
					b.Fatal(err)
				}
			}
		}
		if e.dialect == Postgres {
			if _, err := e.admin.Exec("ANALYZE"); err != nil {
				b.Fatal(err)
			}
		}
		s := e.open(b, Limits{})
		b.Run(string(e.dialect), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ts, err := s.Schema(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if len(ts) != 103 || len(ts[50].Columns) != 8 {
					b.Fatalf("%d tables", len(ts))
				}
			}
		})
	}
}

// BenchmarkQuery10kRows streams 10,000 rows of four columns through the
// row and byte caps; it reports allocations and bytes per row.
func BenchmarkQuery10kRows(b *testing.B) {
	ctx := context.Background()
	stmts := map[Dialect]string{
		SQLite:   "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000) SELECT i, 'name ' || i, i * 1.5, i % 2 = 0 FROM n",
		Postgres: "SELECT i, 'name ' || i, i * 1.5, i % 2 = 0 FROM generate_series(1, 10000) i",
		MySQL:    "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 99) SELECT a.i * 100 + b.i AS i, concat('name ', a.i * 100 + b.i), (a.i * 100 + b.i) * 1.5, b.i % 2 = 0 FROM n a, n b",
	}
	for _, e := range engines(b) {
		s := e.open(b, Limits{MaxRows: 10_000})
		b.Run(string(e.dialect), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := s.Query(ctx, stmts[e.dialect])
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Rows) != 10_000 || res.Truncated {
					b.Fatalf("%d rows, truncated %v", len(res.Rows), res.Truncated)
				}
			}
		})
	}
}
