package datasource

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Table describes a table or view. Tables lists them without Columns,
// keys and indexes; Describe and Schema fill those in.
type Table struct {
	Name string `json:"name"`
	// Kind is "table" or "view".
	Kind    string `json:"kind"`
	Comment string `json:"comment,omitempty"`
	// Rows is the number of rows, approximate where RowsEstimated says so
	// (the engine's statistics, or a count that stopped at
	// CountCap); -1 when unknown.
	Rows          int64        `json:"rows"`
	RowsEstimated bool         `json:"rows_estimated,omitempty"`
	Columns       []Column     `json:"columns,omitempty"`
	PrimaryKey    []string     `json:"primary_key,omitempty"`
	ForeignKeys   []ForeignKey `json:"foreign_keys,omitempty"`
	Indexes       []Index      `json:"indexes,omitempty"`
}

// Column is a column of a table.
type Column struct {
	Name     string  `json:"name"`
	Type     string  `json:"type"`
	Nullable bool    `json:"nullable"`
	Default  *string `json:"default,omitempty"`
	Comment  string  `json:"comment,omitempty"`
}

// ForeignKey is a foreign key of a table.
type ForeignKey struct {
	Columns    []string `json:"columns"`
	RefTable   string   `json:"ref_table"`
	RefColumns []string `json:"ref_columns"`
}

// Index is an index of a table.
type Index struct {
	Name    string   `json:"name"`
	Columns []string `json:"columns"`
	Unique  bool     `json:"unique"`
}

// CountCap is where a count of rows stops: a table with more rows is
// reported as CountCap rows, estimated.
const CountCap = 100_000

// ErrNoTable is what Describe and Sample return, wrapped, for a name that
// is no table or view of the source.
var ErrNoTable = errors.New("no such table")

// Tables lists the tables and views of the source (for Postgres, those in
// the search path) with approximate row counts.
func (s *Source) Tables(ctx context.Context) ([]Table, error) {
	ts, err := s.introspect(ctx, "", false)
	return ts, s.scrub(err)
}

// Schema describes every table and view of the source.
func (s *Source) Schema(ctx context.Context) ([]Table, error) {
	ts, err := s.introspect(ctx, "", true)
	return ts, s.scrub(err)
}

// Describe describes one table or view: columns, primary key, foreign
// keys, indexes and approximate row count.
func (s *Source) Describe(ctx context.Context, name string) (*Table, error) {
	ts, err := s.introspect(ctx, name, true)
	if err != nil {
		return nil, s.scrub(err)
	}
	if len(ts) == 0 {
		return nil, s.noTable(ctx, name)
	}
	return &ts[0], nil
}

// noTable returns ErrNoTable naming the tables there are.
func (s *Source) noTable(ctx context.Context, name string) error {
	ts, err := s.introspect(ctx, "", false)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrNoTable, name)
	}
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	return fmt.Errorf("%w: %s (the tables are: %s)", ErrNoTable, name, strings.Join(names, ", "))
}

// Sample returns up to n rows of a table (n is capped at the source's
// MaxRows), through the same guarded path as Query.
func (s *Source) Sample(ctx context.Context, table string, n int) (*Result, error) {
	ts, err := s.introspect(ctx, table, false)
	if err != nil {
		return nil, s.scrub(err)
	}
	if len(ts) == 0 {
		return nil, s.noTable(ctx, table)
	}
	n = min(max(n, 1), s.limits.MaxRows)
	return s.Query(ctx, fmt.Sprintf("SELECT * FROM %s LIMIT %d", s.quoteName(ts[0].Name), n))
}

// quoteName quotes a table name (schema.table on Postgres) for the
// dialect.
func (s *Source) quoteName(name string) string {
	q := func(p string) string { return `"` + strings.ReplaceAll(p, `"`, `""`) + `"` }
	switch s.dialect {
	case MySQL:
		return "`" + strings.ReplaceAll(name, "`", "``") + "`"
	case Postgres:
		if schema, table, ok := strings.Cut(name, "."); ok {
			return q(schema) + "." + q(table)
		}
	}
	return q(name)
}

