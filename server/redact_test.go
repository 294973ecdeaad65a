package server_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/loomkit/loom/server"
)

// TestRedact: owner ids and temporary paths are taken out of text; what
// the client gave stays.
func TestRedact(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"checkpoint get key:4709ff7e735d9d04/b-own/01abc: not found", "checkpoint get b-own/01abc: not found"},
		{"thread key:4709ff7e735d9d04/alice holds runs", "thread alice holds runs"},
		{"owner key:4709ff7e735d9d04 has 3 threads", "owner an API key has 3 threads"},
		{"xmllint /tmp/loom-xsd-1234/wrap.xsd:3: parser error", "xmllint a temporary file:3: parser error"},
		{`open "/var/tmp/loom-sandbox-9/work/data_1.csv"`, `open "a temporary file"`},
		{"thread my-key:thing/1 is fine", "thread my-key:thing/1 is fine"},
		{"page 3 of 2", "page 3 of 2"},
	} {
		if got := server.Redact(c.in); got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	err := fmt.Errorf("record run 01x on thread key:0123456789abcdef/t1: open /var/lib/loom/loom.db: %w", errors.New("disk I/O error"))
	status, code, msg := server.PublicError(err)
	if status != 500 || code != "internal" || !strings.Contains(msg, server.ErrorID(err)) || strings.Contains(msg, "loom.db") || strings.Contains(msg, "key:") {
		t.Errorf("PublicError(%v) = %d %s %q", err, status, code, msg)
	}
	if server.ErrorID(err) != server.ErrorID(errors.New(err.Error())) || server.ErrorID(err) == server.ErrorID(errors.New("other")) {
		t.Error("ErrorID is not the same for the same text, or the same for another")
	}
}

// TestErrorsNameNoOwner: requests whose failure involves a thread's key
// (a checkpoint the thread does not have, to read, run from, copy or
// update from) answer without the owner id or any part of the key's hash.
func TestErrorsNameNoOwner(t *testing.T) {
	const key = "key-redact-0123456789"
	ts := startServer(t, server.Options{Keys: []string{key}})
	sum := sha256.Sum256([]byte(key))
	hash := hex.EncodeToString(sum[:8])
	tid := createThread(t, ts.URL, key)
	if st, b := call(t, "POST", ts.URL+"/threads/"+tid+"/runs/wait", key, map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "hi"}}); st != 200 {
		t.Fatalf("run: %d %s", st, b)
	}
	const bogus = "01ffffffffffffffffffffffff"
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/threads/" + tid + "/state/" + bogus, nil},
		{"POST", "/threads/" + tid + "/state/checkpoint", map[string]any{"checkpoint": map[string]any{"checkpoint_id": bogus}}},
		{"POST", "/threads/" + tid + "/state", map[string]any{"values": map[string]any{"text": "x"}, "checkpoint_id": bogus}},
		{"POST", "/threads/" + tid + "/copy", map[string]any{"checkpoint_id": bogus}},
		{"POST", "/threads/" + tid + "/runs", map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "x"}, "checkpoint_id": bogus}},
		{"POST", "/threads/" + tid + "/runs/wait", map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "x"}, "checkpoint": map[string]any{"checkpoint_id": bogus}}},
	} {
		st, b := call(t, c.method, ts.URL+c.path, key, c.body)
		if st < 400 || st >= 500 {
			t.Errorf("%s %s: %d %s, want a 4xx", c.method, c.path, st, b)
		}
		if s := string(b); strings.Contains(s, "key:") || strings.Contains(s, hash) || strings.Contains(s, hash[:8]) {
			t.Errorf("%s %s names the owner: %d %s", c.method, c.path, st, b)
		}
	}
}
