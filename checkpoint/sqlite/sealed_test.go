package sqlite_test

import (
	"os"
	"testing"

	"github.com/loomkit/loom/checkpoint/savertest"
)

// TestSealed runs savertest.RunSealed on a SQLite file, whose dump is the
// file with its write-ahead log and journal, as a copy of them would show.
func TestSealed(t *testing.T) {
	st := storage
	st.Dump = func(t *testing.T, path string) []byte {
		var all []byte
		for _, p := range []string{path, path + "-wal", path + "-journal"} {
			b, err := os.ReadFile(p)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			all = append(all, b...)
		}
		return all
	}
	savertest.RunSealed(t, st)
}
