package layout_test

import (
	"fmt"

	"github.com/loomkit/loom/apps/report/layout"
)

// Detect tells inputs apart by their first bytes, not their names.
func ExampleDetect() {
	fmt.Println(layout.Detect([]byte("%PDF-1.7\n")))
	fmt.Println(layout.Detect([]byte("\x89PNG\r\n\x1a\n....")))
	fmt.Printf("%q\n", layout.Detect([]byte("name,qty\n")))
	// Output:
	// pdf
	// image
	// ""
}
