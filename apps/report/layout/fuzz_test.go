package layout_test

import (
	"testing"

	"github.com/loomkit/loom/apps/report/layout"
	"github.com/loomkit/loom/apps/report/skeleton"
)

// FuzzTSV feeds tesseract output of any shape to FromTSV and the layout
// it gives to skeleton.Build: errors are fine, panics are not, and a
// layout's indexes always hold together.
func FuzzTSV(f *testing.F) {
	f.Add([]byte(tsv))
	f.Add([]byte("level\tpage_num\n1\t1\t0\t0\t0\t0\t0\t0\t10\t10\t-1\t\n5\t1\t1\t1\t1\t1\t-5\t-5\t0\t0\t99\t：\n"))
	f.Add([]byte("level\t\n5\t1\t1\t1\t1\t1\t3\t3\t1\t1\t99\tA:B\n1\t1\t0\t0\t0\t0\t0\t0\t5\t5\t-1\t\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := layout.FromTSV(data, 20)
		if err != nil {
			return
		}
		for ri, r := range l.Rows {
			for _, i := range r.Cells {
				if i < 0 || i >= len(l.Cells) || l.Cells[i].Row != ri {
					t.Fatalf("row %d names cell %d of %d", ri, i, len(l.Cells))
				}
			}
		}
		skeleton.Build(l)
	})
}
