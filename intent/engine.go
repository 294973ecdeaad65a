package intent

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// Matcher is a stage that scores intents for a text: the optional remote
// classifier (WithRemote) and model stage (WithModel) implement it. The
// text it gets is normalized (see Normalize). Scores should lie in [0, 1];
// an error is recorded in the stage's debug record and the stage is left
// out of fusion.
type Matcher interface {
	Match(ctx context.Context, text string) ([]Candidate, error)
}

// Candidate is one intent a stage, or fusion, proposes.
type Candidate struct {
	// Intent is the intent's ID.
	Intent string `json:"intent"`
	// Score is how strongly the stage proposes it: in [0, 1] for a stage,
	// the weighted sum for fusion.
	Score float64 `json:"score"`
	// Reason says where the score came from ("keyword:打开空调", "bm25").
	Reason string `json:"reason,omitempty"`
}

// Decision is what the agent should do with a routed request.
type Decision string

// The four decisions.
const (
	Execute      Decision = "execute"        // confident: run the intent locally
	Clarify      Decision = "clarify"        // two or more intents compete: ask which
	RouteToCloud Decision = "route_to_cloud" // looks like a known intent, not stable enough to run
	Reject       Decision = "reject"         // no local signal, or out of scope
)

// Result is a routed request: the decision, the ranked intents and the
// routing-debug record of every stage.
type Result struct {
	// Text is the normalized text that was routed.
	Text string `json:"text"`
	// Intent is the top fused intent; empty when no stage proposed any.
	Intent string `json:"intent,omitempty"`
	// Score and Margin are the top fused score and its lead over the second.
	Score  float64 `json:"score"`
	Margin float64 `json:"margin"`
	// Decision and Reason say what to do and why.
	Decision Decision `json:"decision"`
	Reason   string   `json:"reason"`
	// MatchedStage is the heaviest accepted stage that selected Intent.
	MatchedStage string `json:"matched_stage,omitempty"`
	// OutOfScope is set when the out-of-scope class won or nothing matched.
	OutOfScope bool `json:"unknown_detected"`
	// Candidates are the fused ranking, best first, at most Config.TopK.
	Candidates []Candidate `json:"candidates"`
	// Stages is one record per stage run, in order.
	Stages []StageResult `json:"stages"`
	// Elapsed is the time the whole route took.
	Elapsed time.Duration `json:"elapsed_ns"`
}

// StageResult is the debug record of one stage.
type StageResult struct {
	// Stage names the stage (StageKeyword, …).
	Stage string `json:"stage"`
	// Accepted is set when the stage's top candidate passed its acceptance
	// rule (StageConfig); Selected is then that candidate's intent.
	Accepted bool   `json:"accepted"`
	Selected string `json:"selected_intent,omitempty"`
	// Score and Margin are the stage's top score and its lead over the
	// second.
	Score  float64 `json:"score"`
	Margin float64 `json:"margin"`
	// Candidates are the stage's own, best first.
	Candidates []Candidate `json:"candidates"`
	// Elapsed is the time the stage took.
	Elapsed time.Duration `json:"elapsed_ns"`
	// Error is the stage's error, if it failed; it then proposed nothing.
	Error string `json:"error,omitempty"`
}

// stageCandidates is how many candidates a stage passes to fusion.
const stageCandidates = 10

// Engine routes text to intents. It is safe for concurrent use.
type Engine struct {
	cfg      Config
	stages   []stage
	model    Matcher
	keywords *keywordMatcher // also tells the social router what looks like a task
	rules    *rules
	splitter *splitter
	log      *slog.Logger
}

type stage struct {
	name string
	m    Matcher
}

// Option changes how New builds an Engine.
type Option func(*Engine)

// WithRemote adds a remote classifier as stage "remote", run after the
// local stages on every request.
func WithRemote(m Matcher) Option {
	return func(e *Engine) { e.stages = append(e.stages, stage{StageRemote, m}) }
}

// WithModel adds a model stage (an LLM, say), consulted only when the local
// stages do not reach execute; its candidates join fusion as stage "model"
// and the decision is taken again.
func WithModel(m Matcher) Option {
	return func(e *Engine) { e.model = m }
}

// WithLogger sets the logger; the default is slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(e *Engine) { e.log = l }
}

// New builds an Engine from cfg, training the classifier and indexing the
// examples. Zero fields of cfg take DefaultConfig's values.
func New(ctx context.Context, cfg Config, opts ...Option) (*Engine, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	e := &Engine{cfg: cfg, log: slog.Default()}
	start := time.Now()
	e.keywords = newKeywordMatcher(cfg.Intents)
	for _, name := range cfg.Stages {
		var m Matcher
		switch name {
		case StageKeyword:
			m = e.keywords
		case StageClassifier:
			c, err := newClassifierMatcher(ctx, cfg.Intents, cfg.Classifier, cfg.Seed)
			if err != nil {
				return nil, fmt.Errorf("build intent engine: %w", err)
			}
			m = c
		case StageRetrieval:
			m = newRetrievalMatcher(cfg.Intents, cfg.Retrieval)
		}
		e.stages = append(e.stages, stage{name, m})
	}
	r, err := newRules(cfg.Rules)
	if err != nil {
		return nil, fmt.Errorf("build intent engine: %w", err)
	}
	e.rules = r
	e.splitter = newSplitter(cfg.Split)
	for _, o := range opts {
		o(e)
	}
	e.log.Debug("intent engine built", "intents", len(cfg.Intents), "stages", cfg.Stages, "elapsed", time.Since(start))
	return e, nil
}

// Config returns the configuration the engine was built with, defaults
// filled in.
func (e *Engine) Config() Config { return e.cfg }

// Route runs the stages over text, fuses their candidates and decides. The
// error is the context's, when it ends first.
func (e *Engine) Route(ctx context.Context, text string) (Result, error) {
	start := time.Now()
	res := Result{Text: Normalize(text)}
	for _, s := range e.stages {
		res.Stages = append(res.Stages, e.run(ctx, s, res.Text))
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("route %q: %w", text, err)
	}
	e.cfg.Fusion.decide(&res, e.cfg.OutOfScope, e.cfg.TopK)
	if res.Decision != Execute && e.model != nil {
		res.Stages = append(res.Stages, e.run(ctx, stage{StageModel, e.model}, res.Text))
		e.cfg.Fusion.decide(&res, e.cfg.OutOfScope, e.cfg.TopK)
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

func (e *Engine) run(ctx context.Context, s stage, text string) StageResult {
	start := time.Now()
	r := StageResult{Stage: s.name}
	cands, err := s.m.Match(ctx, text)
	if err != nil {
		r.Error = err.Error()
		e.log.Warn("intent stage failed", "stage", s.name, "err", err)
	}
	r.Candidates = topCandidates(cands, stageCandidates)
	if len(r.Candidates) > 0 {
		r.Selected, r.Score = r.Candidates[0].Intent, r.Candidates[0].Score
		r.Margin = r.Score
		if len(r.Candidates) > 1 {
			r.Margin -= r.Candidates[1].Score
		}
		sc := e.cfg.Fusion.Stages[s.name]
		r.Accepted = r.Score >= sc.AcceptScore && r.Margin >= sc.AcceptMargin
		if !r.Accepted {
			r.Selected = ""
		}
	}
	r.Elapsed = time.Since(start)
	return r
}

// topCandidates sorts cs best first (ties by intent, so that the order is
// reproducible) and keeps at most k.
func topCandidates(cs []Candidate, k int) []Candidate {
	slices.SortFunc(cs, func(a, b Candidate) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.Intent, b.Intent)
	})
	return cs[:min(k, len(cs))]
}
