package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/loomkit/loom/store"
)

// TestPath: a SQLite database says its file.
func TestPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "loom.db")
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := db.Path(); got != path {
		t.Errorf("Path() = %q, want %q", got, path)
	}
}
