package seal_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/memory"
	"github.com/loomkit/loom/seal"
	"github.com/loomkit/loom/store"
	"github.com/loomkit/loom/store/storetest"
)

// The secret a thread's state, its question, the question's default, the
// answer and a store item all hold.
const atRestSecret = "zebra-owl-6189"

// Vault is the state of the graph the stolen-file tests run.
type Vault struct {
	Secret string `json:"secret"`
	Reply  string `json:"reply"`
}

// runWithSecret runs a small graph on db with the secret in its state,
// stops at a question that quotes it (with it as the default answer too),
// answers with it, and puts it in the long-term store.
func runWithSecret(t *testing.T, db *store.DB) {
	t.Helper()
	ctx := context.Background()
	g := graph.New[Vault]("vault")
	g.Node("keep", func(_ context.Context, v Vault) (Vault, error) {
		v.Secret = "the secret is " + atRestSecret
		return v, nil
	}).
		Node("ask", func(ctx context.Context, v Vault) (Vault, error) {
			reply, err := graph.Ask[string](ctx, map[string]string{"question": "keep " + v.Secret + "?"},
				graph.Expires(time.Now().Add(time.Hour), "default "+atRestSecret))
			if err != nil {
				return v, err
			}
			v.Reply = reply
			return v, nil
		}).
		Edge(graph.Start, "keep").
		Edge("keep", "ask").
		Edge("ask", graph.End)
	agent, err := g.Compile(graph.WithSaver(db.Saver()))
	if err != nil {
		t.Fatal(err)
	}
	res, err := agent.Invoke(ctx, "t1", nil)
	if err != nil || res.Status != graph.StatusInterrupted {
		t.Fatalf("invoke: %v, %v; want it to stop at the question", res, err)
	}
	res, err = agent.Resume(ctx, "t1", "yes, keep "+atRestSecret)
	if err != nil || res.Status != graph.StatusDone || res.State.Reply != "yes, keep "+atRestSecret {
		t.Fatalf("resume: %+v, %v", res, err)
	}
	// The history reads back whole through the saver.
	cps, err := db.Saver().List(ctx, "t1", 0)
	if err != nil || len(cps) < 3 {
		t.Fatalf("history: %d checkpoints, %v", len(cps), err)
	}
	if err := memory.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	s := memory.New(db, memory.Options{}).For("key:a")
	if err := s.Put(ctx, []string{"vault"}, "k", []byte(`{"note": "`+atRestSecret+`"}`), memory.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	found, err := s.Search(ctx, []string{"vault"}, memory.SearchOptions{Query: atRestSecret})
	if err != nil || len(found) != 1 || !bytes.Contains(found[0].Value, []byte(atRestSecret)) {
		t.Fatalf("search the store by the secret: %v, %v", found, err)
	}
}

// leaks reports whether b holds the secret.
func leaks(b []byte) bool { return bytes.Contains(b, []byte(atRestSecret)) }

// readFiles returns the bytes of the database file and of its -wal and
// -journal files, those that exist.
func readFiles(t *testing.T, path string) []byte {
	t.Helper()
	var all []byte
	for _, p := range []string{path, path + "-wal", path + "-journal"} {
		b, err := os.ReadFile(p)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	if len(all) == 0 {
		t.Fatalf("no database file at %s", path)
	}
	return all
}

// A copy of the SQLite file (and its write-ahead log), taken while the
// server runs or after it stopped, shows none of a sealed thread's data
// or store items; without sealing it does, so the test can tell.
func TestStolenSQLiteFile(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		t.Run(fmt.Sprintf("sealed=%v", sealed), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "loom.db")
			var opts []store.Option
			if sealed {
				opts = append(opts, store.WithCodec(keyring(t, k1)))
			}
			db, err := store.Open(context.Background(), path, opts...)
			if err != nil {
				t.Fatal(err)
			}
			runWithSecret(t, db)
			open := readFiles(t, path)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			closed := readFiles(t, path)
			if sealed && (leaks(open) || leaks(closed)) {
				t.Fatalf("the sealed database's files hold the secret (while open: %v, after close: %v)", leaks(open), leaks(closed))
			}
			if !sealed && !leaks(open) && !leaks(closed) {
				t.Fatal("the clear database's files do not hold the secret: the test cannot see a leak")
			}
		})
	}
}

// The same on PostgreSQL: every row of every table of the database's
// schema, as a dump would show it.
func TestStolenPostgresDump(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		t.Run(fmt.Sprintf("sealed=%v", sealed), func(t *testing.T) {
			var opts []store.Option
			if sealed {
				opts = append(opts, store.WithCodec(keyring(t, k1)))
			}
			db, err := store.Open(context.Background(), storetest.PostgresURL(t), opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			runWithSecret(t, db)
			dump := dumpSchema(t, db.SQL())
			if sealed && leaks(dump) {
				t.Fatal("the sealed database's rows hold the secret")
			}
			if !sealed && !leaks(dump) {
				t.Fatal("the clear database's rows do not hold the secret: the test cannot see a leak")
			}
		})
	}
}

// dumpSchema returns every value of every row of the tables in the
// current schema.
func dumpSchema(t *testing.T, db *sql.DB) []byte {
	t.Helper()
	ctx := context.Background()
	rows, err := db.QueryContext(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	rows.Close()
	if len(tables) < 2 {
		t.Fatalf("found tables %v; want the checkpoints' and the store's", tables)
	}
	var out bytes.Buffer
	for _, table := range tables {
		rows, err := db.QueryContext(ctx, `SELECT * FROM "`+table+`"`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				if b, ok := v.([]byte); ok {
					out.Write(b)
				} else {
					fmt.Fprint(&out, v)
				}
				out.WriteByte('\n')
			}
		}
		rows.Close()
	}
	return out.Bytes()
}

// Opening with keys that lack the one a thread was sealed with is an
// error naming the key, not a state read as garbage.
func TestStolenFileWithOtherKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "loom.db")
	db, err := store.Open(context.Background(), path, store.WithCodec(keyring(t, k1)))
	if err != nil {
		t.Fatal(err)
	}
	runWithSecret(t, db)
	db.Close()
	db, err = store.Open(context.Background(), path, store.WithCodec(keyring(t, k2)))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Saver().Get(context.Background(), "t1", ""); !errors.Is(err, seal.ErrUnknownKey) || !strings.Contains(err.Error(), `"k1"`) {
		t.Fatalf("reading a k1 thread with k2: %v, want ErrUnknownKey naming k1", err)
	}
}
