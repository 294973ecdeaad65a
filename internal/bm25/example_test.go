package bm25_test

import (
	"fmt"

	"github.com/loomkit/loom/internal/bm25"
)

func Example() {
	an := bm25.Analyzer{WordNgrams: 1, CharMin: 2, CharMax: 3}
	docs := []string{
		"monthly sales by region 按地区的月度销售额",
		"customer churn rate 客户流失率",
		"inventory turnover 库存周转",
	}
	terms := make([][]uint64, len(docs))
	for i, d := range docs {
		terms[i] = an.Text(d)
	}
	ix := bm25.New(terms, bm25.Params{})
	for _, q := range []string{"客户流失", "sales by region"} {
		hits, _ := ix.Search(an.Text(q), 1)
		fmt.Println(q, "→", docs[hits[0].Doc])
	}
	// Output:
	// 客户流失 → customer churn rate 客户流失率
	// sales by region → monthly sales by region 按地区的月度销售额
}
