package report_test

import (
	"bytes"
	"fmt"

	"github.com/loomkit/loom/apps/dataagent/report"
	"github.com/loomkit/loom/datasource"
)

// A SQL result becomes a chart block in the report's Markdown, and the
// report one HTML page with the chart drawn in it as SVG; a block the
// model got wrong becomes a note in the page.
func Example() {
	res := datasource.Result{
		Columns: []string{"region", "sales"},
		Rows:    [][]any{{"华东", 120.0}, {"华北", 200.0}},
	}
	md := "# 各地区销售额\n\n华北最高。\n\n"
	if c, ok := report.FromResult(res, "各地区销售额"); ok {
		md += c.Block()
	}
	md += "\n```echarts\n{\"series\": []}\n```\n"

	page, err := report.HTML(md, report.Options{Locale: "zh"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(page.Title, page.Charts, bytes.Count(page.HTML, []byte("<svg")))
	fmt.Println(page.Problems)

	_, ok := report.FromResult(datasource.Result{Columns: []string{"region", "sales"}}, "")
	fmt.Println("chart for an empty result:", ok)
	// Output:
	// 各地区销售额 1 1
	// [图表无法绘制：没有数据系列（series）]
	// chart for an empty result: false
}

// FromResult's chart as the block a report's Markdown carries.
func ExampleChart_Block() {
	res := datasource.Result{
		Columns: []string{"method", "share"},
		Rows:    [][]any{{"card", 60.0}, {"cash", 40.0}},
	}
	c, _ := report.FromResult(res, "Payment methods")
	fmt.Print(c.Block())
	// Output:
	// ```echarts
	// {
	//   "title": {
	//     "text": "Payment methods"
	//   },
	//   "series": [
	//     {
	//       "name": "share",
	//       "type": "pie",
	//       "data": [
	//         {
	//           "name": "card",
	//           "value": 60
	//         },
	//         {
	//           "name": "cash",
	//           "value": 40
	//         }
	//       ]
	//     }
	//   ]
	// }
	// ```
}
