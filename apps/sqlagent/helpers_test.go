package sqlagent_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// loadSQL runs a dump of statements on the database url names.
func loadSQL(t *testing.T, url, dump string) {
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
