package dataagent

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/loomkit/loom/datasource"
)

// TestSchemaChangeWhileServing: the analyst's schema recall sees a table
// created after the TTL, and a table renamed as soon as a recalled table
// turns out to be gone (table_relation) or a query fails on it
// (sql_execute), without a restart.
func TestSchemaChangeWhileServing(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sales.db")
	w, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	exec := func(stmt string) {
		t.Helper()
		if _, err := w.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	exec("CREATE TABLE sales (id INTEGER PRIMARY KEY, region TEXT NOT NULL, amount REAL NOT NULL); INSERT INTO sales VALUES (1, 'north', 10), (2, 'south', 20)")
	src, err := datasource.Open(ctx, path, datasource.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sr := &schemaRecall{sources: map[string]*datasource.Source{"shop": src}, log: slog.New(slog.DiscardHandler),
		bases: map[string]*schemaBase{}, cache: newCache[*schemaIndex](), now: func() time.Time { return clock }}
	names := func(q string) []string {
		t.Helper()
		tables, _, err := sr.Recall(ctx, "shop", []string{q}, DefaultSchemaBudget)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tb := range tables {
			out = append(out, tb.Name)
		}
		return out
	}
	if got := names("sales by region"); !slices.Contains(got, "sales") {
		t.Fatalf("recalled %q, want sales", got)
	}

	// A table created while serving is seen once the TTL has passed.
	exec("CREATE TABLE targets (id INTEGER PRIMARY KEY, region TEXT NOT NULL, target REAL NOT NULL); INSERT INTO targets VALUES (1, 'north', 15)")
	clock = clock.Add(SchemaTTL + time.Second)
	if got := names("targets by region"); !slices.Contains(got, "targets") {
		t.Errorf("after CREATE TABLE and the TTL: recalled %q, want targets", got)
	}

	// A table renamed: table_relation finds the recalled table gone,
	// reads the tables again and goes on with the new name.
	exec("ALTER TABLE sales RENAME TO sales_old")
	a := New(Config{Sources: []Source{{Name: "shop", Source: src}}, Schema: sr})
	st, err := a.tableRelation(ctx, State{Query: "sales by region", Tables: []datasource.Table{{Name: "sales"}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tb := range st.Tables {
		got = append(got, tb.Name)
	}
	if st.RelationError != "" || st.Answer != nil || !slices.Contains(got, "sales_old") || slices.Contains(got, "sales") {
		t.Errorf("after RENAME: error %q, tables %q, answer %+v; want sales_old described", st.RelationError, got, st.Answer)
	}

	// A query on a column that is gone: the retry sees the tables afresh.
	exec("ALTER TABLE targets RENAME COLUMN target TO goal")
	st, err = a.sqlExecute(ctx, State{Query: "targets by region", SQL: "SELECT region, target FROM targets",
		Plan: &Plan{Steps: []Step{{Tool: "sql", Instruction: "targets"}}}})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tb := range st.Tables {
		for _, c := range tb.Columns {
			found = found || (tb.Name == "targets" && c.Name == "goal")
		}
	}
	if st.ran() || !found {
		t.Errorf("after RENAME COLUMN: ran %v, tables %+v; want targets.goal recalled for the retry (%s)", st.ran(), st.Tables, st.RetryReason)
	}

	if !schemaError(errors.New(`ERROR: relation "sales" does not exist (SQLSTATE 42P01)`)) || !schemaError(errors.New("Error 1146 (42S02): Table 'shop.sales' doesn't exist")) ||
		!schemaError(errors.New("Error 1054 (42S22): Unknown column 'x' in 'field list'")) || schemaError(errors.New("division by zero")) {
		t.Error("schemaError does not tell schema errors apart")
	}
}
