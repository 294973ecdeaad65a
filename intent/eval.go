package intent

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Example is one labelled utterance.
type Example struct {
	// Text is what was said.
	Text string `json:"text"`
	// Intent is its label; the Config's OutOfScope label marks an
	// out-of-scope example.
	Intent string `json:"intent"`
}

// IntentsFrom groups examples into intents, in order of first appearance.
func IntentsFrom(examples []Example) []Intent {
	var out []Intent
	at := map[string]int{}
	for _, ex := range examples {
		i, ok := at[ex.Intent]
		if !ok {
			i = len(out)
			at[ex.Intent] = i
			out = append(out, Intent{ID: ex.Intent})
		}
		out[i].Examples = append(out[i].Examples, ex.Text)
	}
	return out
}

// HoldOut splits examples intent by intent, reproducibly for a seed: about
// fraction of each intent's examples go to held, and every intent keeps at
// least one for train. Both keep the input's order.
func HoldOut(examples []Example, fraction float64, seed uint64) (train, held []Example) {
	byIntent := map[string][]int{}
	var order []string
	for i, ex := range examples {
		if _, ok := byIntent[ex.Intent]; !ok {
			order = append(order, ex.Intent)
		}
		byIntent[ex.Intent] = append(byIntent[ex.Intent], i)
	}
	rng := rand.New(rand.NewPCG(seed, 0x401d))
	out := make([]bool, len(examples))
	for _, id := range order {
		idx := byIntent[id]
		rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		n := min(int(fraction*float64(len(idx))+0.5), len(idx)-1)
		for _, i := range idx[:max(n, 0)] {
			out[i] = true
		}
	}
	for i, ex := range examples {
		if out[i] {
			held = append(held, ex)
		} else {
			train = append(train, ex)
		}
	}
	return train, held
}

// Report is how an engine did on labelled examples. An example counts as
// predicted in scope, as its top intent, when the decision is execute or
// clarify; route_to_cloud and reject predict out of scope.
type Report struct {
	// N, InScope and OutOfScope count the examples.
	N          int `json:"n_test"`
	InScope    int `json:"n_in_scope"`
	OutOfScope int `json:"n_out_of_scope"`
	// InScopeAccuracy is the share of in-scope examples predicted as their
	// intent.
	InScopeAccuracy float64 `json:"in_scope_accuracy"`
	// MacroF1 is the mean F1 over the in-scope intents of the examples,
	// out-of-scope predictions counting as misses.
	MacroF1 float64 `json:"macro_f1"`
	// OOSRecall is the share of out-of-scope examples predicted out of
	// scope; nil when there are none.
	OOSRecall *float64 `json:"oos_recall"`
	// P50 and P99 are percentiles of the time one Route took.
	P50 time.Duration `json:"-"`
	P99 time.Duration `json:"-"`
	// Decisions counts each decision.
	Decisions map[Decision]int `json:"decisions"`
}

// Evaluate routes every example and scores the predictions; the examples
// labelled with the engine's out-of-scope label are the out-of-scope ones.
func Evaluate(ctx context.Context, e *Engine, examples []Example) (Report, error) {
	oos := e.cfg.OutOfScope
	rep := Report{N: len(examples), Decisions: map[Decision]int{}}
	times := make([]time.Duration, 0, len(examples))
	type counts struct{ tp, fp, fn int }
	per := map[string]*counts{}
	get := func(id string) *counts {
		if per[id] == nil {
			per[id] = &counts{}
		}
		return per[id]
	}
	var correct, caught int
	for _, ex := range examples {
		start := time.Now()
		r, err := e.Route(ctx, ex.Text)
		times = append(times, time.Since(start))
		if err != nil {
			return rep, fmt.Errorf("evaluate: %w", err)
		}
		rep.Decisions[r.Decision]++
		pred := oos
		if r.Decision == Execute || r.Decision == Clarify {
			pred = r.Intent
		}
		if ex.Intent == oos {
			rep.OutOfScope++
			if pred == oos {
				caught++
			} else {
				get(pred).fp++
			}
			continue
		}
		rep.InScope++
		get(ex.Intent) // every in-scope intent of the examples is in the mean
		switch {
		case pred == ex.Intent:
			correct++
			get(pred).tp++
		case pred == oos:
			get(ex.Intent).fn++
		default:
			get(ex.Intent).fn++
			get(pred).fp++
		}
	}
	if rep.InScope > 0 {
		rep.InScopeAccuracy = float64(correct) / float64(rep.InScope)
		var sum float64
		n := 0
		for id, c := range per {
			if id == oos || c.tp+c.fn == 0 {
				continue // predicted but never the truth: not a class of the data
			}
			n++
			if c.tp > 0 {
				sum += 2 * float64(c.tp) / float64(2*c.tp+c.fp+c.fn)
			}
		}
		rep.MacroF1 = sum / float64(n)
	}
	if rep.OutOfScope > 0 {
		r := float64(caught) / float64(rep.OutOfScope)
		rep.OOSRecall = &r
	}
	slices.Sort(times)
	rep.P50, rep.P99 = percentile(times, 0.50), percentile(times, 0.99)
	return rep, nil
}

// percentile of sorted durations, nearest rank.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
