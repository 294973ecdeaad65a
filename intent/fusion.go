package intent

import (
	"fmt"
	"maps"
	"slices"
)

// signals are what the decision looks at, taken from a fused result.
type signals struct {
	found         bool // some stage proposed an intent
	score, margin float64
	runnerUp      bool // a second candidate exists
	outOfScope    bool // the out-of-scope class ranked first
	support       int  // accepted stages selecting the top intent
	// a classifier (local or remote, the surer) agrees with the top
	// intent, with this score and margin
	classifierTop             bool
	classifier                string // its stage
	classifierScore, clMargin float64
	// the model stage selected the top intent with this confidence
	modelSelects bool
	modelScore   float64
}

// rule is the branch of the decision that fired, in the order tried.
type rule int

const (
	ruleNothing rule = iota
	ruleOutOfScope
	ruleScore
	ruleSupport
	ruleClassifier
	ruleModel
	ruleLow
	ruleClarify
	ruleCloud
)

// fuse ranks intents over res.Stages into res.Candidates and returns the
// signals for the decision. Each intent scores the sum over stages of the
// stage's weight times its score for that intent, plus the stage's bonus
// where an accepted stage selected it.
func (f FusionConfig) fuse(res *Result, outOfScope string, topK int) signals {
	fused := map[string]float64{}
	for _, s := range res.Stages {
		sc := f.Stages[s.Stage]
		for _, c := range s.Candidates {
			fused[c.Intent] += sc.Weight * c.Score
		}
		if s.Accepted {
			fused[s.Selected] += sc.Bonus
		}
	}
	cands := make([]Candidate, 0, len(fused))
	for _, id := range slices.Sorted(maps.Keys(fused)) {
		cands = append(cands, Candidate{Intent: id, Score: fused[id]})
	}
	res.Candidates = topCandidates(cands, topK)
	res.Intent, res.Score, res.Margin, res.MatchedStage = "", 0, 0, ""
	if len(res.Candidates) == 0 {
		return signals{}
	}
	res.Intent, res.Score, res.Margin = res.Candidates[0].Intent, res.Candidates[0].Score, res.Candidates[0].Score
	if len(res.Candidates) > 1 {
		res.Margin -= res.Candidates[1].Score
	}
	sig := signals{found: true, score: res.Score, margin: res.Margin, runnerUp: len(res.Candidates) > 1, outOfScope: res.Intent == outOfScope}
	heaviest := -1.0
	for _, s := range res.Stages {
		if (s.Stage == StageClassifier || s.Stage == StageRemote) && len(s.Candidates) > 0 && s.Candidates[0].Intent == res.Intent &&
			(!sig.classifierTop || s.Score > sig.classifierScore) {
			sig.classifierTop, sig.classifier, sig.classifierScore, sig.clMargin = true, s.Stage, s.Score, s.Margin
		}
		if s.Stage == StageModel && s.Accepted && s.Selected == res.Intent {
			sig.modelSelects, sig.modelScore = true, s.Score
		}
		if s.Accepted && s.Selected == res.Intent {
			sig.support++
			if w := f.Stages[s.Stage].Weight; w > heaviest {
				heaviest, res.MatchedStage = w, s.Stage
			}
		}
	}
	return sig
}

// rule decides, trying in order:
//
//   - nothing proposed, or the out-of-scope class on top: reject;
//   - top score ≥ ExecuteThreshold: execute;
//   - MinSupport accepted stages select the top intent: execute;
//   - the classifier, local or remote, agrees and is sure enough (score
//     and margin): execute;
//   - the model stage selected it and is sure enough: execute;
//   - top score < RouteToCloudThreshold: reject;
//   - margin < ClarifyMargin with a runner-up: clarify;
//   - otherwise: route_to_cloud.
func (f FusionConfig) rule(s signals) rule {
	switch {
	case !s.found:
		return ruleNothing
	case s.outOfScope:
		return ruleOutOfScope
	case s.score >= f.ExecuteThreshold:
		return ruleScore
	case s.support >= f.MinSupport:
		return ruleSupport
	case s.classifierTop && s.classifierScore >= f.ClassifierExecuteScore && s.clMargin >= f.ClassifierExecuteMargin:
		return ruleClassifier
	case s.modelSelects && s.modelScore >= f.ModelExecuteScore:
		return ruleModel
	case s.score < f.RouteToCloudThreshold:
		return ruleLow
	case s.runnerUp && s.margin < f.ClarifyMargin:
		return ruleClarify
	}
	return ruleCloud
}

func (r rule) decision() Decision {
	switch r {
	case ruleScore, ruleSupport, ruleClassifier, ruleModel:
		return Execute
	case ruleClarify:
		return Clarify
	case ruleCloud:
		return RouteToCloud
	}
	return Reject
}

func (f FusionConfig) reason(r rule, s signals) string {
	switch r {
	case ruleNothing:
		return "no stage proposed an intent"
	case ruleOutOfScope:
		return "out-of-scope class ranked first"
	case ruleScore:
		return fmt.Sprintf("score %.2f ≥ execute threshold %.2f", s.score, f.ExecuteThreshold)
	case ruleSupport:
		return fmt.Sprintf("%d accepted stages select it", s.support)
	case ruleClassifier:
		name := "classifier"
		if s.classifier == StageRemote {
			name = "remote classifier"
		}
		return fmt.Sprintf("%s score %.2f ≥ %.2f, margin %.2f ≥ %.2f", name, s.classifierScore, f.ClassifierExecuteScore, s.clMargin, f.ClassifierExecuteMargin)
	case ruleModel:
		return fmt.Sprintf("the model selects it with confidence %.2f ≥ %.2f", s.modelScore, f.ModelExecuteScore)
	case ruleLow:
		return fmt.Sprintf("score %.2f < route-to-cloud threshold %.2f", s.score, f.RouteToCloudThreshold)
	case ruleClarify:
		return fmt.Sprintf("margin %.2f < clarify margin %.2f", s.margin, f.ClarifyMargin)
	}
	return fmt.Sprintf("score %.2f < execute threshold %.2f, no other support", s.score, f.ExecuteThreshold)
}

// decide fuses res.Stages and sets the ranking and the decision.
func (f FusionConfig) decide(res *Result, outOfScope string, topK int) {
	s := f.fuse(res, outOfScope, topK)
	r := f.rule(s)
	res.Decision, res.Reason = r.decision(), f.reason(r, s)
	res.OutOfScope = r == ruleNothing || r == ruleOutOfScope || r == ruleLow
}
