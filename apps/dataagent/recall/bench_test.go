package recall_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/loomkit/loom/apps/dataagent/recall"
	"github.com/loomkit/loom/datasource"
)

var (
	nouns = []string{"customer", "order", "product", "supplier", "invoice", "payment", "shipment", "warehouse", "employee", "department",
		"store", "region", "campaign", "coupon", "review", "category", "brand", "contract", "ticket", "vehicle",
		"driver", "route", "station", "device", "sensor", "account", "ledger", "budget", "project", "task",
		"course", "student", "teacher", "exam", "patient", "doctor", "visit", "claim", "policy", "agent"}
	attrs = []string{"name", "title", "status", "createdAt", "updated_at", "amount", "totalPrice", "quantity", "city", "country",
		"email", "phone", "score", "level", "type", "code", "description", "start_date", "end_date", "weight",
		"height", "age", "gender", "rating", "discount", "tax_rate", "currency", "channel", "source", "note"}
	comments = []string{"", "", "客户信息", "订单明细", "商品库存", "支付流水", "员工档案", "门店销售", "物流配送", "会员积分"}
)

// schema1000 is a generated data source of n tables, 6 to 15 columns each
// (names in snake_case and camelCase), with foreign keys to earlier tables
// and sample values for a text column.
func schema1000(n int) recall.Source {
	rng := rand.New(rand.NewPCG(1, 2))
	src := recall.Source{Samples: map[string][]string{}}
	for i := range n {
		name := fmt.Sprintf("%s_%s_%d", nouns[rng.IntN(len(nouns))], nouns[rng.IntN(len(nouns))], i)
		t := datasource.Table{Name: name, Kind: "table", Comment: comments[rng.IntN(len(comments))], PrimaryKey: []string{"id"},
			Columns: []datasource.Column{{Name: "id", Type: "integer"}}}
		for _, a := range rng.Perm(len(attrs))[:5+rng.IntN(10)] {
			t.Columns = append(t.Columns, datasource.Column{Name: attrs[a], Type: "text"})
		}
		for range rng.IntN(3) {
			if i == 0 {
				break
			}
			ref := src.Tables[rng.IntN(i)].Name
			col := ref + "_id"
			if slices.ContainsFunc(t.Columns, func(c datasource.Column) bool { return c.Name == col }) {
				continue
			}
			t.Columns = append(t.Columns, datasource.Column{Name: col, Type: "integer"})
			t.ForeignKeys = append(t.ForeignKeys, datasource.ForeignKey{Columns: []string{col}, RefTable: ref, RefColumns: []string{"id"}})
		}
		src.Samples[name+"."+t.Columns[1].Name] = []string{"Berlin", "上海", fmt.Sprintf("value %d", i)}
		src.Tables = append(src.Tables, t)
	}
	return src
}

// BenchmarkIndex1000Tables builds the schema index of 1,000 tables.
func BenchmarkIndex1000Tables(b *testing.B) {
	src := schema1000(1000)
	ctx := context.Background()
	if _, err := recall.NewSchema(ctx, src, nil); err != nil { // tiktoken loads once, outside the loop
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := recall.NewSchema(ctx, src, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSchemaRecall recalls one question, with a rewording, against
// the 1,000-table index: ranking, joins and packing to 2,000 tokens. It
// reports the 50th and 99th percentile of one recall.
func BenchmarkSchemaRecall(b *testing.B) {
	ctx := context.Background()
	s, err := recall.NewSchema(ctx, schema1000(1000), nil)
	if err != nil {
		b.Fatal(err)
	}
	queries := []string{"上个月每个门店的订单总金额", "total order amount per store last month"}
	var times []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		res, err := s.Recall(ctx, queries, recall.Options{K: 5, TokenBudget: 2000})
		if err != nil || len(res.Tables) == 0 {
			b.Fatal(res, err)
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
}
