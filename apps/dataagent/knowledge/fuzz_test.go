package knowledge_test

import (
	"errors"
	"os"
	"testing"

	"github.com/loomkit/loom/apps/dataagent/knowledge"
)

// FuzzParse: any bytes are a file or an ErrInvalid, never a panic; a
// valid file written back out reads as the same entries.
func FuzzParse(f *testing.F) {
	demo, err := os.ReadFile("demo/shop.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(demo)
	f.Add([]byte(shopFile))
	f.Add([]byte("source: shop\nterms:\n  - term: x\n    synonyms: abc\n"))
	f.Add([]byte("source: shop\nsemantic:\n  - table: t\n    values: {a: ' '}\n"))
	f.Add([]byte("[1, 2]"))
	f.Add([]byte("source: &a shop\nterms: *a\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := knowledge.Parse(b)
		if err != nil {
			if !errors.Is(err, knowledge.ErrInvalid) {
				t.Fatalf("Parse: %v, not ErrInvalid", err)
			}
			return
		}
		entries, err := file.Entries()
		if err != nil {
			if !errors.Is(err, knowledge.ErrInvalid) {
				t.Fatalf("Entries: %v, not ErrInvalid", err)
			}
			return
		}
		out, err := file.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		back, err := knowledge.Parse(out)
		if err != nil {
			t.Fatalf("reading back %q: %v", out, err)
		}
		again, err := back.Entries()
		if err != nil || len(again) != len(entries) {
			t.Fatalf("read back %d entries, %v; want %d", len(again), err, len(entries))
		}
		for i := range entries {
			if entries[i].Key() != again[i].Key() || entries[i].Kind != again[i].Kind {
				t.Errorf("entry %d: %s read back as %s", i, entries[i].Label(), again[i].Label())
			}
		}
	})
}
