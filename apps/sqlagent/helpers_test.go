package sqlagent_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/loomkit/loom/datasource/datasourcetest"
)

// loadPostgres runs a dump of statements on the database url names.
func loadPostgres(t *testing.T, url, dump string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, dump); err != nil {
		t.Fatalf("load: %v", err)
	}
}

// mysqlDatabase creates a database of the test's own on the test MySQL
// server (see datasourcetest), runs dump in it, and returns its URL.
func mysqlDatabase(t *testing.T, dump string) string {
	t.Helper()
	url, db := datasourcetest.Database(t)
	if _, err := db.Exec(dump); err != nil {
		t.Fatalf("load: %v", err)
	}
	return url
}
