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

func ExampleRetriever() {
	ctx := context.Background()
	docs := []recall.Doc{
		{ID: "term:gmv", Text: "GMV 成交总额 = sum of paid order amounts"},
		{ID: "term:churn", Text: "流失客户 churned customers: no order in 90 days"},
		{ID: "example:top-cities", Text: "Which cities bring the most revenue?"},
	}
	// With an llm.Embedder instead of nil, embeddings rank the documents
	// too, fused with the words by reciprocal rank.
	r, err := recall.NewRetriever(ctx, docs, nil)
	if err != nil {
		panic(err)
	}
	hits, err := r.Search(ctx, []string{"上个月的成交总额", "GMV last month"}, 2)
	if err != nil {
		panic(err)
	}
	for _, h := range hits {
		fmt.Printf("%s %.2f\n", h.ID, h.Lexical)
	}
	// Output:
	// term:gmv 0.33
}
