package schedule

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/loomkit/loom/server/servertest"
	"github.com/loomkit/loom/store"
	"github.com/loomkit/loom/store/storetest"
)

// TestFirstRunsAtOnce: a new API key's first runs, twenty at once, all
// plan on one schedule started from the sample; none fails on the
// schedule's creation.
func TestFirstRunsAtOnce(t *testing.T) {
	for name, db := range map[string]func(testing.TB) string{
		"sqlite":   func(t testing.TB) string { return filepath.Join(t.TempDir(), "loom.db") },
		"postgres": storetest.PostgresURL,
	} {
		t.Run(name, func(t *testing.T) {
			db := db(t)
			url := serve(t, db, "key-a")
			servertest.AtOnce(t, 20, func(i int) *http.Request {
				body, _ := json.Marshal(map[string]any{"model": "schedule", "thread_id": fmt.Sprint("first-", i),
					"messages": []map[string]string{{"role": "user", "content": "帮我安排下周的复习"}}})
				req, _ := http.NewRequest("POST", url+"/v1/chat/completions", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer key-a")
				return req
			})
			d, err := store.Open(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			var windows, events int
			q := `SELECT (SELECT count(*) FROM schedule_windows WHERE owner <> ?), (SELECT count(*) FROM schedule_events WHERE owner <> ?)`
			if err := d.SQL().QueryRowContext(context.Background(), d.Dialect().Rebind(q), DefaultOwner, DefaultOwner).Scan(&windows, &events); err != nil {
				t.Fatal(err)
			}
			if sample := Sample("x"); windows != 1 || events != len(sample.Events) {
				t.Errorf("key-a has %d windows and %d events, want 1 and %d", windows, events, len(sample.Events))
			}
		})
	}
}
