package postgres_test

import (
	"testing"

	"github.com/loomkit/loom/checkpoint/savertest"
)

// TestSealed runs savertest.RunSealed on a fresh schema, whose dump is
// every column of every checkpoint row.
func TestSealed(t *testing.T) {
	st := storage
	st.Dump = func(t *testing.T, u string) []byte {
		rs, err := rawConn(t, u).Query(t.Context(), `SELECT thread, id, parent_id, state, meta FROM loom_checkpoints`)
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		var all []byte
		for rs.Next() {
			for _, v := range rs.RawValues() {
				all = append(all, v...)
				all = append(all, '\n')
			}
		}
		if err := rs.Err(); err != nil {
			t.Fatal(err)
		}
		return all
	}
	savertest.RunSealed(t, st)
}
