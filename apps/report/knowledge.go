package report

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/loomkit/loom/apps/report/jrxml"
)

// Doc is one entry of a knowledge base: a template with its fields, or a
// past error with its fix.
type Doc struct {
	// Title names the entry: the template's name, or the error.
	Title string `json:"title"`
	// Text is what is searched besides the title: the template's static
	// texts and field names, or the fix.
	Text   string   `json:"text"`
	Fields []string `json:"fields,omitempty"`
	JRXML  string   `json:"-"`
}

// Knowledge is a knowledge base searched with BM25: the templates and
// their field definitions, or the past corrections.
type Knowledge struct {
	mu    sync.RWMutex
	docs  []Doc
	index *index
}

// newKnowledge returns a knowledge base of docs.
func newKnowledge(docs ...Doc) *Knowledge {
	k := &Knowledge{}
	k.docs = append(k.docs, docs...)
	k.index = newIndex(k.texts())
	return k
}

func (k *Knowledge) texts() []string {
	out := make([]string, len(k.docs))
	for i, d := range k.docs {
		out[i] = d.Title + " " + strings.Join(d.Fields, " ") + " " + d.Text
	}
	return out
}

// Len is the number of entries.
func (k *Knowledge) Len() int {
	if k == nil {
		return 0
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	return len(k.docs)
}

// Add adds an entry.
func (k *Knowledge) Add(d Doc) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.docs = append(k.docs, d)
	k.index = newIndex(k.texts())
}

// Search returns at most n entries that match query, best first.
func (k *Knowledge) Search(query string, n int) []Doc {
	if k == nil || strings.TrimSpace(query) == "" {
		return nil
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	var out []Doc
	for _, i := range k.index.search(query, n) {
		out = append(out, k.docs[i])
	}
	return out
}

// ImportTemplates reads every .jrxml file below dir into a templates
// knowledge base: each template's name, its fields (with their classes)
// and its static texts and query. A file that does not parse is skipped and named
// in the error list.
func ImportTemplates(dir string) (*Knowledge, []error, error) {
	var docs []Doc
	var skipped []error
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.EqualFold(filepath.Ext(path), ".jrxml") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		doc, err := templateDoc(src)
		if err != nil {
			skipped = append(skipped, fmt.Errorf("%s: %w", path, err))
			return nil
		}
		docs = append(docs, doc)
		return nil
	})
	if err != nil {
		return nil, skipped, fmt.Errorf("importing templates from %s: %w", dir, err)
	}
	sort.Slice(docs, func(i, j int) bool { return docs[i].Title < docs[j].Title })
	return newKnowledge(docs...), skipped, nil
}

// templateDoc makes the knowledge base entry of a template.
func templateDoc(src []byte) (Doc, error) {
	doc, err := jrxml.Parse(src)
	if err != nil {
		return Doc{}, err
	}
	d := Doc{JRXML: string(src)}
	d.Title, _ = doc.Root.Attr("name")
	var texts []string
	doc.Root.Walk(func(e *jrxml.Element) bool {
		switch e.Name {
		case "field":
			if n, ok := e.Attr("name"); ok {
				d.Fields = append(d.Fields, n)
				if desc := e.Child("fieldDescription"); desc != nil {
					texts = append(texts, desc.Text())
				}
			}
		case "text":
			if t := strings.TrimSpace(e.Text()); t != "" && len(t) < 200 {
				texts = append(texts, t)
			}
		case "queryString":
			texts = append(texts, strings.TrimSpace(e.Text()))
		}
		return true
	})
	d.Text = strings.Join(texts, " ")
	return d, nil
}

// loadErrorKB reads the past corrections from the store.
func loadErrorKB(ctx context.Context, st Store) (*Knowledge, error) {
	cs, err := st.ErrorCases(ctx)
	if err != nil {
		return nil, err
	}
	docs := make([]Doc, len(cs))
	for i, c := range cs {
		docs[i] = Doc{Title: c.Error, Text: c.Fix}
	}
	return newKnowledge(docs...), nil
}
