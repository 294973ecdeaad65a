package server_test

import (
	"bytes"
	"database/sql"
	"testing"

	"github.com/loomkit/loom/seal"
	"github.com/loomkit/loom/seal/sealtest"
	"github.com/loomkit/loom/server"
)

// With Options.Codec the server's checkpoints and store items are sealed
// in its database, and its API reads them as before; without it they
// are in the clear (so the test can see a leak).
func TestServerSealsAtRest(t *testing.T) {
	const secret = "pangolin-tapir-4417"
	for _, codec := range []seal.Codec{nil, sealtest.Keys(t, "k1")} {
		ts := startServer(t, server.Options{Codec: codec})
		thread := createThread(t, ts.URL, "")
		st, b := call(t, "POST", ts.URL+"/threads/"+thread+"/runs/wait", "", map[string]any{"assistant_id": "echo", "input": map[string]any{"text": secret, "ask": true}})
		if st != 200 || !bytes.Contains(b, []byte(secret)) {
			t.Fatalf("run: %d %s", st, b)
		}
		st, b = call(t, "POST", ts.URL+"/threads/"+thread+"/runs/wait", "", map[string]any{"assistant_id": "echo", "command": map[string]any{"resume": map[string]bool{"accept": true}}})
		if st != 200 {
			t.Fatalf("resume: %d %s", st, b)
		}
		st, b = call(t, "PUT", ts.URL+"/store/items", "", map[string]any{"namespace": []string{"notes"}, "key": "k", "value": map[string]string{"text": secret}})
		if st/100 != 2 {
			t.Fatalf("store put: %d %s", st, b)
		}
		// The API reads both back.
		if st, b = call(t, "GET", ts.URL+"/threads/"+thread+"/state", "", nil); st != 200 || !bytes.Contains(b, []byte(secret)) {
			t.Fatalf("state: %d %s", st, b)
		}
		if st, b = call(t, "POST", ts.URL+"/store/items/search", "", map[string]any{"namespace_prefix": []string{"notes"}, "query": secret}); st != 200 || !bytes.Contains(b, []byte(secret)) {
			t.Fatalf("store search: %d %s", st, b)
		}
		ts.shutdown()
		stored := sealedColumns(t, ts.Path)
		if codec != nil && bytes.Contains(stored, []byte(secret)) {
			t.Fatal("sealed: the checkpoints or store items hold the secret")
		}
		if codec == nil && !bytes.Contains(stored, []byte(secret)) {
			t.Fatal("clear: the checkpoints and store items do not hold the secret: the test cannot see a leak")
		}
	}
}

// sealedColumns returns the checkpoints' states and metadata and the store
// items' values and index texts in the SQLite file at path.
func sealedColumns(t *testing.T, path string) []byte {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out []byte
	for _, q := range []string{`SELECT state || meta FROM checkpoints`, `SELECT value || body FROM loom_store_items`} {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var b []byte
			if err := rows.Scan(&b); err != nil {
				t.Fatal(err)
			}
			out = append(out, b...)
			n++
		}
		rows.Close()
		if n == 0 {
			t.Fatalf("%s: no rows", q)
		}
	}
	return out
}
