package intent_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"github.com/loomkit/loom/intent"
)

var (
	cabinOnce   sync.Once
	cabinEngine *intent.Engine
	cabinErr    error
)

// newCabin builds the cabin engine once for the tests that only read it.
func newCabin(t testing.TB) *intent.Engine {
	t.Helper()
	cabinOnce.Do(func() { cabinEngine, cabinErr = intent.New(context.Background(), cabinConfig()) })
	if cabinErr != nil {
		t.Fatal(cabinErr)
	}
	return cabinEngine
}

func TestRoute(t *testing.T) {
	e := newCabin(t)
	for _, c := range []struct {
		text     string
		intent   string
		decision intent.Decision
		stage    string // MatchedStage, when it matters
	}{
		{"打开空调", "cabin_ac_on", intent.Execute, "keyword"},
		{"把空调调到22度", "cabin_set_ac", intent.Execute, "keyword"},
		{"风再大一点", "cabin_fan_up", intent.Execute, "classifier"},
		{"turn the fan down please", "cabin_fan_down", intent.Execute, ""},
		{"导航去虹桥机场", "cabin_nav_to", intent.Execute, "keyword"},
		{"今天股市怎么样", "oos", intent.Reject, ""},
		{"xyz", "", intent.Reject, ""},
	} {
		r, err := e.Route(context.Background(), c.text)
		if err != nil {
			t.Fatal(err)
		}
		if (c.intent != "" && r.Intent != c.intent) || r.Decision != c.decision || (c.stage != "" && r.MatchedStage != c.stage) {
			t.Errorf("Route(%q) = %s %s via %q (%s), want %s %s via %q", c.text, r.Intent, r.Decision, r.MatchedStage, r.Reason, c.intent, c.decision, c.stage)
		}
		if r.Decision == intent.Reject != r.OutOfScope {
			t.Errorf("Route(%q): decision %s but unknown_detected %v", c.text, r.Decision, r.OutOfScope)
		}
		if len(r.Stages) != 3 || r.Reason == "" {
			t.Errorf("Route(%q): %d stage records, reason %q", c.text, len(r.Stages), r.Reason)
		}
		for i := 1; i < len(r.Candidates); i++ {
			if r.Candidates[i].Score > r.Candidates[i-1].Score {
				t.Errorf("Route(%q): candidates not best first: %v", c.text, r.Candidates)
			}
		}
	}
}

// stub is a Matcher test double for the remote and model stages.
type stub struct {
	cands []intent.Candidate
	err   error
	calls int
}

func (s *stub) Match(context.Context, string) ([]intent.Candidate, error) {
	s.calls++
	return s.cands, s.err
}

func TestRemoteStage(t *testing.T) {
	for _, c := range []struct {
		name   string
		remote *stub
		intent string
		errMsg string
	}{
		{"agrees", &stub{cands: []intent.Candidate{{Intent: "cabin_seat_heat", Score: 0.9}}}, "cabin_seat_heat", ""},
		{"fails", &stub{err: errors.New("connection refused")}, "cabin_seat_heat", "connection refused"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := intent.New(context.Background(), cabinConfig(), intent.WithRemote(c.remote), intent.WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				t.Fatal(err)
			}
			r, err := e.Route(context.Background(), "座椅有点冷")
			if err != nil {
				t.Fatal(err)
			}
			last := r.Stages[len(r.Stages)-1]
			if last.Stage != intent.StageRemote || last.Error != c.errMsg || c.remote.calls != 1 || r.Intent != c.intent {
				t.Errorf("stage %s error %q calls %d intent %s", last.Stage, last.Error, c.remote.calls, r.Intent)
			}
		})
	}
}

func TestModelStageOnlyWhenNotExecuting(t *testing.T) {
	model := &stub{cands: []intent.Candidate{{Intent: "cabin_call", Score: 1}}}
	e, err := intent.New(context.Background(), cabinConfig(), intent.WithModel(model))
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.Route(context.Background(), "打开空调")
	if err != nil {
		t.Fatal(err)
	}
	if model.calls != 0 || r.Decision != intent.Execute {
		t.Fatalf("confident local route: model called %d times, decision %s", model.calls, r.Decision)
	}
	r, err = e.Route(context.Background(), "联系一下老王")
	if err != nil {
		t.Fatal(err)
	}
	last := r.Stages[len(r.Stages)-1]
	if model.calls != 1 || last.Stage != intent.StageModel || r.Intent != "cabin_call" || r.Decision == intent.Reject {
		t.Errorf("model called %d times, last stage %s, routed %s %s (%s)", model.calls, last.Stage, r.Intent, r.Decision, r.Reason)
	}
}

func TestNewIsDeterministic(t *testing.T) {
	a := newCabin(t)
	b, err := intent.New(context.Background(), cabinConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"风再大一点", "play something", "带我回家"} {
		ra, _ := a.Route(context.Background(), text)
		rb, _ := b.Route(context.Background(), text)
		if ra.Intent != rb.Intent || ra.Score != rb.Score || ra.Margin != rb.Margin {
			t.Errorf("%q: %s %v %v vs %s %v %v", text, ra.Intent, ra.Score, ra.Margin, rb.Intent, rb.Score, rb.Margin)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	two := []intent.Intent{{ID: "a", Examples: []string{"x"}}, {ID: "b", Examples: []string{"y"}}}
	for _, c := range []struct {
		name string
		cfg  intent.Config
	}{
		{"no intents", intent.Config{}},
		{"no id", intent.Config{Intents: []intent.Intent{{Examples: []string{"x"}}}}},
		{"duplicate id", intent.Config{Intents: append(two, intent.Intent{ID: "a"})}},
		{"unknown stage", intent.Config{Intents: two, Stages: []string{"bert"}}},
		{"one class", intent.Config{Intents: two[:1]}},
		{"bad regex", intent.Config{Intents: two, Rules: intent.Rules{Stop: intent.Phrases{Regex: []string{"("}}}}},
		{"hash bits", intent.Config{Intents: two, Classifier: intent.ClassifierConfig{Features: intent.Features{WordNgrams: 1, HashBits: 40}}}},
	} {
		if _, err := intent.New(context.Background(), c.cfg); !errors.Is(err, intent.ErrConfig) {
			t.Errorf("%s: err %v, want ErrConfig", c.name, err)
		}
	}
}

func TestRouteStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := newCabin(t).Route(ctx, "打开空调"); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
}
