//go:build !cgo

package datasource

// checkPostgres, built without cgo, has no PostgreSQL parser: Postgres
// statements are read by the lexer only, and the engine's read-only
// transaction still holds.
func checkPostgres(string) error { return nil }
