package intent

import (
	"errors"
	"fmt"
)

// Stage names, as used in Config.Stages, FusionConfig.Stages and the
// routing debug record.
const (
	StageKeyword    = "keyword"
	StageClassifier = "classifier"
	StageRetrieval  = "retrieval"
	StageRemote     = "remote" // a Matcher given with WithRemote
	StageModel      = "model"  // a Matcher given with WithModel; runs only when the local stages do not execute
)

// Config is everything an Engine is built from. It is meant to be read from
// YAML or JSON; zero fields take the defaults of DefaultConfig.
type Config struct {
	// Intents are the known intents with their keywords and examples.
	Intents []Intent `yaml:"intents" json:"intents"`
	// OutOfScope is the label of an intent whose examples are things the
	// agent does not do (CLINC150's "oos"). It is trained like any other
	// class; when it wins, the decision is reject. Default "oos".
	OutOfScope string `yaml:"out_of_scope" json:"out_of_scope"`
	// Stages are the local matchers to run, in order. Default keyword,
	// classifier, retrieval.
	Stages []string `yaml:"stages" json:"stages"`
	// Classifier configures the classifier trained at start-up.
	Classifier ClassifierConfig `yaml:"classifier" json:"classifier"`
	// Retrieval configures the BM25 index over keywords and examples.
	Retrieval RetrievalConfig `yaml:"retrieval" json:"retrieval"`
	// Fusion holds the stage weights, bonuses and decision thresholds.
	Fusion FusionConfig `yaml:"fusion" json:"fusion"`
	// Rules are the dialog acts, stop phrases, social routing and rewrite
	// rules applied before routing.
	Rules Rules `yaml:"rules" json:"rules"`
	// Split configures multi-intent clause splitting.
	Split SplitConfig `yaml:"split" json:"split"`
	// TopK is how many fused candidates a Result keeps. Default 5.
	TopK int `yaml:"top_k" json:"top_k"`
	// Seed makes training reproducible. Default 1.
	Seed uint64 `yaml:"seed" json:"seed"`
}

// Intent is one thing the agent can do.
type Intent struct {
	// ID names the intent in results.
	ID string `yaml:"id" json:"id"`
	// Description is for people and for a model stage.
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	// Keywords are phrases whose presence names this intent outright.
	Keywords []string `yaml:"keywords,omitempty" json:"keywords,omitempty"`
	// Examples are utterances of this intent; the classifier and the
	// retrieval index learn from them.
	Examples []string `yaml:"examples,omitempty" json:"examples,omitempty"`
}

// ClassifierConfig configures the linear classifier (one-vs-rest linear
// SVM over hashed word and character n-grams).
type ClassifierConfig struct {
	// Features are the classifier's features. Default words and word
	// pairs, character 2–4-grams, 2^20 buckets.
	Features Features `yaml:"features" json:"features"`
	// C is the SVM's cost: higher fits the examples more closely. Default 1.
	C float64 `yaml:"c" json:"c"`
	// Temperature scales decision values before the softmax that turns
	// them into the scores fusion sees. Default 8.
	Temperature float64 `yaml:"temperature" json:"temperature"`
}

// RetrievalConfig configures the BM25 index over every example and keyword.
type RetrievalConfig struct {
	// Features are the indexed terms. Default words and character
	// 2–3-grams, 2^20 buckets.
	Features Features `yaml:"features" json:"features"`
	// K1 and B are BM25's term-frequency saturation and length
	// normalisation. Defaults 1.2 and 0.75.
	K1 float64 `yaml:"k1" json:"k1"`
	// B: see K1.
	B float64 `yaml:"b" json:"b"`
	// MaxDF: terms found in more than this share of the documents are too
	// common to score (they would cost time and tell nothing). Default 0.05.
	MaxDF float64 `yaml:"max_df" json:"max_df"`
}