// catalog queries the source's catalog. It runs the source's own fixed
// statements, not a user's, with the statement timeout as its bound.
func (s *Source) catalog(ctx context.Context, query string, args []any, scan func(*sql.Rows) error) error {
	db, err := s.conn(ctx)
	if err != nil {
		return err
	}
	qctx, cancel := context.WithTimeout(ctx, s.limits.Timeout)
	defer cancel()
	rows, err := db.QueryContext(qctx, query, args...)
	if err != nil {
		return s.scrub(s.lost(ctx, fmt.Errorf("read the catalog: %w", err)))
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return fmt.Errorf("read the catalog: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the catalog: %w", err)
	}
	return nil
}

// introspect lists the tables (only the one called name, when name is
// not empty), with their details when full.
func (s *Source) introspect(ctx context.Context, name string, full bool) ([]Table, error) {
	// Each dialect lists the tables, then adds the details to them; both
	// read only the table called name when it is set.
	list, details := s.liteTables, s.liteDetails
	switch s.dialect {
	case Postgres:
		list, details = s.pgTables, s.pgDetails
	case MySQL:
		list, details = s.myTables, s.myDetails
	}
	filter := dialectFilter[s.dialect]
	var args []any
	if name == "" {
		filter = ""
	} else {
		args = []any{name}
	}
	ts, err := list(ctx, filter, args)
	if err != nil {
		return nil, err
	}
	if err := s.countRows(ctx, ts); err != nil {
		return nil, err
	}
	if !full || len(ts) == 0 {
		return ts, nil
	}
	return ts, details(ctx, ts, index(ts), filter, args)
}

// dialectFilter is the condition that keeps one table, per dialect.
var dialectFilter = map[Dialect]string{
	Postgres: `AND (CASE WHEN n.nspname = current_schema() THEN c.relname ELSE n.nspname || '.' || c.relname END) = $1`,
	MySQL:    "AND TABLE_NAME = ?",
	SQLite:   "AND m.name = ?",
}

// addIndexColumn adds a column to the table's index called name, which
// starts when it is not the table's last.
func addIndexColumn(t *Table, name string, unique bool, col string) {
	if n := len(t.Indexes); n > 0 && t.Indexes[n-1].Name == name {
		t.Indexes[n-1].Columns = append(t.Indexes[n-1].Columns, col)
		return
	}
	t.Indexes = append(t.Indexes, Index{Name: name, Unique: unique, Columns: []string{col}})
}

// countRows counts the rows of the tables whose count is unknown, up to
// CountCap each.
func (s *Source) countRows(ctx context.Context, ts []Table) error {
	for i := range ts {
		if ts[i].Rows >= 0 || ts[i].Kind != "table" {
			continue
		}
		q := fmt.Sprintf("SELECT count(*) FROM (SELECT 1 FROM %s LIMIT %d) AS t", s.quoteName(ts[i].Name), CountCap+1)
		err := s.catalog(ctx, q, nil, func(r *sql.Rows) error { return r.Scan(&ts[i].Rows) })
		if err != nil {
			return err
		}
		if ts[i].Rows > CountCap {
			ts[i].Rows, ts[i].RowsEstimated = CountCap, true
		}
	}
	return nil
}

// index returns a function from table name to its position in ts.
func index(ts []Table) func(string) *Table {
	m := make(map[string]int, len(ts))
	for i, t := range ts {
		m[t.Name] = i
	}
	return func(n string) *Table {
		if i, ok := m[n]; ok {
			return &ts[i]
		}
		return nil
	}
}

const pgTables = `
SELECT CASE WHEN n.nspname = current_schema() THEN c.relname ELSE n.nspname || '.' || c.relname END,
       CASE WHEN c.relkind IN ('v', 'm') THEN 'view' ELSE 'table' END,
       coalesce(obj_description(c.oid, 'pg_class'), ''),
       c.reltuples::bigint
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'v', 'm', 'p', 'f') AND n.nspname = ANY (current_schemas(false)) AND NOT c.relispartition %s
ORDER BY 1`

