package intent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/loomkit/loom/intent"
)

func TestDefaultsAreTheSeeds(t *testing.T) {
	f := intent.DefaultConfig().Fusion
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"keyword weight", f.Stages[intent.StageKeyword].Weight, 1.15},
		{"classifier weight", f.Stages[intent.StageClassifier].Weight, 1.0},
		{"retrieval weight", f.Stages[intent.StageRetrieval].Weight, 0.75},
		{"model weight", f.Stages[intent.StageModel].Weight, 1.1},
		{"execute", f.ExecuteThreshold, 1.65},
		{"route to cloud", f.RouteToCloudThreshold, 0.75},
		{"clarify margin", f.ClarifyMargin, 0.12},
		{"classifier execute score", f.ClassifierExecuteScore, 0.55},
		{"classifier execute margin", f.ClassifierExecuteMargin, 0.18},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// TestConfigFromJSON reads rules and thresholds from a document, as an app
// would from its YAML, and checks they take effect.
func TestConfigFromJSON(t *testing.T) {
	doc := `{
	  "intents": [
	    {"id": "lights_on", "keywords": ["开灯"], "examples": ["开灯", "把灯打开", "turn on the lights"]},
	    {"id": "lights_off", "keywords": ["关灯"], "examples": ["关灯", "把灯关掉", "turn off the lights"]}
	  ],
	  "fusion": {"execute_threshold": 9, "min_support": 9, "classifier_execute_score_threshold": 2,
	             "stages": {"keyword": {"weight": 1.15, "accept_score": 1, "accept_margin": 0.01, "bonus": 0.25}}},
	  "rules": {
	    "dialog_acts": [{"act": "affirm", "exact": ["好的"]}],
	    "stop": {"contains": ["算了"]},
	    "rewrite": [{"name": "again", "intents": ["lights_on"], "when": {"exact": ["再来一次"]}, "template": "开灯"}]
	  }
	}`
	var cfg intent.Config
	if err := json.Unmarshal([]byte(doc), &cfg); err != nil {
		t.Fatal(err)
	}
	e, err := intent.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := e.Config()
	if got.Fusion.ExecuteThreshold != 9 || got.Fusion.RouteToCloudThreshold != 0.75 || got.Fusion.Stages[intent.StageRetrieval].Weight != 0.75 {
		t.Errorf("fusion %+v: set fields kept, zero fields defaulted", got.Fusion)
	}
	r, err := e.Route(context.Background(), "请开灯")
	if err != nil {
		t.Fatal(err)
	}
	if r.Intent != "lights_on" || r.Decision != intent.RouteToCloud {
		t.Errorf("with unreachable execute rules: %s %s (%s)", r.Intent, r.Decision, r.Reason)
	}
	u, err := e.Understand(context.Background(), intent.Turn{Text: "再来一次", Intent: "lights_on"})
	if err != nil {
		t.Fatal(err)
	}
	if u.Rewritten != "开灯" || u.RewriteRule != "again" {
		t.Errorf("rewrite: %+v", u)
	}
	if u, _ := e.Understand(context.Background(), intent.Turn{Text: "好的"}); u.Act != "affirm" {
		t.Errorf("act %q, want affirm", u.Act)
	}
	if u, _ := e.Understand(context.Background(), intent.Turn{Text: "算了吧", ActiveTask: true}); !u.Stop {
		t.Error("stop phrase with an active task did not stop")
	}
}
