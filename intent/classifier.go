package intent

import (
	"context"
	"fmt"
	"math"
)

// classifierMatcher is the linear classifier trained at start-up from the
// intents' examples. Its candidate scores are a softmax over the classes'
// decision values, so they sum to 1 and the top-two margin means something.
type classifierMatcher struct {
	fs     Features
	temp   float64
	model  *linear
	intent []string // class → intent id
}

func newClassifierMatcher(ctx context.Context, intents []Intent, cfg ClassifierConfig, seed uint64) (*classifierMatcher, error) {
	c := &classifierMatcher{fs: cfg.Features, temp: cfg.Temperature}
	var xs []vector
	var ys []int
	var terms []uint64
	for _, in := range intents {
		if len(in.Examples) == 0 {
			continue // keyword-only intents are not classes
		}
		class := len(c.intent)
		c.intent = append(c.intent, in.ID)
		for _, ex := range in.Examples {
			terms = c.fs.terms(terms[:0], Normalize(ex))
			xs = append(xs, c.fs.vectorize(terms))
			ys = append(ys, class)
		}
	}
	if len(c.intent) < 2 {
		return nil, fmt.Errorf("%w: the classifier needs examples of at least two intents, has %d", ErrConfig, len(c.intent))
	}
	m, err := trainLinear(ctx, xs, ys, len(c.intent), c.fs.HashBits, cfg.C, seed)
	if err != nil {
		return nil, fmt.Errorf("train classifier on %d examples: %w", len(xs), err)
	}
	c.model = m
	return c, nil
}

// Match implements Matcher over normalized text.
func (c *classifierMatcher) Match(_ context.Context, text string) ([]Candidate, error) {
	x := c.fs.vectorize(c.fs.terms(nil, text))
	scores := make([]float64, len(c.intent))
	c.model.scores(x, scores)
	top := math.Inf(-1)
	for _, s := range scores {
		top = max(top, s)
	}
	var sum float64
	for _, s := range scores {
		sum += math.Exp(c.temp * (s - top))
	}
	out := make([]Candidate, len(scores))
	for k, s := range scores {
		out[k] = Candidate{Intent: c.intent[k], Score: math.Exp(c.temp*(s-top)) / sum, Reason: "svm"}
	}
	return topCandidates(out, stageCandidates), nil
}