// FusionConfig weighs the stages' candidates into one ranking and decides
// what to do with it: execute, clarify, route_to_cloud or reject.
type FusionConfig struct {
	// Stages maps a stage name to its weight and acceptance rule. A stage
	// given here replaces its defaults whole.
	Stages map[string]StageConfig `yaml:"stages" json:"stages"`
	// ExecuteThreshold: a fused top score at or above it executes. 1.65.
	ExecuteThreshold float64 `yaml:"execute_threshold" json:"execute_threshold"`
	// RouteToCloudThreshold: below it the request is rejected as having no
	// local signal; above it, what does not execute or clarify goes to the
	// cloud. 0.75.
	RouteToCloudThreshold float64 `yaml:"route_to_cloud_threshold" json:"route_to_cloud_threshold"`
	// ClarifyMargin: a top-two margin below it, with the score between the
	// two thresholds above, asks the user to choose. 0.12.
	ClarifyMargin float64 `yaml:"clarify_margin_threshold" json:"clarify_margin_threshold"`
	// ClassifierExecuteScore and ClassifierExecuteMargin: a classifier, the
	// local one or the remote one, alone executes when its top score and
	// margin reach these. 0.55, 0.18.
	ClassifierExecuteScore float64 `yaml:"classifier_execute_score_threshold" json:"classifier_execute_score_threshold"`
	// ClassifierExecuteMargin: see ClassifierExecuteScore.
	ClassifierExecuteMargin float64 `yaml:"classifier_execute_margin_threshold" json:"classifier_execute_margin_threshold"`
	// ModelExecuteScore: the model stage, asked because the local stages
	// were unsure, executes the top intent alone when it selected it with
	// at least this confidence. Default 0.8.
	ModelExecuteScore float64 `yaml:"model_execute_score_threshold" json:"model_execute_score_threshold"`
	// MinSupport is how many accepted stages selecting the top intent
	// execute it whatever its score. Default 2.
	MinSupport int `yaml:"min_support" json:"min_support"`
}

// StageConfig is one stage's part in fusion.
type StageConfig struct {
	// Weight multiplies the stage's candidate scores.
	Weight float64 `yaml:"weight" json:"weight"`
	// AcceptScore and AcceptMargin: the stage is accepted (it selects its
	// top intent) when the top score reaches AcceptScore and leads the
	// second by at least AcceptMargin.
	AcceptScore float64 `yaml:"accept_score" json:"accept_score"`
	// AcceptMargin: see AcceptScore.
	AcceptMargin float64 `yaml:"accept_margin" json:"accept_margin"`
	// Bonus is added to the selected intent of an accepted stage.
	Bonus float64 `yaml:"bonus" json:"bonus"`
}

// SplitConfig says where a multi-intent utterance splits into clauses
// and what makes it conditional.
type SplitConfig struct {
	// Connectives split clauses: 然后, 并且, "and then", …
	Connectives []string `yaml:"connectives" json:"connectives"`
	// Punctuation runes split clauses: "，,;；。！？!?".
	Punctuation string `yaml:"punctuation" json:"punctuation"`
	// Conditional phrases make a multi-clause request conditional.
	Conditional []string `yaml:"conditional" json:"conditional"`
	// MinRunes: a shorter clause joins its neighbour. Default 2.
	MinRunes int `yaml:"min_runes" json:"min_runes"`
}

// DefaultConfig returns the defaults every zero field of a Config takes:
// the stages' weights and the decision thresholds.
func DefaultConfig() Config {
	return Config{
		OutOfScope: "oos",
		Stages:     []string{StageKeyword, StageClassifier, StageRetrieval},
		Classifier: ClassifierConfig{
			Features:    Features{WordNgrams: 2, CharMin: 2, CharMax: 4, HashBits: 20},
			C:           1,
			Temperature: 8,
		},
		Retrieval: RetrievalConfig{
			Features: Features{WordNgrams: 1, CharMin: 2, CharMax: 3, HashBits: 20},
			K1:       1.2,
			B:        0.75,
			MaxDF:    0.05,
		},
		Fusion: FusionConfig{
			Stages: map[string]StageConfig{
				StageKeyword:    {Weight: 1.15, AcceptScore: 1, AcceptMargin: 0.01, Bonus: 0.25},
				StageClassifier: {Weight: 1.0, AcceptScore: 0.5, AcceptMargin: 0.1, Bonus: 0.25},
				StageRetrieval:  {Weight: 0.75, AcceptScore: 0.6, AcceptMargin: 0.05, Bonus: 0.25},
				StageRemote:     {Weight: 1.0, AcceptScore: 0.5, AcceptMargin: 0.1, Bonus: 0.25},
				StageModel:      {Weight: 1.1, AcceptScore: 0.5, AcceptMargin: 0.1, Bonus: 0.25},
			},
			ExecuteThreshold:        1.65,
			RouteToCloudThreshold:   0.75,
			ClarifyMargin:           0.12,
			ClassifierExecuteScore:  0.55,
			ClassifierExecuteMargin: 0.18,
			ModelExecuteScore:       0.8,
			MinSupport:              2,
		},
		Split: SplitConfig{
			Connectives: []string{"然后", "并且", "同时", "顺便", "接着", "还有", "另外", "再",
				"and then", "and also", "after that", "then", "also", "and"},
			Punctuation: "，,;；。！？!?",
			Conditional: []string{"如果", "若", "还没", "未发货", "没发货", "if", "unless", "in case"},
			MinRunes:    2,
		},
		TopK: 5,
		Seed: 1,
	}
}

