package server

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/loomkit/loom/seal"
	"github.com/loomkit/loom/seal/sealtest"
	"github.com/loomkit/loom/store"
)

// What a run's record keeps of its input and options until the run ends
// is sealed with the server's codec, and a restarted server reads it back
// to run it again; without a codec it is in the clear (so the test can
// see a leak).
func TestRunRecordSealed(t *testing.T) {
	const secret = "okapi-quokka-2291"
	for _, codec := range []seal.Codec{nil, sealtest.Keys(t, "k1")} {
		ctx := t.Context()
		db, err := store.Open(ctx, filepath.Join(t.TempDir(), "loom.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		recs, err := openRecords(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		recs.codec = codec
		now := time.Now()
		r := &RunRecord{ID: "r1", Thread: "t1", Agent: "echo", Strategy: "enqueue", Created: now, Updated: now}
		if err := recs.acceptRun(ctx, r, jobSpec{Owner: "k", Config: json.RawMessage(`{"note":"` + secret + `"}`)}); err != nil {
			t.Fatal(err)
		}
		var job []byte
		if err := db.SQL().QueryRowContext(ctx, `SELECT job FROM loom_runs WHERE id = 'r1'`).Scan(&job); err != nil {
			t.Fatal(err)
		}
		if leaked := bytes.Contains(job, []byte(secret)); leaked != (codec == nil) {
			t.Errorf("codec %v: the record holds the secret in the clear: %v (%s)", codec != nil, leaked, job)
		}
		runs, err := recs.unfinishedRuns(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 1 || runs[0].why != "" || !bytes.Contains(runs[0].spec.Config, []byte(secret)) || runs[0].spec.Owner != "k" {
			t.Errorf("codec %v: unfinished runs %+v, want r1 with its spec read back", codec != nil, runs)
		}
	}
}
