package intent

import "testing"

func TestDecide(t *testing.T) {
	f := DefaultConfig().Fusion
	stage := func(name string, accepted bool, cands ...Candidate) StageResult {
		s := StageResult{Stage: name, Candidates: cands, Accepted: accepted}
		if len(cands) > 0 {
			s.Score, s.Margin = cands[0].Score, cands[0].Score
			if len(cands) > 1 {
				s.Margin -= cands[1].Score
			}
			if accepted {
				s.Selected = cands[0].Intent
			}
		}
		return s
	}
	c := func(id string, score float64) Candidate { return Candidate{Intent: id, Score: score} }
	for _, tc := range []struct {
		name     string
		stages   []StageResult
		intent   string
		decision Decision
		score    float64
	}{
		{"nothing", []StageResult{stage(StageKeyword, false)}, "", Reject, 0},
		{"keyword and classifier", []StageResult{stage(StageKeyword, true, c("ac_on", 1)), stage(StageClassifier, true, c("ac_on", 0.6), c("ac_off", 0.3))},
			"ac_on", Execute, 1.15 + 0.25 + 0.6 + 0.25},
		{"two accepted stages", []StageResult{stage(StageClassifier, true, c("a", 0.5), c("b", 0.3)), stage(StageRetrieval, true, c("a", 0.6))},
			"a", Execute, 0.5 + 0.25 + 0.75*0.6 + 0.25},
		{"classifier alone, sure", []StageResult{stage(StageClassifier, true, c("a", 0.9), c("b", 0.05))}, "a", Execute, 0.9 + 0.25},
		{"classifier alone, margin too small", []StageResult{stage(StageClassifier, true, c("a", 0.6), c("b", 0.45)), stage(StageRetrieval, false, c("b", 0.2))},
			"a", RouteToCloud, 0.85},
		{"close call", []StageResult{stage(StageClassifier, false, c("a", 0.45), c("b", 0.4)), stage(StageRetrieval, false, c("b", 0.5), c("a", 0.5))},
			"a", Clarify, 0.45 + 0.375},
		{"weak", []StageResult{stage(StageClassifier, false, c("a", 0.3), c("b", 0.2))}, "a", Reject, 0.3},
		{"out-of-scope class", []StageResult{stage(StageClassifier, true, c("oos", 0.9), c("a", 0.05))}, "oos", Reject, 1.15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Result{Stages: tc.stages}
			f.decide(&r, "oos", 5)
			if r.Intent != tc.intent || r.Decision != tc.decision || r.Score < tc.score-1e-9 || r.Score > tc.score+1e-9 {
				t.Errorf("got %s %s %.3f (%s), want %s %s %.3f", r.Intent, r.Decision, r.Score, r.Reason, tc.intent, tc.decision, tc.score)
			}
		})
	}
}
