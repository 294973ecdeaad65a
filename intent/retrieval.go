package intent

import (
	"context"
	"math"
	"slices"
	"sync"
)

// retrievalMatcher is a BM25 index over every example and keyword, with
// words and character n-grams as terms so that Chinese needs no
// segmenter. An intent scores its best document's BM25 divided by the
// score the query would get against itself, so 1 means "said exactly like
// an example" whatever the query's length.
type retrievalMatcher struct {
	fs       Features
	k1, b    float64
	avgLen   float64
	docs     int
	owner    []int32   // document → intent
	start    []int32   // term bucket → first posting; CSR over buckets
	postDoc  []int32   // posting → document
	postW    []float32 // posting → idf × saturated tf
	df       []int32   // term bucket → document frequency
	intent   []string
	scratch  sync.Pool // *[]float32, one score per document
	maxCands int
	maxDF    int32 // terms in more documents are not scored
}

func newRetrievalMatcher(intents []Intent, cfg RetrievalConfig) *retrievalMatcher {
	r := &retrievalMatcher{fs: cfg.Features, k1: cfg.K1, b: cfg.B, maxCands: stageCandidates}
	type doc struct {
		counts map[uint32]int
		length int
	}
	var docs []doc
	var total int
	add := func(i int, text string) {
		ids := r.ids(Normalize(text))
		if len(ids) == 0 {
			return
		}
		counts := make(map[uint32]int, len(ids))
		for _, id := range ids {
			counts[id]++
		}
		docs = append(docs, doc{counts, len(ids)})
		r.owner = append(r.owner, int32(i))
		total += len(ids)
	}
	for i, in := range intents {
		r.intent = append(r.intent, in.ID)
		for _, kw := range in.Keywords {
			add(i, kw)
		}
		for _, ex := range in.Examples {
			add(i, ex)
		}
	}
	r.docs = len(docs)
	r.avgLen = float64(total) / float64(max(1, len(docs)))
	buckets := 1 << r.fs.HashBits
	r.maxDF = int32(max(1, math.Ceil(cfg.MaxDF*float64(len(docs)))))
	r.df = make([]int32, buckets)
	for _, d := range docs {
		for id := range d.counts {
			r.df[id]++
		}
	}
	r.start = make([]int32, buckets+1)
	for id, n := range r.df {
		r.start[id+1] = r.start[id] + n
	}
	r.postDoc = make([]int32, r.start[buckets])
	r.postW = make([]float32, r.start[buckets])
	fill := make([]int32, buckets)
	copy(fill, r.start[:buckets])
	for j, d := range docs {
		for id, tf := range d.counts {
			p := fill[id]
			fill[id]++
			r.postDoc[p] = int32(j)
			r.postW[p] = float32(r.idf(id) * r.saturate(tf, d.length))
		}
	}
	r.scratch.New = func() any { s := make([]float32, r.docs); return &s }
	return r
}

func (r *retrievalMatcher) ids(text string) []uint32 {
	terms := r.fs.terms(nil, text)
	mask := uint64(1)<<r.fs.HashBits - 1
	ids := make([]uint32, len(terms))
	for i, h := range terms {
		ids[i] = uint32((h ^ h>>32) & mask)
	}
	return ids
}

func (r *retrievalMatcher) idf(id uint32) float64 {
	df := float64(r.df[id])
	return math.Log(1 + (float64(r.docs)-df+0.5)/(df+0.5))
}

func (r *retrievalMatcher) saturate(tf, length int) float64 {
	return float64(tf) * (r.k1 + 1) / (float64(tf) + r.k1*(1-r.b+r.b*float64(length)/r.avgLen))
}

// Match implements Matcher over normalized text.
func (r *retrievalMatcher) Match(_ context.Context, text string) ([]Candidate, error) {
	ids := r.ids(text)
	if len(ids) == 0 || r.docs == 0 {
		return nil, nil
	}
	slices.Sort(ids)
	sp := r.scratch.Get().(*[]float32)
	defer r.scratch.Put(sp)
	scores := *sp
	clear(scores)
	var self float64
	for i := 0; i < len(ids); {
		id, tf := ids[i], 0
		for ; i < len(ids) && ids[i] == id; i++ {
			tf++
		}
		if r.df[id] > r.maxDF {
			continue // too common to tell intents apart; skipping it keeps routing fast
		}
		self += r.idf(id) * r.saturate(tf, len(ids))
		for p := r.start[id]; p < r.start[id+1]; p++ {
			scores[r.postDoc[p]] += r.postW[p]
		}
	}
	if self == 0 {
		return nil, nil // every term too common to score
	}
	best := make([]float64, len(r.intent))
	for d, s := range scores {
		if i := r.owner[d]; float64(s) > best[i] {
			best[i] = float64(s)
		}
	}
	var out []Candidate
	for i, s := range best {
		if s > 0 {
			out = append(out, Candidate{Intent: r.intent[i], Score: min(1, s/self), Reason: "bm25"})
		}
	}
	return topCandidates(out, r.maxCands), nil
}
