package datasource

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestIntrospection(t *testing.T) {
	ctx := context.Background()
	for _, e := range engines(t) {
		t.Run(string(e.dialect), func(t *testing.T) {
			s := e.open(t, Limits{})
			ts, err := s.Tables(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tb := range ts {
				names = append(names, tb.Name+":"+tb.Kind)
			}
			if got := strings.Join(names, ","); got != "big_orders:view,customers:table,orders:table" {
				t.Fatalf("tables %s", got)
			}
			if ts[1].Rows < 0 {
				t.Errorf("customers rows %d, want a count", ts[1].Rows)
			}
			o, err := s.Describe(ctx, "orders")
			if err != nil {
				t.Fatal(err)
			}
			if len(o.Columns) != 5 || o.Columns[0].Name != "id" || o.Columns[1].Nullable || !o.Columns[2].Nullable {
				t.Errorf("orders columns %+v", o.Columns)
			}
			if strings.Join(o.PrimaryKey, ",") != "id" {
				t.Errorf("orders primary key %v", o.PrimaryKey)
			}
			if len(o.ForeignKeys) != 1 || o.ForeignKeys[0].RefTable != "customers" ||
				strings.Join(o.ForeignKeys[0].Columns, ",") != "customer_id" || strings.Join(o.ForeignKeys[0].RefColumns, ",") != "id" {
				t.Errorf("orders foreign keys %+v", o.ForeignKeys)
			}
			found := false
			for _, ix := range o.Indexes {
				found = found || (ix.Name == "orders_customer" && strings.Join(ix.Columns, ",") == "customer_id" && !ix.Unique)
			}
			if !found {
				t.Errorf("orders indexes %+v, want orders_customer (customer_id)", o.Indexes)
			}
			c, err := s.Describe(ctx, "customers")
			if err != nil {
				t.Fatal(err)
			}
			if c.Columns[2].Default == nil || !strings.Contains(*c.Columns[2].Default, "none") {
				t.Errorf("customers.email default %v", c.Columns[2].Default)
			}
			if _, err := s.Describe(ctx, "nope"); !errors.Is(err, ErrNoTable) || !strings.Contains(err.Error(), "customers") {
				t.Errorf("describe nope: %v, want ErrNoTable listing the tables", err)
			}
			all, err := s.Schema(ctx)
			if err != nil || len(all) != 3 || len(all[2].Columns) != 5 {
				t.Errorf("schema: %d tables, %v", len(all), err)
			}
		})
	}
}

func TestQueryTypes(t *testing.T) {
	ctx := context.Background()
	for _, e := range engines(t) {
		t.Run(string(e.dialect), func(t *testing.T) {
			s := e.open(t, Limits{})
			res, err := s.Query(ctx, "SELECT id, name, created_at, score, avatar FROM customers ORDER BY id")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(res.Rows)
			want := `[[1,"Ada","2024-01-02 03:04:05",7.5,"AAH/"],[2,"Bob",null,3,null],[3,"Cy","2024-02-03 04:05:06",9.25,null]]`
			if string(b) != want {
				t.Errorf("rows\n got %s\nwant %s", b, want)
			}
			res, err = s.Query(ctx, "SELECT total, note FROM orders ORDER BY id")
			if err != nil {
				t.Fatal(err)
			}
			b, _ = json.Marshal(res.Rows)
			if want := `[[12.5`; !strings.HasPrefix(string(b), want) && !strings.HasPrefix(string(b), `[[12.50`) {
				t.Errorf("decimals %s, want numbers", b)
			}
			if !strings.Contains(string(b), `"多语言"`) || !strings.Contains(string(b), `"it's"`) {
				t.Errorf("text %s", b)
			}
			if res.Truncated || res.MS < 0 || strings.Join(res.Columns, ",") != "total,note" {
				t.Errorf("result %+v", res)
			}
			// Integers past int64 stay numbers (SQLite has none: it makes
			// them floats).
			if e.dialect == SQLite {
				return
			}
			res, err = s.Query(ctx, "SELECT 18446744073709551615 AS u")
			if b, _ := json.Marshal(res); err != nil || !strings.Contains(string(b), `[[18446744073709551615]]`) {
				t.Errorf("a large integer: %s %v", b, err)
			}
		})
	}
}

// TestDatesAsDates: a date is written as a date and a time without a
// zone as the database shows it, not as an instant in UTC; a time with a
// zone keeps it.
func TestDatesAsDates(t *testing.T) {
	ctx := context.Background()
	for _, e := range engines(t) {
		t.Run(string(e.dialect), func(t *testing.T) {
			stmts := []string{
				"CREATE TABLE events (id INTEGER PRIMARY KEY, day DATE, at DATETIME)",
				"INSERT INTO events VALUES (1, '2020-03-01', '2020-03-01 12:00:00')",
			}
			want := `[[1,"2020-03-01","2020-03-01 12:00:00"]]`
			if e.dialect == Postgres {
				stmts = []string{
					"CREATE TABLE events (id INTEGER PRIMARY KEY, day DATE, at TIMESTAMP, at_zone TIMESTAMPTZ)",
					"INSERT INTO events VALUES (1, '2020-03-01', '2020-03-01 12:00:00', '2020-03-01 12:00:00+00')",
				}
				want = `[[1,"2020-03-01","2020-03-01 12:00:00","2020-03-01T12:00:00Z"]]`
			}
			for _, stmt := range stmts {
				if _, err := e.admin.Exec(stmt); err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}
			s := e.open(t, Limits{})
			res, err := s.Query(ctx, "SELECT * FROM events")
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := json.Marshal(res.Rows); string(b) != want {
				t.Errorf("rows\n got %s\nwant %s", b, want)
			}
		})
	}
}

// TestRowidNotNullable: SQLite's INTEGER PRIMARY KEY is the rowid, which
// is never null; a primary key of another type may be (SQLite's quirk).
func TestRowidNotNullable(t *testing.T) {
	e := sqliteEngine(t)
	if _, err := e.admin.Exec("CREATE TABLE tags (id INTEGER PRIMARY KEY, name TEXT); CREATE TABLE codes (code TEXT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	s := e.open(t, Limits{})
	for name, nullable := range map[string]bool{"tags": false, "codes": true, "customers": false} {
		tb, err := s.Describe(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		if tb.Columns[0].Nullable != nullable {
			t.Errorf("%s.%s nullable %v, want %v", name, tb.Columns[0].Name, tb.Columns[0].Nullable, nullable)
		}
	}
}

func TestSampleAndCaps(t *testing.T) {
	ctx := context.Background()
	for _, e := range engines(t) {
		t.Run(string(e.dialect), func(t *testing.T) {
			s := e.open(t, Limits{MaxRows: 2})
			res, err := s.Sample(ctx, "orders", 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Rows) != 2 {
				t.Errorf("sample of 10 with MaxRows 2 gave %d rows", len(res.Rows))
			}
			res, err = s.Query(ctx, "SELECT * FROM orders")
			if err != nil || len(res.Rows) != 2 || !res.Truncated {
				t.Errorf("4 rows under MaxRows 2: %+v, %v; want 2 rows, truncated", res, err)
			}
			res, err = s.QueryLimits(ctx, "SELECT name FROM customers", Limits{MaxRows: 100, MaxBytes: 4})
			if err != nil || len(res.Rows) != 1 || !res.Truncated {
				t.Errorf("MaxBytes 4: %+v, %v; want 1 row, truncated", res, err)
			}
			if _, err := s.Sample(ctx, "orders; DROP TABLE orders", 1); !errors.Is(err, ErrNoTable) {
				t.Errorf("sample of a made-up table: %v", err)
			}
			plan, err := s.Explain(ctx, "SELECT * FROM orders WHERE customer_id = 1")
			if err != nil || len(plan.Rows) == 0 {
				t.Errorf("explain: %+v, %v", plan, err)
			}
			if _, err := s.Explain(ctx, "DELETE FROM orders"); !errors.Is(err, ErrRefused) {
				t.Errorf("explain delete: %v, want a refusal", err)
			}
		})
	}
}

// TestTimeout runs a cross-join bomb: it stops at the timeout with
// ErrTimeout.
func TestTimeout(t *testing.T) {
	ctx := context.Background()
	bomb := map[Dialect]string{
		SQLite:   "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000) SELECT count(*) FROM n a, n b, n c",
		Postgres: "SELECT count(*) FROM generate_series(1, 100000) a, generate_series(1, 100000) b",
		MySQL:    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000) SELECT count(*) FROM n a, n b, n c",
	}
	for _, e := range engines(t) {
		t.Run(string(e.dialect), func(t *testing.T) {
			s := e.open(t, Limits{Timeout: 300 * time.Millisecond})
			_, err := s.Query(ctx, bomb[e.dialect])
			if !errors.Is(err, ErrTimeout) {
				t.Fatalf("cross-join bomb: %v, want ErrTimeout", err)
			}
			// The source still works afterwards.
			if res, err := s.Query(ctx, "SELECT count(*) FROM orders"); err != nil || len(res.Rows) != 1 {
				t.Errorf("after the timeout: %+v, %v", res, err)
			}
		})
	}
}

// TestHugeResultStopsAtTheCap streams ten million rows into a cap of
// 1000: the result is truncated and the statement is stopped.
func TestHugeResultStopsAtTheCap(t *testing.T) {
	ctx := context.Background()
	huge := map[Dialect]string{
		SQLite: "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000000) SELECT i FROM n",
		// Two small series joined stream their 10,000,000 rows (one series
		// of that size would be materialised first).
		Postgres: "SELECT a * 10000 + b AS i FROM generate_series(0, 999) a, generate_series(1, 10000) b",
		// MariaDB stops recursion at 1000 iterations: 1000 × 100 × 100.
		MySQL: "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 1000), h(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM h WHERE i < 100) SELECT a.i, b.i, c.i FROM k a, h b, h c",
	}
	for _, e := range engines(t) {
		t.Run(string(e.dialect), func(t *testing.T) {
			s := e.open(t, Limits{Timeout: 20 * time.Second})
			res, err := s.Query(ctx, huge[e.dialect])
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Rows) != DefaultMaxRows || !res.Truncated {
				t.Errorf("%d rows, truncated %v; want %d, true", len(res.Rows), res.Truncated, DefaultMaxRows)
			}
			if res, err := s.Query(ctx, "SELECT 1"); err != nil || len(res.Rows) != 1 {
				t.Errorf("after the cap: %+v, %v", res, err)
			}
		})
	}
}

// TestCredentialsNeverShown opens sources with a password that is wrong
// and checks no error or string carries it.
func TestCredentialsNeverShown(t *testing.T) {
	ctx := context.Background()
	const secret = "s3cr3t-pa55"
	for _, raw := range []string{
		"postgres://postgres:" + secret + "@127.0.0.1:1/test?sslmode=disable",
		"mysql://root:" + secret + "@127.0.0.1:1/test",
		"postgres://postgres@127.0.0.1:1/test?sslmode=disable&password=" + secret,
	} {
		s, err := Open(ctx, raw, Limits{})
		if err == nil {
			s.Close()
			t.Fatalf("%s opened", Redact(raw))
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error shows the password: %v", err)
		}
		if r := Redact(raw); strings.Contains(r, secret) || !strings.Contains(r, "xxxxx") {
			t.Errorf("Redact = %s", r)
		}
	}
	for _, e := range engines(t)[1:] {
		s := e.open(t, Limits{})
		if strings.Contains(s.String(), secret) {
			t.Errorf("String = %s", s)
		}
	}
	if _, err := Open(ctx, "ftp://x", Limits{}); err == nil || !strings.Contains(err.Error(), "unknown scheme") {
		t.Errorf("ftp: %v", err)
	}
	if _, err := Open(ctx, "/no/such/file.db", Limits{}); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
}
