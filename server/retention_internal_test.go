package server

import (
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/loomkit/loom/store/storetest"
)

// A sweep's statements each get the arguments they take: on PostgreSQL a
// statement given one it does not take fails ("mismatched param and
// argument count"), and the sweep left its orphan rows behind.
func TestSweepRunsEveryStatement(t *testing.T) {
	for name, db := range map[string]func(t testing.TB) string{
		"sqlite":   func(t testing.TB) string { return filepath.Join(t.TempDir(), "loom.db") },
		"postgres": storetest.PostgresURL,
	} {
		t.Run(name, func(t *testing.T) {
			s, err := New(t.Context(), Options{Database: db(t), Agents: nothingAgents(t), Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.sweep(t.Context(), time.Time{}); err != nil {
				t.Fatalf("sweep: %v", err)
			}
		})
	}
}
