// Package shop writes the demo shop: a small SQLite database of a shop's
// customers, products, orders and payments that the agents answer
// questions on when no data source is configured.
package shop

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // the writable driver the demo is written with

	"github.com/loomkit/loom/datasource"
	"github.com/loomkit/loom/store"
)

// Name is the demo shop's source name.
const Name = "shop"

// File is the demo shop's file name.
const File = "loom-shop.db"

// Config is the demo shop at path as a data source.
func Config(path string) datasource.Config {
	return datasource.Config{Name: Name, URL: path, Description: "a demo shop: customers, categories, products, orders, order items, payments (2024)"}
}

// Beside is where the demo shop goes when no path is given: beside the
// file of a SQLite database db, else "" (File in the working directory).
func Beside(db *store.DB) string {
	if path := db.Path(); path != "" {
		return filepath.Join(filepath.Dir(path), File)
	}
	return ""
}

// demoSchema is the demo shop: six tables with foreign keys.
const demoSchema = `
CREATE TABLE categories (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE
);
CREATE TABLE customers (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  email TEXT NOT NULL UNIQUE,
  city TEXT NOT NULL,
  country TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE TABLE products (
  id INTEGER PRIMARY KEY,
  category_id INTEGER NOT NULL REFERENCES categories (id),
  name TEXT NOT NULL,
  price REAL NOT NULL,
  stock INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE orders (
  id INTEGER PRIMARY KEY,
  customer_id INTEGER NOT NULL REFERENCES customers (id),
  ordered_at TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('paid', 'shipped', 'delivered', 'cancelled', 'pending'))
);
CREATE TABLE order_items (
  id INTEGER PRIMARY KEY,
  order_id INTEGER NOT NULL REFERENCES orders (id),
  product_id INTEGER NOT NULL REFERENCES products (id),
  quantity INTEGER NOT NULL,
  unit_price REAL NOT NULL
);
CREATE TABLE payments (
  id INTEGER PRIMARY KEY,
  order_id INTEGER NOT NULL REFERENCES orders (id),
  paid_at TEXT NOT NULL,
  amount REAL NOT NULL,
  method TEXT NOT NULL
);
CREATE INDEX orders_customer ON orders (customer_id);
CREATE INDEX order_items_order ON order_items (order_id);
CREATE INDEX payments_order ON payments (order_id);
`

// Ensure writes the demo shop database to path unless a file is there
// already, and reports whether it wrote it. The data are the same
// on every machine: 8 categories, 60 products, 200 customers, 1,500
// orders with their items and payments.
func Ensure(ctx context.Context, path string) (bool, error) {
	if _, err := os.Stat(path); err == nil {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, fmt.Errorf("demo database: %w", err)
	}
	tmp := path + ".tmp"
	os.Remove(tmp)
	if err := writeDemo(ctx, tmp); err != nil {
		os.Remove(tmp)
		return false, fmt.Errorf("demo database: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return false, fmt.Errorf("demo database: %w", err)
	}
	return true, nil
}

func writeDemo(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, demoSchema); err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(2024, 4))
	exec := func(q string, args ...any) {
		if err == nil {
			_, err = tx.ExecContext(ctx, q, args...)
		}
	}
	categories := []string{"Tea", "Coffee", "Snacks", "Kitchen", "Books", "Stationery", "Toys", "Garden"}
	for i, c := range categories {
		exec("INSERT INTO categories VALUES (?, ?)", i+1, c)
	}
	adjectives := []string{"Classic", "Organic", "Premium", "Mini", "Family", "Travel", "Deluxe", "Everyday"}
	nouns := [][]string{
		{"Green Tea", "Oolong", "Jasmine Tea", "Pu-erh", "Black Tea"},
		{"Espresso Beans", "Drip Coffee", "Cold Brew", "Decaf", "Mocha Mix"},
		{"Almonds", "Rice Crackers", "Dried Mango", "Cookies", "Sesame Bar"},
		{"Teapot", "Mug", "Chopsticks", "Wok", "Knife"},
		{"Cookbook", "Novel", "Atlas", "Poetry", "Travel Guide"},
		{"Notebook", "Fountain Pen", "Pencils", "Planner", "Stickers"},
		{"Puzzle", "Kite", "Blocks", "Yo-yo", "Board Game"},
		{"Seeds", "Watering Can", "Gloves", "Pot", "Shears"},
	}
	type product struct {
		price float64
	}
	var products []product
	for i := range 60 {
		cat := i % len(categories)
		name := adjectives[r.IntN(len(adjectives))] + " " + nouns[cat][r.IntN(len(nouns[cat]))]
		price := float64(int(50+r.Float64()*9950)) / 100
		products = append(products, product{price})
		exec("INSERT INTO products VALUES (?, ?, ?, ?, ?)", i+1, cat+1, name, price, r.IntN(500))
	}
	first := []string{"Wei", "Li", "Mei", "Jun", "Anna", "Ben", "Chloe", "David", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kai", "Lena"}
	last := []string{"Wang", "Zhang", "Chen", "Liu", "Smith", "Müller", "Rossi", "Tanaka", "Garcia", "Novak", "Okafor", "Berg"}
	cities := [][2]string{{"Beijing", "CN"}, {"Shanghai", "CN"}, {"Shenzhen", "CN"}, {"Hangzhou", "CN"}, {"Berlin", "DE"}, {"Munich", "DE"},
		{"London", "GB"}, {"Paris", "FR"}, {"Tokyo", "JP"}, {"New York", "US"}, {"San Francisco", "US"}, {"Madrid", "ES"}}
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 200 {
		f, l := first[r.IntN(len(first))], last[r.IntN(len(last))]
		c := cities[r.IntN(len(cities))]
		created := start.Add(time.Duration(r.IntN(180*24)) * time.Hour)
		exec("INSERT INTO customers VALUES (?, ?, ?, ?, ?, ?)", i+1, f+" "+l, fmt.Sprintf("customer%03d@example.com", i+1), c[0], c[1], created.Format(time.DateTime))
	}
	statuses := []string{"delivered", "delivered", "delivered", "shipped", "paid", "cancelled", "pending"}
	methods := []string{"card", "alipay", "wechat", "paypal", "bank transfer"}
	item, payment := 0, 0
	for i := range 1500 {
		order := i + 1
		at := start.Add(time.Duration(r.IntN(365*24*60)) * time.Minute)
		status := statuses[r.IntN(len(statuses))]
		exec("INSERT INTO orders VALUES (?, ?, ?, ?)", order, 1+r.IntN(200), at.Format(time.DateTime), status)
		total := 0.0
		for range 1 + r.IntN(4) {
			item++
			p := r.IntN(len(products))
			q := 1 + r.IntN(3)
			exec("INSERT INTO order_items VALUES (?, ?, ?, ?, ?)", item, order, p+1, q, products[p].price)
			total += float64(q) * products[p].price
		}
		if status != "pending" && status != "cancelled" {
			payment++
			paid := at.Add(time.Duration(1+r.IntN(120)) * time.Minute)
			exec("INSERT INTO payments VALUES (?, ?, ?, ?, ?)", payment, order, paid.Format(time.DateTime), float64(int(total*100+0.5))/100, methods[r.IntN(len(methods))])
		}
	}
	if err != nil {
		return err
	}
	return tx.Commit()
}
