package datasource_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

	"github.com/loomkit/loom/datasource"
)

// A SQLite file explored read only: its tables, one query, and a write
// refused before it reaches the database.
func Example() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "shop.db")
	db, _ := sql.Open("sqlite", path)
	db.Exec(`CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT, price REAL);
		INSERT INTO products VALUES (1, 'tea', 3.5), (2, 'cake', 4.25)`)
	db.Close()

	ctx := context.Background()
	src, err := datasource.Open(ctx, path, datasource.Limits{MaxRows: 100})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()
	tables, _ := src.Tables(ctx)
	fmt.Println(tables[0].Name, tables[0].Rows)
	res, _ := src.Query(ctx, "SELECT name, price FROM products ORDER BY price DESC")
	fmt.Println(res.Columns, res.Rows, res.Truncated)
	_, err = src.Query(ctx, "DELETE FROM products")
	fmt.Println(err)
	// Output:
	// products 2
	// [name price] [[cake 4.25] [tea 3.5]] false
	// only one read-only statement is allowed; found DELETE
}
