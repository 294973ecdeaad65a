package bm25

import (
	"cmp"
	"math"
	"slices"
	"sync"
)

// Params are an Index's BM25 constants and the size of its term space.
type Params struct {
	// K1 and B are BM25's term-frequency saturation and length
	// normalisation. Zero takes 1.2 and 0.75.
	K1 float64
	// B: see K1.
	B float64
	// HashBits is the size of the hashed term space, 2^HashBits buckets;
	// terms that share a bucket are one term. Zero takes 20.
	HashBits int
	// MaxDF: terms found in more than this share of the documents are too
	// common to score (they would cost time and tell nothing). Zero or
	// more than 1 scores every term.
	MaxDF float64
}

func (p Params) withDefaults() Params {
	if p.K1 == 0 {
		p.K1 = 1.2
	}
	if p.B == 0 {
		p.B = 0.75
	}
	if p.HashBits == 0 {
		p.HashBits = 20
	}
	if p.MaxDF <= 0 || p.MaxDF > 1 {
		p.MaxDF = 1
	}
	return p
}

// Index is an Okapi BM25 index over documents of hashed terms (see
// Analyzer), held as postings in one array per field so that a query
// touches only the documents that share a term with it. It is immutable
// once built and safe for concurrent use.
type Index struct {
	p       Params
	avgLen  float64
	docs    int
	start   []int32   // term bucket → first posting; CSR over buckets
	postDoc []int32   // posting → document
	postW   []float32 // posting → idf × saturated tf
	df      []int32   // term bucket → document frequency
	maxDF   int32     // terms in more documents are not scored
	scratch sync.Pool // *[]float32, one score per document
}

// New indexes docs, each the hashed terms of one document (repeats
// counted). Document i of the index is docs[i].
func New(docs [][]uint64, p Params) *Index {
	p = p.withDefaults()
	ix := &Index{p: p, docs: len(docs)}
	buckets := 1 << p.HashBits
	ix.maxDF = int32(max(1, math.Ceil(p.MaxDF*float64(len(docs)))))
	// Each document's buckets, sorted, so that equal terms are neighbours.
	ids := make([][]uint32, len(docs))
	var total int
	for j, d := range docs {
		b := make([]uint32, len(d))
		for i, h := range d {
			b[i] = Bucket(h, p.HashBits)
		}
		slices.Sort(b)
		ids[j] = b
		total += len(b)
	}
	ix.avgLen = float64(total) / float64(max(1, len(docs)))
	ix.df = make([]int32, buckets)
	for _, b := range ids {
		for i, id := range b {
			if i == 0 || b[i-1] != id {
				ix.df[id]++
			}
		}
	}
	ix.start = make([]int32, buckets+1)
	for id, n := range ix.df {
		ix.start[id+1] = ix.start[id] + n
	}
	ix.postDoc = make([]int32, ix.start[buckets])
	ix.postW = make([]float32, ix.start[buckets])
	fill := make([]int32, buckets)
	copy(fill, ix.start[:buckets])
	for j, b := range ids {
		for i := 0; i < len(b); {
			id, tf := b[i], 0
			for ; i < len(b) && b[i] == id; i++ {
				tf++
			}
			p := fill[id]
			fill[id]++
			ix.postDoc[p] = int32(j)
			ix.postW[p] = float32(ix.idf(id) * ix.saturate(tf, len(b)))
		}
	}
	ix.scratch.New = func() any { s := make([]float32, ix.docs); return &s }
	return ix
}

// Len is the number of documents.
func (ix *Index) Len() int { return ix.docs }

func (ix *Index) idf(id uint32) float64 {
	df := float64(ix.df[id])
	return math.Log(1 + (float64(ix.docs)-df+0.5)/(df+0.5))
}

func (ix *Index) saturate(tf, length int) float64 {
	return float64(tf) * (ix.p.K1 + 1) / (float64(tf) + ix.p.K1*(1-ix.p.B+ix.p.B*float64(length)/ix.avgLen))
}

// Scores sets scores[d] to document d's BM25 score for the query's hashed
// terms; scores must have Len() elements. It returns the score the query
// would get against a document equal to itself, so that score/self is 1
// for "said exactly like this document" whatever the query's length. Query
// terms no document has count in self (they make the query less like any
// document); terms too common to score (MaxDF) do not, and self is 0 when
// every term is too common.
func (ix *Index) Scores(query []uint64, scores []float32) (self float64) {
	clear(scores)
	if len(query) == 0 || ix.docs == 0 {
		return 0
	}
	ids := make([]uint32, len(query))
	for i, h := range query {
		ids[i] = Bucket(h, ix.p.HashBits)
	}
	slices.Sort(ids)
	for i := 0; i < len(ids); {
		id, tf := ids[i], 0
		for ; i < len(ids) && ids[i] == id; i++ {
			tf++
		}
		if ix.df[id] > ix.maxDF {
			continue
		}
		self += ix.idf(id) * ix.saturate(tf, len(ids))
		for p := ix.start[id]; p < ix.start[id+1]; p++ {
			scores[ix.postDoc[p]] += ix.postW[p]
		}
	}
	return self
}

// Hit is one document a search found.
type Hit struct {
	// Doc is the document's position in the slice given to New.
	Doc int
	// Score is its BM25 score, above 0.
	Score float64
}

// Search returns the k best-scoring documents for the query's hashed
// terms, best first (ties by document order), and the query's score
// against itself (see Scores). k ≤ 0 returns every document that shares a
// term with the query.
func (ix *Index) Search(query []uint64, k int) (hits []Hit, self float64) {
	if ix.docs == 0 {
		return nil, 0
	}
	sp := ix.scratch.Get().(*[]float32)
	defer ix.scratch.Put(sp)
	scores := *sp
	self = ix.Scores(query, scores)
	for d, s := range scores {
		if s > 0 {
			hits = append(hits, Hit{Doc: d, Score: float64(s)})
		}
	}
	return Top(hits, k), self
}

// Top sorts hits best first (ties by document order) and keeps the first
// k; k ≤ 0 keeps them all. It is how Search orders its results, for
// callers that score documents in other ways too.
func Top(hits []Hit, k int) []Hit {
	slices.SortFunc(hits, func(a, b Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.Doc, b.Doc)
	})
	if k > 0 && len(hits) > k {
		hits = hits[:k]
	}
	return hits
}
