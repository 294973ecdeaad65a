package recall

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/loomkit/loom/internal/bm25"
	"github.com/loomkit/loom/llm"
)

// RRFK is the constant of reciprocal rank fusion: a document ranked r-th
// (from 1) by one ranking gets 1/(RRFK + r) from it.
const RRFK = 60

// analyzer gives the terms of search text: words and, for Chinese,
// character bigrams.
var analyzer = bm25.Analyzer{WordNgrams: 1, CharMin: 2, CharMax: 2, HanOnly: true}

// Doc is one document a Retriever ranks.
type Doc struct {
	// ID names the document in results.
	ID string
	// Text is what is matched, in any mix of Chinese and English;
	// identifiers in it are split into words (see the package doc).
	Text string
}

// Hit is a document a search found.
type Hit struct {
	// Doc is the document's position in the slice the Retriever was made
	// from.
	Doc int
	// ID is the document's ID.
	ID string
	// Score is the fused score: the sum over every query and every
	// ranking (words, and embeddings when there are any) of
	// 1/(RRFK + rank). Only the order it gives is meaningful.
	Score float64
	// Lexical is the best BM25 score over the queries divided by what the
	// query would score against itself: 1 means the document says the
	// query word for word, 0 that they share no word.
	Lexical float64
	// Cosine is the best cosine similarity over the queries between the
	// document's embedding and the query's; 0 without an Embedder.
	Cosine float64
}

// Retriever ranks documents against queries by BM25 over their words and,
// when it has an Embedder, by the cosine of their embeddings, fused by
// reciprocal rank. It is immutable and safe for concurrent use.
type Retriever struct {
	docs  []Doc
	index *bm25.Index
	emb   llm.Embedder
	vecs  [][]float32 // one unit vector per document; nil without emb
}

// NewRetriever indexes docs. With an Embedder (may be nil) it also
// embeds every document once, here.
func NewRetriever(ctx context.Context, docs []Doc, emb llm.Embedder) (*Retriever, error) {
	terms := make([][]uint64, len(docs))
	for i, d := range docs {
		terms[i] = analyzer.Terms(nil, searchText(d.Text))
	}
	r := &Retriever{docs: docs, index: bm25.New(terms, bm25.Params{HashBits: 18}), emb: emb}
	if emb != nil && len(docs) > 0 {
		texts := make([]string, len(docs))
		for i, d := range docs {
			texts[i] = d.Text
		}
		vecs, err := emb.Embed(ctx, texts)
		if err != nil {
			return nil, fmt.Errorf("embedding %d documents: %w", len(docs), err)
		}
		if len(vecs) != len(docs) {
			return nil, fmt.Errorf("embedding %d documents: got %d vectors", len(docs), len(vecs))
		}
		for _, v := range vecs {
			unit(v)
		}
		r.vecs = vecs
	}
	return r, nil
}

// Len is the number of documents.
func (r *Retriever) Len() int { return len(r.docs) }

// Search returns the k documents that best match the queries (a question
// and its rewordings; empty ones are ignored), best first. Without an
// Embedder only documents that share a word with a query are returned;
// with one, every document is ranked. k ≤ 0 returns all of them.
func (r *Retriever) Search(ctx context.Context, queries []string, k int) ([]Hit, error) {
	var qs []string
	for _, q := range queries {
		if q != "" {
			qs = append(qs, q)
		}
	}
	n := len(r.docs)
	if n == 0 || len(qs) == 0 {
		return nil, nil
	}
	fused := make([]float64, n)
	lexical := make([]float64, n)
	cosine := make([]float64, n)
	found := make([]bool, n)
	scores := make([]float32, n)
	for _, q := range qs {
		self := r.index.Scores(analyzer.Terms(nil, searchText(q)), scores)
		if self == 0 {
			continue
		}
		for d, s := range scores {
			if s > 0 {
				lexical[d] = max(lexical[d], float64(s)/self)
			}
		}
		fuse(fused, found, scores)
	}
	if r.vecs != nil {
		qv, err := r.emb.Embed(ctx, qs)
		if err != nil {
			return nil, fmt.Errorf("embedding %d queries: %w", len(qs), err)
		}
		for _, v := range qv {
			unit(v)
			for d, dv := range r.vecs {
				c := dot(v, dv)
				scores[d] = c
				cosine[d] = max(cosine[d], float64(c))
			}
			fuse(fused, found, scores)
		}
	}
	nfound := 0
	for _, f := range found {
		if f {
			nfound++
		}
	}
	ranked := make([]bm25.Hit, 0, nfound)
	for d := range n {
		if found[d] {
			ranked = append(ranked, bm25.Hit{Doc: d, Score: fused[d]})
		}
	}
	ranked = bm25.Top(ranked, k)
	hits := make([]Hit, len(ranked))
	for i, h := range ranked {
		hits[i] = Hit{Doc: h.Doc, ID: r.docs[h.Doc].ID, Score: h.Score, Lexical: min(1, lexical[h.Doc]), Cosine: cosine[h.Doc]}
	}
	return hits, nil
}

// fuse adds the reciprocal rank of every document with a positive score
// to fused, ranking by score (ties share the better rank) and marking
// them found.
func fuse(fused []float64, found []bool, scores []float32) {
	order := make([]int, 0, len(scores))
	for d, s := range scores {
		if s > 0 {
			order = append(order, d)
		}
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(scores[b], scores[a]) })
	rank := 0
	for i, d := range order {
		if i == 0 || scores[d] != scores[order[i-1]] {
			rank = i + 1
		}
		fused[d] += 1 / float64(RRFK+rank)
		found[d] = true
	}
}

func dot(a, b []float32) float32 {
	var s float32
	for i := range min(len(a), len(b)) {
		s += a[i] * b[i]
	}
	return s
}

// unit scales v to length 1 in place (a zero vector stays zero).
func unit(v []float32) {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(n))
	for i := range v {
		v[i] *= inv
	}
}
