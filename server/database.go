package server

import (
	"fmt"

	"github.com/loomkit/loom/store"
)

// SQLitePath returns the SQLite file that a database URL names: a plain
// path ("loom.db", "/var/lib/loom.db"), "sqlite:///abs/path.db",
// "sqlite://rel/path.db" or "file:path.db". An empty URL gives "loom.db".
// A Postgres URL names no file: it gives an error wrapping
// ErrUnsupportedDatabase, as do other schemes. See store.Resolve, which
// the server opens its database with.
func SQLitePath(dbURL string) (string, error) {
	d, path, err := store.Resolve(dbURL)
	switch {
	case err != nil:
		return "", fmt.Errorf("%w: %w", err, ErrUnsupportedDatabase)
	case d != store.SQLite:
		return "", fmt.Errorf("database URL %s://…: a %s database, not a SQLite file: %w", d, d, ErrUnsupportedDatabase)
	}
	return path, nil
}
