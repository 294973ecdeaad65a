package recall_test

import (
	"context"
	"fmt"

	"github.com/loomkit/loom/apps/dataagent/recall"
	"github.com/loomkit/loom/datasource"
)

func Example() {
	ctx := context.Background()
	tables := []datasource.Table{
		{Name: "customers", PrimaryKey: []string{"id"}, Columns: []datasource.Column{
			{Name: "id", Type: "integer"}, {Name: "name", Type: "text"}, {Name: "city", Type: "text"}, {Name: "tier", Type: "text"}}},
		{Name: "orders", PrimaryKey: []string{"id"}, Columns: []datasource.Column{
			{Name: "id", Type: "integer"}, {Name: "customer_id", Type: "integer"}, {Name: "totalAmount", Type: "numeric"}}},
		{Name: "products", PrimaryKey: []string{"id"}, Columns: []datasource.Column{
			{Name: "id", Type: "integer"}, {Name: "title", Type: "text"}}},
	}
	schema, err := recall.NewSchema(ctx, recall.Source{
		Tables:   tables,
		Meanings: []recall.Meaning{{Table: "customers", Column: "tier", Name: "客户等级", Values: map[string]string{"A": "大客户"}}},
		Samples:  map[string][]string{"customers.city": {"Berlin", "Lyon"}},
	}, nil) // no embedder: words only
	if err != nil {
		panic(err)
	}
	res, err := schema.Recall(ctx, []string{"大客户在Berlin的订单总额", "total amount of orders by A-tier customers in Berlin"}, recall.Options{K: 3, TokenBudget: 400})
	if err != nil {
		panic(err)
	}
	for _, t := range res.Tables {
		fmt.Println(t.Name, t.Columns)
	}
	fmt.Print(res.Text)
	// Output:
	// customers [city tier]
	// orders [customer_id totalAmount]
	// TABLE customers
	//   id integer PRIMARY KEY
	//   name text
	//   city text -- e.g. 'Berlin', 'Lyon'
	//   tier text -- 客户等级; values 'A' = 大客户
	// TABLE orders
	//   id integer PRIMARY KEY
	//   customer_id integer -> customers.id
	//   totalAmount numeric
}
