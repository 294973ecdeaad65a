package dataagent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/loomkit/loom/apps/dataagent"
	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/datasource"
	"github.com/loomkit/loom/datasource/shop"
	"github.com/loomkit/loom/graph"
)

// exampleKnowledge is one stored question → SQL example.
type exampleKnowledge struct{}

func (exampleKnowledge) Evidence(_ context.Context, _, _, query string, _ int) ([]dataagent.Evidence, error) {
	ex := dataagent.Evidence{Kind: "example", Title: "How many orders are there in each status?",
		SQL: "SELECT status, count(*) AS orders FROM orders GROUP BY status ORDER BY orders DESC"}
	if strings.Contains(strings.ToLower(query), "status") {
		ex.Match = 1
	}
	return []dataagent.Evidence{ex}, nil
}

// The analyst without a model, on the demo shop: a question that matches
// a stored example is answered by the example's SQL, with the SQL and
// its result; another says which variables configure a model.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "dataagent")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "shop.db")
	shop.Ensure(ctx, path)
	src, err := datasource.Open(ctx, path, datasource.DefaultLimits())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()
	a := dataagent.New(dataagent.Config{
		Sources:   []dataagent.Source{{Name: "shop", Source: src}},
		Knowledge: exampleKnowledge{},
	})
	g, _ := a.Graph().Compile(graph.WithSaver(checkpoint.NewMemory()))
	for _, q := range []string{"How many orders in each status?", "Which customers are most loyal?"} {
		res, err := g.Invoke(ctx, "thread-1", func(s *dataagent.State) { s.Question, s.NL2SQLOnly = q, true })
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(strings.SplitN(res.State.Answer.Markdown(q), "\n\n", 2)[0][:60])
		if ans := res.State.Answer; ans.SQL != "" {
			fmt.Println(ans.SQL, ans.Rows)
		}
	}
	// Output:
	// No language model is configured, so I answered from the stor
	// SELECT status, count(*) AS orders FROM orders GROUP BY status ORDER BY orders DESC [[delivered 646] [cancelled 226] [shipped 221] [pending 210] [paid 197]]
	// No language model is configured, and no stored example quest
}
