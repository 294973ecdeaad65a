package sqlagent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/loomkit/loom/apps/sqlagent"
	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/datasource"
	"github.com/loomkit/loom/datasource/shop"
	"github.com/loomkit/loom/graph"
)

// The agent without a model, on the demo shop: it lists the tables and
// runs the SQL it is given, read only.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "sqlagent")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "shop.db")
	shop.Ensure(ctx, path)
	sources, err := sqlagent.OpenSources(ctx, []datasource.Config{{Name: "shop", URL: path}}, datasource.DefaultLimits())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sources.Close()
	a, _ := sqlagent.New(sqlagent.Config{Sources: sources})
	g, _ := a.Graph().Compile(graph.WithSaver(checkpoint.NewMemory()))
	for _, q := range []string{
		"SELECT country, count(*) AS customers FROM customers GROUP BY country ORDER BY customers DESC LIMIT 2",
		"DROP TABLE orders",
	} {
		res, _ := g.Invoke(ctx, "thread-1", func(s *sqlagent.State) { s.Question = q })
		fmt.Println(res.State.Answer.Markdown(q))
	}
	// Output:
	// Here is the result.
	//
	// ```sql
	// SELECT country, count(*) AS customers FROM customers GROUP BY country ORDER BY customers DESC LIMIT 2
	// ```
	//
	// | country | customers |
	// |---|---|
	// | CN | 67 |
	// | US | 37 |
	// only one read-only statement is allowed; found DROP
}
