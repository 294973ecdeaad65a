package spider_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/dataagent/recall/spider"
	"github.com/loomkit/loom/internal/testenv"
)

// TestLoadDefog reads a small benchmark in defog's format: tables from
// the JSON metadata with their descriptions, keys from the SQL, gold
// tables from the first acceptable statement with its {a, b} choices,
// nested queries and FROM lists included; a row a stray quote broke is
// left out.
func TestLoadDefog(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("shop.json", `{"table_metadata": {
		"customers": [{"column_name": "id", "data_type": "int", "column_description": "the customer"}, {"column_name": "city", "data_type": "text", "column_description": "where they live"}],
		"orders": [{"column_name": "id", "data_type": "int"}, {"column_name": "customer_id", "data_type": "int"}],
		"refunds": [{"column_name": "order_id", "data_type": "int"}]}, "glossary": ""}`)
	write("shop.sql", "CREATE TABLE customers (\n  id SERIAL PRIMARY KEY,\n  city TEXT\n);\n\nCREATE TABLE orders (\n  id SERIAL PRIMARY KEY,\n  customer_id INTEGER NOT NULL REFERENCES customers(id)\n);\n")
	questions := write("q.csv", "db_name,question,query\n"+
		`shop,Orders per city?,"SELECT {c.city, c.id}, count(*) FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY 1;SELECT city FROM refunds"`+"\n"+
		`shop,Customers without orders?,"SELECT id FROM customers WHERE id NOT IN (SELECT customer_id FROM orders)"`+"\n"+
		`shop,Refunds and orders?,"SELECT 1 FROM refunds r, orders o"`+"\n"+
		`shop,A "broken" row, with a stray quote,SELECT 1 FROM orders`+"\n")
	set, err := spider.LoadDefog(dir, questions)
	if err != nil {
		t.Fatal(err)
	}
	db := set.Databases["shop"]
	if db == nil || len(db.Tables) != 3 || db.Tables[0].Name != "customers" || db.Tables[0].Columns[1].Comment != "where they live" {
		t.Fatalf("tables %+v", db)
	}
	if o := db.Tables[1]; len(o.PrimaryKey) != 1 || len(o.ForeignKeys) != 1 || o.ForeignKeys[0].RefTable != "customers" {
		t.Errorf("orders' keys: %+v %+v", o.PrimaryKey, o.ForeignKeys)
	}
	var got []string
	for _, q := range set.Questions {
		got = append(got, strings.Join(q.Gold, "+"))
	}
	if want := "customers+orders,customers+orders,orders+refunds"; strings.Join(got, ",") != want {
		t.Errorf("gold %s, want %s", strings.Join(got, ","), want)
	}
	if _, err := spider.LoadDefog(dir, write("bad.csv", "db_name,question,query\nnowhere,Q?,SELECT 1 FROM t\n")); err == nil || !strings.Contains(err.Error(), "nowhere") {
		t.Errorf("unknown database: %v", err)
	}
}

// TestDefogRecall measures schema recall at k = 5 on defog's generated
// questions (the public set, an evaluation apart from the Spider sample)
// and holds it to the figures it reached: the 110 tables of the 11
// databases as one pool, and each question's own database.
func TestDefogRecall(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "..", "..", "shared", "data", "defog")
	if _, err := os.Stat(dir); err != nil {
		abs, _ := filepath.Abs(dir)
		testenv.Need(t, fmt.Sprintf("data folder %s not found", abs), err)
	}
	set, err := spider.LoadDefog(filepath.Join(dir, "databases"), filepath.Join(dir, "questions", "questions_gen_postgres.csv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		pool    string
		allGold float64 // floors: what recall reaches, not a target
	}{
		{spider.PoolQuestions, 0.91},
		{spider.PoolDB, 0.95},
	} {
		rep, err := set.Evaluate(t.Context(), c.pool, 5)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("pool %s (%d tables): all_gold_at_5 %.3f table_recall_at_5 %.3f mrr %.3f", c.pool, rep.Tables, rep.AllGoldAtK, rep.TableRecallAtK, rep.MRR)
		if rep.N != 210 || rep.AllGoldAtK < c.allGold {
			t.Errorf("pool %s: %d questions, all_gold_at_5 %.3f; want 210 and at least %.2f", c.pool, rep.N, rep.AllGoldAtK, c.allGold)
		}
	}
}