// withDefaults fills the zero fields of c from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.OutOfScope == "" {
		c.OutOfScope = d.OutOfScope
	}
	if len(c.Stages) == 0 {
		c.Stages = d.Stages
	}
	c.Classifier.Features = c.Classifier.Features.withDefaults(d.Classifier.Features)
	if c.Classifier.C == 0 {
		c.Classifier.C = d.Classifier.C
	}
	if c.Classifier.Temperature == 0 {
		c.Classifier.Temperature = d.Classifier.Temperature
	}
	c.Retrieval.Features = c.Retrieval.Features.withDefaults(d.Retrieval.Features)
	if c.Retrieval.K1 == 0 {
		c.Retrieval.K1 = d.Retrieval.K1
	}
	if c.Retrieval.B == 0 {
		c.Retrieval.B = d.Retrieval.B
	}
	if c.Retrieval.MaxDF == 0 {
		c.Retrieval.MaxDF = d.Retrieval.MaxDF
	}
	f := &c.Fusion
	stages := make(map[string]StageConfig, len(d.Fusion.Stages))
	for name, s := range d.Fusion.Stages {
		stages[name] = s
	}
	for name, s := range f.Stages {
		stages[name] = s
	}
	f.Stages = stages
	for _, p := range []struct{ v, d *float64 }{
		{&f.ExecuteThreshold, &d.Fusion.ExecuteThreshold},
		{&f.RouteToCloudThreshold, &d.Fusion.RouteToCloudThreshold},
		{&f.ClarifyMargin, &d.Fusion.ClarifyMargin},
		{&f.ClassifierExecuteScore, &d.Fusion.ClassifierExecuteScore},
		{&f.ClassifierExecuteMargin, &d.Fusion.ClassifierExecuteMargin},
		{&f.ModelExecuteScore, &d.Fusion.ModelExecuteScore},
	} {
		if *p.v == 0 {
			*p.v = *p.d
		}
	}
	if f.MinSupport == 0 {
		f.MinSupport = d.Fusion.MinSupport
	}
	if c.Split.Connectives == nil {
		c.Split.Connectives = d.Split.Connectives
	}
	if c.Split.Punctuation == "" {
		c.Split.Punctuation = d.Split.Punctuation
	}
	if c.Split.Conditional == nil {
		c.Split.Conditional = d.Split.Conditional
	}
	if c.Split.MinRunes == 0 {
		c.Split.MinRunes = d.Split.MinRunes
	}
	if c.TopK == 0 {
		c.TopK = d.TopK
	}
	if c.Seed == 0 {
		c.Seed = d.Seed
	}
	return c
}

func (f Features) withDefaults(d Features) Features {
	if f == (Features{}) {
		return d
	}
	if f.HashBits == 0 {
		f.HashBits = d.HashBits
	}
	return f
}

// ErrConfig is wrapped by every error New returns for a bad Config.
var ErrConfig = errors.New("intent: bad config")

func (c Config) validate() error {
	if len(c.Intents) == 0 {
		return fmt.Errorf("%w: no intents", ErrConfig)
	}
	seen := make(map[string]bool, len(c.Intents))
	for _, in := range c.Intents {
		if in.ID == "" {
			return fmt.Errorf("%w: an intent has no id", ErrConfig)
		}
		if seen[in.ID] {
			return fmt.Errorf("%w: intent %q given twice", ErrConfig, in.ID)
		}
		seen[in.ID] = true
	}
	for _, s := range c.Stages {
		switch s {
		case StageKeyword, StageClassifier, StageRetrieval:
		default:
			return fmt.Errorf("%w: unknown stage %q (want keyword, classifier or retrieval)", ErrConfig, s)
		}
	}
	for _, fs := range []Features{c.Classifier.Features, c.Retrieval.Features} {
		if fs.HashBits < 8 || fs.HashBits > 28 {
			return fmt.Errorf("%w: hash_bits %d outside 8..28", ErrConfig, fs.HashBits)
		}
	}
	return nil
}
