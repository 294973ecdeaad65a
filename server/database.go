package server

import (
	"fmt"
	"net/url"
	"strings"
)

// SQLitePath returns the SQLite file that a database URL names: a plain
// path ("loom.db", "/var/lib/loom.db"), "sqlite:///abs/path.db",
// "sqlite://rel/path.db" or "file:path.db". An empty URL gives "loom.db".
// Postgres ("postgres://", "postgresql://") and other schemes give an
// error wrapping ErrUnsupportedDatabase.
func SQLitePath(dbURL string) (string, error) {
	if dbURL == "" {
		return "loom.db", nil
	}
	scheme, rest, ok := strings.Cut(dbURL, ":")
	if !ok || strings.ContainsAny(scheme, `/\.`) || len(scheme) < 2 {
		return dbURL, nil // a plain path (a one-letter "scheme" is a Windows drive)
	}
	switch strings.ToLower(scheme) {
	case "sqlite", "sqlite3", "file":
		path := strings.TrimPrefix(rest, "//")
		if u, err := url.PathUnescape(path); err == nil {
			path = u
		}
		if path == "" || strings.Contains(path, "?") {
			return "", fmt.Errorf("database URL %q: want sqlite:///path/to/file.db with no query", dbURL)
		}
		return path, nil
	case "postgres", "postgresql":
		return "", fmt.Errorf("database URL %s…: Postgres is not supported by this build yet; use a SQLite file (sqlite:///path or a plain path): %w", scheme+"://", ErrUnsupportedDatabase)
	}
	return "", fmt.Errorf("database URL scheme %q: %w (want sqlite:///path or a plain path)", scheme, ErrUnsupportedDatabase)
}
