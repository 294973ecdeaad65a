package knowledge_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/loomkit/loom/apps/dataagent/knowledge"
	"github.com/loomkit/loom/store"
)

// A store on Loom's database, with the demo shop's knowledge for every
// owner, and a term imported from YAML: a second import changes nothing.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "knowledge")
	defer os.RemoveAll(dir)
	db, err := store.Open(ctx, filepath.Join(dir, "loom.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	// The server applies an agent's Migrations; here they are applied
	// by hand.
	if err := db.Migrate(ctx, "dataagent", knowledge.Migrations); err != nil {
		fmt.Println(err)
		return
	}
	st := knowledge.Open(db, "dataagent")
	demo, _ := knowledge.Demo()
	st.Seed(demo)

	f, err := knowledge.Parse([]byte(`
source: shop
terms:
  - term: 大客户
    synonyms: [key account]
    description: 累计支付金额超过 1000 的客户 (a customer who paid more than 1000 in all)
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 2 {
		res, err := st.Import(ctx, f)
		fmt.Printf("%+v %v\n", res, err)
	}
	terms, _ := st.List(ctx, knowledge.Filter{Source: "shop", Kind: knowledge.KindTerm})
	d := terms[0].Doc()
	fmt.Println(len(terms), d.Title)
	fmt.Println(d.Text)
	// Output:
	// {Source:shop Created:1 Updated:0 Unchanged:0} <nil>
	// {Source:shop Created:0 Updated:0 Unchanged:1} <nil>
	// 10 客单价
	// 客单价 (average order value, AOV, 平均订单金额, 平均客单价)
	// 客单价 = sum(payments.amount) / count(DISTINCT payments.order_id)
	// 每笔已支付订单的平均金额。只有已支付、已发货、已送达的订单有付款记录，所以按 payments 计算即可。 The average amount of a paid order.
}
