package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

	"github.com/loomkit/loom/store"
)

// An app keeps its table beside the checkpoints, on SQLite or, with a
// postgres:// URL, on Postgres: the same code for both.
func Example() {
	dir, _ := os.MkdirTemp("", "loom-store")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	db, err := store.Open(ctx, "sqlite://"+filepath.Join(dir, "loom.db")) // or LOOM_DATABASE_URL
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()

	err = db.Migrate(ctx, "orders", []store.Migration{
		{Version: 1, Name: "orders", SQL: `CREATE TABLE orders (id TEXT PRIMARY KEY, item TEXT NOT NULL)`},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, db.Dialect().Rebind(`INSERT INTO orders (id, item) VALUES (?, ?)`), "o1", "tea")
		return err
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	var item string
	db.SQL().QueryRowContext(ctx, db.Dialect().Rebind(`SELECT item FROM orders WHERE id = ?`), "o1").Scan(&item)
	fmt.Println(db.Dialect(), item)
	// Output: sqlite tea
}
