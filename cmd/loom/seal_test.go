package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A malformed LOOM_ENCRYPTION_KEYS stops serve at start, saying what is
// wrong without quoting the key.
func TestServeBadEncryptionKeys(t *testing.T) {
	t.Setenv("LOOM_DATABASE_URL", filepath.Join(t.TempDir(), "x.db"))
	t.Setenv("LOOM_API_KEYS", "")
	t.Setenv("LOOM_API_KEYS_FILE", "")
	short := base64.StdEncoding.EncodeToString([]byte("sixteen byte key"))
	t.Setenv("LOOM_ENCRYPTION_KEYS", "k1:"+short)
	err := run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "LOOM_ENCRYPTION_KEYS") || !strings.Contains(err.Error(), "16 bytes; want 32") {
		t.Fatalf("error %v, want one naming LOOM_ENCRYPTION_KEYS and the key's size", err)
	}
	if strings.Contains(err.Error(), short) {
		t.Fatalf("the error quotes the key: %v", err)
	}
}

// loom run with LOOM_ENCRYPTION_KEYS seals its checkpoints: the SQLite
// file and its log hold none of the thread's input; without the keys it
// cannot read the thread back.
func TestRunSealsCheckpoints(t *testing.T) {
	const secret = "quokka-marmot-2231"
	ctx := context.Background()
	for _, sealed := range []bool{false, true} {
		dir := t.TempDir()
		db := filepath.Join(dir, "loom.db")
		keys := ""
		if sealed {
			keys = "k1:" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
		}
		t.Setenv("LOOM_ENCRYPTION_KEYS", keys)
		var out bytes.Buffer
		if err := run(ctx, []string{"run", "demo", "-db", db, "-input", `{"title":"` + secret + `"}`}, &out); err != nil {
			t.Fatalf("run: %v\n%s", err, out.String())
		}
		var files []byte
		for _, p := range []string{db, db + "-wal"} {
			b, _ := os.ReadFile(p)
			files = append(files, b...)
		}
		if sealed == bytes.Contains(files, []byte(secret)) {
			t.Fatalf("sealed=%v: the database files hold the input: %v", sealed, !sealed)
		}
		if !sealed {
			continue
		}
		t.Setenv("LOOM_ENCRYPTION_KEYS", "")
		err := run(ctx, []string{"run", "demo", "-db", db, "-resume", `{"accept":true}`}, io.Discard)
		if err == nil {
			t.Fatal("resuming a sealed thread without the keys worked")
		}
	}
}
