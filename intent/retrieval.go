package intent

import (
	"context"
	"sync"

	"github.com/loomkit/loom/internal/bm25"
)

// retrievalMatcher is a BM25 index over every example and keyword, with
// words and character n-grams as terms so that Chinese needs no
// segmenter. An intent scores its best document's BM25 divided by the
// score the query would get against itself, so 1 means "said exactly like
// an example" whatever the query's length.
type retrievalMatcher struct {
	fs       Features
	index    *bm25.Index
	owner    []int32 // document → intent
	intent   []string
	maxCands int
	scratch  sync.Pool // *[]float32, one score per document
}

func newRetrievalMatcher(intents []Intent, cfg RetrievalConfig) *retrievalMatcher {
	r := &retrievalMatcher{fs: cfg.Features, maxCands: stageCandidates}
	var docs [][]uint64
	add := func(i int, text string) {
		terms := r.fs.terms(nil, Normalize(text))
		if len(terms) == 0 {
			return
		}
		docs = append(docs, terms)
		r.owner = append(r.owner, int32(i))
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
	// MaxDF: terms too common to tell intents apart are skipped, which
	// also keeps routing fast.
	r.index = bm25.New(docs, bm25.Params{K1: cfg.K1, B: cfg.B, HashBits: cfg.Features.HashBits, MaxDF: cfg.MaxDF})
	r.scratch.New = func() any { s := make([]float32, len(docs)); return &s }
	return r
}

// Match implements Matcher over normalized text.
func (r *retrievalMatcher) Match(_ context.Context, text string) ([]Candidate, error) {
	sp := r.scratch.Get().(*[]float32)
	defer r.scratch.Put(sp)
	scores := *sp
	self := r.index.Scores(r.fs.terms(nil, text), scores)
	if self == 0 {
		return nil, nil // no terms, or every term too common to score
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
