// Package sealtest gives tests keyrings with fixed keys, so that what one
// test seals another keyring with the same key id opens.
package sealtest

import (
	"bytes"
	"testing"

	"github.com/loomkit/loom/seal"
)

// Keys returns a keyring of the key ids given ("k2", "k1": k2 seals),
// each key its id's last byte repeated: the same id gives the same key in
// every keyring.
func Keys(t testing.TB, ids ...string) *seal.Keyring {
	t.Helper()
	keys := make([]seal.Key, len(ids))
	for i, id := range ids {
		keys[i] = seal.Key{ID: id, Secret: bytes.Repeat([]byte{id[len(id)-1]}, seal.KeySize)}
	}
	k, err := seal.NewKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
