// Package hostile makes the uploads a hostile or unlucky client sends to
// the report agent: templates that try to read other files or expand
// without bound, spreadsheets, pictures and PDFs whose few bytes declare
// gigabytes, and files whose type is a lie. Each is generated at test
// time, so no binary blob is kept in the repository; cmd/loom's hostile
// upload test sends every item to a real `loom serve`.
package hostile

import (
	"fmt"
	"strings"
)

// Item is one upload of the corpus.
type Item struct {
	// Name says what the item is; it is also the thread the test uses.
	Name string
	// Filename and ContentType are what the multipart part claims.
	Filename, ContentType string
	// Data is the file.
	Data []byte
	// Control marks a benign item that must become a template with a
	// preview: it shows that the items around it were really run.
	Control bool
}

// Corpus returns every item. canaryFile is the path of a file whose
// contents must never reach a client; the items that try to read a file
// name it, and /proc/self/environ for the server's environment.
func Corpus(canaryFile string) ([]Item, error) {
	var items []Item
	for _, gen := range []func(string) ([]Item, error){jrxmlItems, xlsxItems, imageItems, pdfItems, lyingItems} {
		got, err := gen(canaryFile)
		if err != nil {
			return nil, err
		}
		items = append(items, got...)
	}
	seen := map[string]bool{}
	for _, it := range items {
		if seen[it.Name] {
			return nil, fmt.Errorf("hostile: two items named %s", it.Name)
		}
		seen[it.Name] = true
	}
	return items, nil
}

// fileURL is path as a file: URL.
func fileURL(path string) string {
	return "file://" + strings.ReplaceAll(path, " ", "%20")
}
