package dataagent_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/datasource"
	"github.com/loomkit/loom/datasource/datasourcetest"
	"github.com/loomkit/loom/datasource/shop"

	"github.com/loomkit/loom/apps/dataagent"
	"github.com/loomkit/loom/store"
)

// TestUnreachableSource serves the analyst with a PostgreSQL source whose
// server is down beside the demo shop: the server starts, a question on
// the down source ends with "source sales is unavailable" (naming neither
// the host nor the password), a question on the shop is answered, and
// Ready names the source that is down.
func TestUnreachableSource(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	shopFile := filepath.Join(dir, "shop.db")
	if _, err := shop.Ensure(ctx, shopFile); err != nil {
		t.Fatal(err)
	}
	addr := datasourcetest.ClosedAddr(t)
	const secret = "pa55-w0rd-x"
	opts := dataagent.ServerOptions{Sources: []datasource.Config{
		{Name: "shop", URL: shopFile},
		{Name: "sales", URL: "postgres://reader:" + secret + "@" + addr + "/sales?sslmode=disable"},
	}}
	m := newModel(t)
	// The question on sales goes as far as reading its tables.
	m.decide(callIntent, map[string]any{"kind": "analysis"}).
		decide(callEnhance, map[string]any{"canonical_query": "top salesperson", "expanded_queries": []string{"sales by salesperson"}})
	// The question on the shop is answered with its SQL.
	m.decide(callIntent, map[string]any{"kind": "analysis"}).
		decide(callEnhance, map[string]any{"canonical_query": "how many customers", "expanded_queries": []string{"customer count"}}).
		decide(callFeasibility, map[string]any{"kind": "analysis", "reason": "customers holds it"}).
		decide(callSQL, map[string]any{"sql": "SELECT count(*) AS n FROM customers"}).
		decide(callConsistency, map[string]any{"consistent": true})
	l := serve(t, m, filepath.Join(dir, "loom.db"), opts)

	st := l.run("down-1", map[string]any{"question": "Who sold the most?", "source": "sales"}, nil)
	if st.Answer == nil || !st.Answer.Failed || !strings.Contains(st.Answer.Text, "Source sales is unavailable: connection refused") {
		t.Fatalf("answer on the down source: %+v", st.Answer)
	}
	for _, leak := range []string{secret, addr, "127.0.0.1", "reader"} {
		if strings.Contains(st.Answer.Text, leak) {
			t.Errorf("the answer shows %q: %s", leak, st.Answer.Text)
		}
	}
	st = l.run("up-1", map[string]any{"question": "How many customers?", "source": "shop", "nl2sql_only": true}, nil)
	if st.Answer == nil || st.Answer.Failed || len(st.Answer.Rows) != 1 {
		t.Fatalf("answer on the shop: %+v", st.Answer)
	}
	m.left()

	opts.Logger = slog.New(slog.DiscardHandler)
	a := dataagent.ServerAgent(opts)
	db, err := store.Open(ctx, filepath.Join(dir, "other.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := a.Build(ctx, db); err != nil {
		t.Fatalf("Build with a source down: %v", err)
	}
	err = a.Ready(ctx)
	if err == nil || !strings.Contains(err.Error(), "source sales is unavailable") || strings.Contains(err.Error(), "shop") ||
		strings.Contains(err.Error(), addr) || strings.Contains(err.Error(), secret) {
		t.Errorf("Ready = %v", err)
	}
}

// TestOwnDatabaseRefused gives the analyst the server's own database as a
// source: Build refuses it, saying why.
func TestOwnDatabaseRefused(t *testing.T) {
	ctx := context.Background()
	own := filepath.Join(t.TempDir(), "loom.db")
	db, err := store.Open(ctx, own)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a := dataagent.ServerAgent(dataagent.ServerOptions{Sources: []datasource.Config{{Name: "mine", URL: "sqlite://" + own}},
		Logger: slog.New(slog.DiscardHandler)})
	if _, err := a.Build(ctx, db); err == nil || !strings.Contains(err.Error(), "data source mine is Loom's own database") {
		t.Errorf("Build = %v, want it refused", err)
	}
}
