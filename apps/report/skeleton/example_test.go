package skeleton_test

import (
	"fmt"

	"github.com/loomkit/loom/apps/report/layout"
	"github.com/loomkit/loom/apps/report/skeleton"
)

// A layout with a label and its value becomes a template with the label
// as static text and a field where the value was.
func ExampleBuild() {
	l := &layout.Layout{
		Source: layout.KindImage, Width: 1240, Height: 1754, DPI: 150,
		Cells: []layout.Cell{
			{Text: "客户 Customer:", Box: layout.Box{X: 100, Y: 200, W: 200, H: 25}, Col: -1},
			{Text: "ACME", Box: layout.Box{X: 320, Y: 200, W: 90, H: 25}, Col: -1},
		},
		Rows:  []layout.Row{{Y: 200, H: 25, Cells: []int{0, 1}}},
		Pairs: []layout.Pair{{Label: "客户 Customer", LabelCell: 0, Value: 1, Text: "ACME"}},
	}
	sk, err := skeleton.Build(l)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sk.PageWidth, sk.PageHeight)
	for _, f := range sk.Fields {
		fmt.Println(f.Name, f.Label, f.Values)
	}
	// Output:
	// 595 842
	// field_1 客户 Customer [ACME]
}
