package intent

import (
	"context"
	"fmt"
)

// CalibrateOptions tune Calibrate.
type CalibrateOptions struct {
	// HoldOut is the share of each intent's examples held out to tune on.
	// Default 0.2.
	HoldOut float64
	// OOSWeight weighs out-of-scope recall against in-scope accuracy in the
	// objective: accuracy + OOSWeight × recall. Default 0.2.
	OOSWeight float64
}

// Calibration is what Calibrate chose and how the held-out examples fared.
type Calibration struct {
	// Fusion is the tuned fusion configuration.
	Fusion FusionConfig `json:"fusion"`
	// HeldOut and HeldOutOOS count the examples tuned on.
	HeldOut    int `json:"held_out"`
	HeldOutOOS int `json:"held_out_oos"`
	// InScopeAccuracy and OOSRecall are on the held-out examples, with the
	// tuned thresholds (OOSRecall 0 when none were out of scope).
	InScopeAccuracy float64 `json:"in_scope_accuracy"`
	OOSRecall       float64 `json:"oos_recall"`
}

// Calibrate tunes the decision thresholds of cfg.Fusion (ExecuteThreshold,
// RouteToCloudThreshold, ClassifierExecuteScore) for cfg's own examples: it
// holds out part of every intent's examples, builds an engine on the rest,
// routes the held-out part once and searches a grid of thresholds for the
// best in-scope accuracy + OOSWeight × out-of-scope recall, ties going to
// the lower thresholds. It returns cfg with the tuned thresholds, ready for
// New on all the examples. Without out-of-scope examples (cfg.OutOfScope)
// nothing says what to reject, and the thresholds come out low.
func Calibrate(ctx context.Context, cfg Config, opt CalibrateOptions, opts ...Option) (Config, Calibration, error) {
	if opt.HoldOut == 0 {
		opt.HoldOut = 0.2
	}
	if opt.OOSWeight == 0 {
		opt.OOSWeight = 0.2
	}
	cfg = cfg.withDefaults()
	var all []Example
	for _, in := range cfg.Intents {
		for _, ex := range in.Examples {
			all = append(all, Example{Text: ex, Intent: in.ID})
		}
	}
	train, held := HoldOut(all, opt.HoldOut, cfg.Seed)
	part := cfg
	part.Intents = make([]Intent, len(cfg.Intents))
	byID := map[string]*Intent{}
	for i, in := range cfg.Intents {
		part.Intents[i] = Intent{ID: in.ID, Description: in.Description, Keywords: in.Keywords}
		byID[in.ID] = &part.Intents[i]
	}
	for _, ex := range train {
		byID[ex.Intent].Examples = append(byID[ex.Intent].Examples, ex.Text)
	}
	e, err := New(ctx, part, opts...)
	if err != nil {
		return cfg, Calibration{}, fmt.Errorf("calibrate: %w", err)
	}
	type item struct {
		sig   signals
		truth string
		top   string
	}
	items := make([]item, 0, len(held))
	for _, ex := range held {
		r, err := e.Route(ctx, ex.Text)
		if err != nil {
			return cfg, Calibration{}, fmt.Errorf("calibrate: %w", err)
		}
		items = append(items, item{sig: cfg.Fusion.fuse(&r, cfg.OutOfScope, cfg.TopK), truth: ex.Intent, top: r.Intent})
	}
	score := func(f FusionConfig) (acc, recall float64) {
		var in, ok, oos, caught int
		for _, it := range items {
			d := f.rule(it.sig).decision()
			inScope := d == Execute || d == Clarify
			if it.truth == cfg.OutOfScope {
				oos++
				if !inScope {
					caught++
				}
				continue
			}
			in++
			if inScope && it.top == it.truth {
				ok++
			}
		}
		if in > 0 {
			acc = float64(ok) / float64(in)
		}
		if oos > 0 {
			recall = float64(caught) / float64(oos)
		}
		return acc, recall
	}
	best := Calibration{Fusion: cfg.Fusion, HeldOut: len(held)}
	bestJ := -1.0
	f := cfg.Fusion
	// Hundredths, so that the thresholds come out round.
	for exec := 40; exec <= 300; exec += 10 {
		for cloud := 10; cloud <= min(exec, 200); cloud += 5 {
			for clf := 30; clf <= 100; clf += 5 {
				f.ExecuteThreshold, f.RouteToCloudThreshold, f.ClassifierExecuteScore = float64(exec)/100, float64(cloud)/100, float64(clf)/100
				acc, recall := score(f)
				if j := acc + opt.OOSWeight*recall; j > bestJ+1e-12 {
					bestJ = j
					best.Fusion, best.InScopeAccuracy, best.OOSRecall = f, acc, recall
				}
			}
		}
	}
	for _, it := range items {
		if it.truth == cfg.OutOfScope {
			best.HeldOutOOS++
		}
	}
	e.log.Debug("intent thresholds calibrated", "execute", best.Fusion.ExecuteThreshold, "route_to_cloud", best.Fusion.RouteToCloudThreshold,
		"classifier_execute", best.Fusion.ClassifierExecuteScore, "held_out", best.HeldOut, "accuracy", best.InScopeAccuracy, "oos_recall", best.OOSRecall)
	cfg.Fusion = best.Fusion
	return cfg, best, nil
}