const pgColumns = `
SELECT CASE WHEN n.nspname = current_schema() THEN c.relname ELSE n.nspname || '.' || c.relname END,
       a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull,
       pg_get_expr(d.adbin, d.adrelid), coalesce(col_description(a.attrelid, a.attnum), '')
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE a.attnum > 0 AND NOT a.attisdropped
  AND c.relkind IN ('r', 'v', 'm', 'p', 'f') AND n.nspname = ANY (current_schemas(false)) %s
ORDER BY a.attrelid, a.attnum`

const pgKeys = `
SELECT CASE WHEN n.nspname = current_schema() THEN c.relname ELSE n.nspname || '.' || c.relname END,
       con.contype::text,
       array_to_json(ARRAY(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY k(n, o)
                           JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.n ORDER BY k.o))::text,
       coalesce(CASE WHEN fn.nspname = current_schema() THEN fc.relname ELSE fn.nspname || '.' || fc.relname END, ''),
       coalesce(array_to_json(ARRAY(SELECT a.attname FROM unnest(con.confkey) WITH ORDINALITY k(n, o)
                           JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.n ORDER BY k.o))::text, '[]')
FROM pg_constraint con
JOIN pg_class c ON c.oid = con.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_class fc ON fc.oid = con.confrelid LEFT JOIN pg_namespace fn ON fn.oid = fc.relnamespace
WHERE con.contype IN ('p', 'f') AND n.nspname = ANY (current_schemas(false)) %s
ORDER BY 1, con.conname`

const pgIndexes = `
SELECT CASE WHEN n.nspname = current_schema() THEN c.relname ELSE n.nspname || '.' || c.relname END,
       ic.relname, i.indisunique,
       array_to_json(ARRAY(SELECT pg_get_indexdef(i.indexrelid, k, true) FROM generate_series(1, i.indnkeyatts) k ORDER BY k))::text
FROM pg_index i
JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = ANY (current_schemas(false)) %s
ORDER BY 1, 2`

func (s *Source) pgTables(ctx context.Context, filter string, args []any) ([]Table, error) {
	var ts []Table
	err := s.catalog(ctx, fmt.Sprintf(pgTables, filter), args, func(r *sql.Rows) error {
		var t Table
		if err := r.Scan(&t.Name, &t.Kind, &t.Comment, &t.Rows); err != nil {
			return err
		}
		t.RowsEstimated = t.Rows >= 0
		if t.Kind == "view" {
			t.Rows, t.RowsEstimated = -1, false
		}
		ts = append(ts, t)
		return nil
	})
	return ts, err
}

