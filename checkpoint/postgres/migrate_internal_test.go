package postgres

import "testing"

// TestMigrationsNumbered checks that migration versions run 1, 2, … without
// gaps and that SchemaVersion is the last of them.
func TestMigrationsNumbered(t *testing.T) {
	for i, m := range migrations {
		if m.version != i+1 {
			t.Errorf("migration %d has version %d, want %d", i, m.version, i+1)
		}
		if m.name == "" || m.sql == "" {
			t.Errorf("migration %d: empty name or SQL", m.version)
		}
	}
	if last := migrations[len(migrations)-1].version; last != SchemaVersion {
		t.Errorf("SchemaVersion is %d, last migration %d", SchemaVersion, last)
	}
}
