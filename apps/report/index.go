package report

import (
	"sort"
	"strings"
	"unicode"
)

// index finds the documents that share the most terms with a query.
// (Replaced by Loom's shared BM25 when it lands.)
type index struct{ docs []map[string]bool }

func newIndex(texts []string) *index {
	ix := &index{}
	for _, t := range texts {
		m := map[string]bool{}
		for _, w := range terms(t) {
			m[w] = true
		}
		ix.docs = append(ix.docs, m)
	}
	return ix
}

func (ix *index) search(q string, n int) []int {
	type hit struct{ i, score int }
	var hits []hit
	qs := terms(q)
	for i, d := range ix.docs {
		s := 0
		for _, w := range qs {
			if d[w] {
				s++
			}
		}
		if s > 0 {
			hits = append(hits, hit{i, s})
		}
	}
	sort.SliceStable(hits, func(a, b int) bool { return hits[a].score > hits[b].score })
	var out []int
	for _, h := range hits[:min(n, len(hits))] {
		out = append(out, h.i)
	}
	return out
}

func terms(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}