func (s *Source) pgDetails(ctx context.Context, ts []Table, find func(string) *Table, filter string, args []any) error {
	err := s.catalog(ctx, fmt.Sprintf(pgColumns, filter), args, func(r *sql.Rows) error {
		var tn string
		var c Column
		var def sql.NullString
		if err := r.Scan(&tn, &c.Name, &c.Type, &c.Nullable, &def, &c.Comment); err != nil {
			return err
		}
		if def.Valid {
			c.Default = &def.String
		}
		if t := find(tn); t != nil {
			t.Columns = append(t.Columns, c)
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = s.catalog(ctx, fmt.Sprintf(pgKeys, filter), args, func(r *sql.Rows) error {
		var tn, kind, cols, ref, refCols string
		if err := r.Scan(&tn, &kind, &cols, &ref, &refCols); err != nil {
			return err
		}
		t := find(tn)
		if t == nil {
			return nil
		}
		var fk ForeignKey
		if err := json.Unmarshal([]byte(cols), &fk.Columns); err != nil {
			return err
		}
		if kind == "p" {
			t.PrimaryKey = fk.Columns
			return nil
		}
		fk.RefTable = ref
		if err := json.Unmarshal([]byte(refCols), &fk.RefColumns); err != nil {
			return err
		}
		t.ForeignKeys = append(t.ForeignKeys, fk)
		return nil
	})
	if err != nil {
		return err
	}
	err = s.catalog(ctx, fmt.Sprintf(pgIndexes, filter), args, func(r *sql.Rows) error {
		var tn, cols string
		var ix Index
		if err := r.Scan(&tn, &ix.Name, &ix.Unique, &cols); err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(cols), &ix.Columns); err != nil {
			return err
		}
		if t := find(tn); t != nil {
			t.Indexes = append(t.Indexes, ix)
		}
		return nil
	})
	return err
}

func (s *Source) myTables(ctx context.Context, filter string, args []any) ([]Table, error) {
	var ts []Table
	err := s.catalog(ctx, `SELECT TABLE_NAME, TABLE_TYPE, TABLE_COMMENT, COALESCE(TABLE_ROWS, -1)
		FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() `+filter+` ORDER BY TABLE_NAME`, args,
		func(r *sql.Rows) error {
			var t Table
			if err := r.Scan(&t.Name, &t.Kind, &t.Comment, &t.Rows); err != nil {
				return err
			}
			if strings.Contains(strings.ToUpper(t.Kind), "VIEW") {
				t.Kind, t.Rows, t.Comment = "view", -1, ""
			} else {
				t.Kind = "table"
			}
			t.RowsEstimated = t.Rows >= 0
			ts = append(ts, t)
			return nil
		})
	return ts, err
}

func (s *Source) myDetails(ctx context.Context, ts []Table, find func(string) *Table, filter string, args []any) error {
	err := s.catalog(ctx, `SELECT TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE = 'YES', COLUMN_DEFAULT, COLUMN_COMMENT
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() `+filter+` ORDER BY TABLE_NAME, ORDINAL_POSITION`, args,
		func(r *sql.Rows) error {
			var tn string
			var c Column
			var def sql.NullString
			if err := r.Scan(&tn, &c.Name, &c.Type, &c.Nullable, &def, &c.Comment); err != nil {
				return err
			}
			if def.Valid && def.String != "NULL" {
				c.Default = &def.String
			}
			if t := find(tn); t != nil {
				t.Columns = append(t.Columns, c)
			}
			return nil
		})
	if err != nil {
		return err
	}
	type fkKey struct{ table, name string }
	fks := map[fkKey]*ForeignKey{}
	err = s.catalog(ctx, `SELECT TABLE_NAME, CONSTRAINT_NAME, COLUMN_NAME, COALESCE(REFERENCED_TABLE_NAME, ''), COALESCE(REFERENCED_COLUMN_NAME, '')
		FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = DATABASE() `+filter+` ORDER BY TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION`, args,
		func(r *sql.Rows) error {
			var tn, cn, col, ref, refCol string
			if err := r.Scan(&tn, &cn, &col, &ref, &refCol); err != nil {
				return err
			}
			t := find(tn)
			switch {
			case t == nil:
			case cn == "PRIMARY":
				t.PrimaryKey = append(t.PrimaryKey, col)
			case ref != "":
				fk := fks[fkKey{tn, cn}]
				if fk == nil {
					t.ForeignKeys = append(t.ForeignKeys, ForeignKey{RefTable: ref})
					fk = &t.ForeignKeys[len(t.ForeignKeys)-1]
					fks[fkKey{tn, cn}] = fk
				}
				fk.Columns = append(fk.Columns, col)
				fk.RefColumns = append(fk.RefColumns, refCol)
			}
			return nil
		})
	if err != nil {
		return err
	}
	return s.catalog(ctx, `SELECT TABLE_NAME, INDEX_NAME, NON_UNIQUE = 0, COLUMN_NAME
		FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() `+filter+` ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX`, args,
		func(r *sql.Rows) error {
			var tn, in, col string
			var unique bool
			if err := r.Scan(&tn, &in, &unique, &col); err != nil {
				return err
			}
			t := find(tn)
			if t == nil {
				return nil
			}
			addIndexColumn(t, in, unique, col)
			return nil
		})
}

// liteSchema selects the tables and views of a SQLite file as m.
const liteSchema = `FROM sqlite_schema m WHERE m.type IN ('table', 'view') AND m.name NOT LIKE 'sqlite\_%' ESCAPE '\' `

// liteJoin is liteSchema with m joined to a table-valued pragma.
func liteJoin(join string) string {
	return strings.Replace(liteSchema, "m WHERE", "m "+join+" WHERE", 1)
}

func (s *Source) liteTables(ctx context.Context, filter string, args []any) ([]Table, error) {
	var ts []Table
	err := s.catalog(ctx, `SELECT m.name, m.type `+liteSchema+filter+` ORDER BY m.name`, args, func(r *sql.Rows) error {
		t := Table{Rows: -1}
		if err := r.Scan(&t.Name, &t.Kind); err != nil {
			return err
		}
		ts = append(ts, t)
		return nil
	})
	return ts, err
}

func (s *Source) liteDetails(ctx context.Context, ts []Table, find func(string) *Table, filter string, args []any) error {
	err := s.catalog(ctx, `SELECT m.name, p.name, p.type, p."notnull", p.dflt_value, p.pk `+
		liteJoin("JOIN pragma_table_info(m.name) p")+filter+` ORDER BY m.name, p.cid`, args,
		func(r *sql.Rows) error {
			var tn string
			var c Column
			var notNull bool
			var def sql.NullString
			var pk int
			if err := r.Scan(&tn, &c.Name, &c.Type, &notNull, &def, &pk); err != nil {
				return err
			}
			c.Nullable = !notNull
			if def.Valid {
				c.Default = &def.String
			}
			if t := find(tn); t != nil {
				t.Columns = append(t.Columns, c)
				if pk > 0 {
					t.PrimaryKey = append(t.PrimaryKey, c.Name)
				}
			}
			return nil
		})
	if err != nil {
		return err
	}
	err = s.catalog(ctx, `SELECT m.name, f.id, f."table", f."from", coalesce(f."to", '') `+
		liteJoin("JOIN pragma_foreign_key_list(m.name) f")+filter+` ORDER BY m.name, f.id, f.seq`, args,
		func(r *sql.Rows) error {
			var tn, ref, from, to string
			var id int
			if err := r.Scan(&tn, &id, &ref, &from, &to); err != nil {
				return err
			}
			t := find(tn)
			if t == nil {
				return nil
			}
			if n := len(t.ForeignKeys); n > 0 && n-1 == id {
				fk := &t.ForeignKeys[n-1]
				fk.Columns, fk.RefColumns = append(fk.Columns, from), append(fk.RefColumns, to)
			} else {
				t.ForeignKeys = append(t.ForeignKeys, ForeignKey{Columns: []string{from}, RefTable: ref, RefColumns: []string{to}})
			}
			return nil
		})
	if err != nil {
		return err
	}
	err = s.catalog(ctx, `SELECT m.name, l.name, l."unique", i.name `+
		liteJoin("JOIN pragma_index_list(m.name) l JOIN pragma_index_info(l.name) i")+filter+` ORDER BY m.name, l.name, i.seqno`, args,
		func(r *sql.Rows) error {
			var tn, in string
			var col sql.NullString
			var unique bool
			if err := r.Scan(&tn, &in, &unique, &col); err != nil {
				return err
			}
			t := find(tn)
			if t == nil {
				return nil
			}
			addIndexColumn(t, in, unique, col.String)
			return nil
		})
	for i := range ts {
		// A column that is the table's only primary key and declared
		// INTEGER is the rowid: it is never null, though the catalog
		// does not say NOT NULL.
		if t := &ts[i]; t.Kind == "table" && len(t.PrimaryKey) == 1 {
			for j := range t.Columns {
				if c := &t.Columns[j]; c.Name == t.PrimaryKey[0] && strings.EqualFold(strings.TrimSpace(c.Type), "INTEGER") {
					c.Nullable = false
				}
			}
		}
		// A foreign key to the referenced table's primary key leaves "to"
		// empty; fill it in when that table is known.
		for j := range ts[i].ForeignKeys {
			fk := &ts[i].ForeignKeys[j]
			if ref := find(fk.RefTable); ref != nil && slices.Contains(fk.RefColumns, "") && len(ref.PrimaryKey) == len(fk.Columns) {
				fk.RefColumns = slices.Clone(ref.PrimaryKey)
			}
		}
	}
	return err
}
