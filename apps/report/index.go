package report

import "github.com/loomkit/loom/internal/bm25"

// analyzer makes the terms of knowledge base entries and queries: words
// and character 2–3-grams, so Chinese needs no segmenter.
var analyzer = bm25.Analyzer{WordNgrams: 1, CharMin: 2, CharMax: 3}

// index is Loom's shared BM25 over the texts of a knowledge base.
type index struct{ ix *bm25.Index }

func newIndex(texts []string) *index {
	docs := make([][]uint64, len(texts))
	for i, t := range texts {
		docs[i] = analyzer.Text(t)
	}
	return &index{bm25.New(docs, bm25.Params{})}
}

// search returns the positions of the n best entries for q, best first.
func (ix *index) search(q string, n int) []int {
	if ix.ix.Len() == 0 {
		return nil
	}
	hits, _ := ix.ix.Search(analyzer.Text(q), n)
	out := make([]int, len(hits))
	for i, h := range hits {
		out[i] = h.Doc
	}
	return out
}
