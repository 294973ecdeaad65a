package intent_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loomkit/loom/intent"
	"github.com/loomkit/loom/llm/llmtest"
	"github.com/loomkit/loom/llm/openai"
)

var quiet = slog.New(slog.DiscardHandler)

// modelStage is the cabin engine with the model stage on a scripted
// OpenAI-compatible endpoint.
func modelStage(t *testing.T, replies ...llmtest.Reply) (*intent.Engine, *llmtest.Server) {
	t.Helper()
	srv := llmtest.New(t, replies...)
	m, err := openai.New(openai.Config{BaseURL: srv.BaseURL(), Model: "test", MaxRetries: -1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	mm, err := intent.NewModelMatcher(m, cabinConfig(), intent.ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := intent.New(context.Background(), cabinConfig(), intent.WithModel(mm), intent.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	return e, srv
}

// lastStage is the last stage record of a route: the model or remote
// stage, which run after the local ones.
func lastStage(r intent.Result) intent.StageResult { return r.Stages[len(r.Stages)-1] }

func TestModelMatcher(t *testing.T) {
	const unsure = "联系一下老王" // no local stage executes it
	ctx := context.Background()

	t.Run("chooses", func(t *testing.T) {
		e, srv := modelStage(t, llmtest.Text(`{"intent":"cabin_call","confidence":0.92,"alternatives":[{"intent":"cabin_nav_to","confidence":0.05}]}`))
		r, err := e.Route(ctx, unsure)
		if err != nil {
			t.Fatal(err)
		}
		st := lastStage(r)
		want := []intent.Candidate{{Intent: "cabin_call", Score: 0.92, Reason: "model"}, {Intent: "cabin_nav_to", Score: 0.05, Reason: "model"}}
		if st.Stage != intent.StageModel || !st.Accepted || !slices.Equal(st.Candidates, want) || r.Intent != "cabin_call" {
			t.Errorf("model stage %+v; routed %s %s", st, r.Intent, r.Decision)
		}
		// Sure (0.92 ≥ 0.8), the model alone executes what the local
		// stages were unsure of.
		if r.Decision != intent.Execute || !strings.Contains(r.Reason, "the model selects it with confidence 0.92") {
			t.Errorf("decision %s (%s)", r.Decision, r.Reason)
		}
		sys := srv.Requests()[0].Messages()[0].Content
		if !strings.Contains(sys, `- cabin_call (e.g. "打电话给妈妈", "给张三打个电话")`) || strings.Contains(sys, "- oos") {
			t.Errorf("the prompt lists the intents as:\n%s", sys)
		}
	})

	t.Run("corrected", func(t *testing.T) {
		e, srv := modelStage(t,
			llmtest.Text("It is a phone call."),                 // no JSON: contract asks again
			llmtest.Text(`{"intent":"phone","confidence":0.9}`), // not an intent: asked again
			llmtest.Text(`{"intent":"cabin_call","confidence":0.8}`))
		r, err := e.Route(ctx, unsure)
		if err != nil {
			t.Fatal(err)
		}
		// 0.8 reaches the threshold: executed.
		if st := lastStage(r); st.Error != "" || r.Intent != "cabin_call" || r.Decision != intent.Execute {
			t.Errorf("after corrections: stage %+v, routed %s %s", st, r.Intent, r.Decision)
		}
		reqs := srv.Requests()
		if len(reqs) != 3 {
			t.Fatalf("%d requests, want 3", len(reqs))
		}
		msgs := reqs[2].Messages()
		if last := msgs[len(msgs)-1].Content; !strings.Contains(last, "phone is not an intent of the list") {
			t.Errorf("the third request ends with %q", last)
		}
	})

	t.Run("none is out of scope", func(t *testing.T) {
		e, _ := modelStage(t, llmtest.Text(`<DECISION>{"intent":"none","confidence":0.95}</DECISION>`))
		r, err := e.Route(ctx, unsure)
		if err != nil {
			t.Fatal(err)
		}
		if st := lastStage(r); len(st.Candidates) != 1 || st.Candidates[0].Intent != "oos" || r.Decision != intent.Reject {
			t.Errorf("model stage %+v; decision %s (%s)", st, r.Decision, r.Reason)
		}
	})

	t.Run("keeps answering unknown intents", func(t *testing.T) {
		e, _ := modelStage(t, llmtest.Text(`{"intent":"phone","confidence":0.9}`), llmtest.Text(`{"intent":"dial","confidence":0.9}`))
		r, err := e.Route(ctx, unsure)
		if err != nil {
			t.Fatal(err)
		}
		if st := lastStage(r); !strings.Contains(st.Error, "unknown intents dial") || len(st.Candidates) != 0 {
			t.Errorf("model stage %+v", st)
		}
	})

	t.Run("model down", func(t *testing.T) {
		e, _ := modelStage(t, llmtest.ServerError())
		r, err := e.Route(ctx, unsure)
		if err != nil {
			t.Fatal(err)
		}
		if st := lastStage(r); st.Stage != intent.StageModel || !strings.Contains(st.Error, "500") || r.Decision == intent.Execute {
			t.Errorf("model stage %+v; decision %s", st, r.Decision)
		}
	})
}

func TestRemoteClassifier(t *testing.T) {
	ctx := context.Background()
	ids := func() []string {
		var out []string
		for _, in := range cabinConfig().Intents {
			out = append(out, in.ID)
		}
		return out
	}()
	serve := func(t *testing.T, h http.HandlerFunc) *intent.RemoteClassifier {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return &intent.RemoteClassifier{URL: srv.URL + "/classify", TopK: 3, Timeout: 200 * time.Millisecond, Labels: ids}
	}
	route := func(t *testing.T, rc *intent.RemoteClassifier) intent.StageResult {
		t.Helper()
		e, err := intent.New(ctx, cabinConfig(), intent.WithRemote(rc), intent.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		r, err := e.Route(ctx, "座椅有点冷")
		if err != nil {
			t.Fatal(err)
		}
		st := lastStage(r)
		if st.Stage != intent.StageRemote {
			t.Fatalf("last stage %s", st.Stage)
		}
		return st
	}

	t.Run("candidates", func(t *testing.T) {
		var got struct {
			Text   string   `json:"text"`
			TopK   int      `json:"top_k"`
			Labels []string `json:"labels"`
		}
		rc := serve(t, func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost || r.URL.Path != "/classify" || r.Header.Get("Content-Type") != "application/json" {
				http.Error(w, "bad request line", http.StatusBadRequest)
				return
			}
			json.NewDecoder(r.Body).Decode(&got)
			w.Write([]byte(`{"candidates":[{"intent":"cabin_seat_heat","score":0.81},{"intent":"weather","score":0.1},{"intent":"cabin_ac_on","score":0.07}]}`))
		})
		st := route(t, rc)
		want := []intent.Candidate{{Intent: "cabin_seat_heat", Score: 0.81, Reason: "remote"}, {Intent: "cabin_ac_on", Score: 0.07, Reason: "remote"}}
		if st.Error != "" || !slices.Equal(st.Candidates, want) || !st.Accepted {
			t.Errorf("remote stage %+v", st)
		}
		if got.Text != "座椅有点冷" || got.TopK != 3 || !slices.Equal(got.Labels, ids) {
			t.Errorf("the service got %+v", got)
		}
	})

	t.Run("top label only", func(t *testing.T) {
		st := route(t, serve(t, func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"intent_id":"cabin_seat_heat","score":0.7}`))
		}))
		if len(st.Candidates) != 1 || st.Candidates[0].Intent != "cabin_seat_heat" || st.Candidates[0].Score != 0.7 {
			t.Errorf("remote stage %+v", st)
		}
	})

	for _, c := range []struct {
		name, err string
		h         http.HandlerFunc
	}{
		{"server error", "HTTP 503: warming up", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "warming up", http.StatusServiceUnavailable)
		}},
		{"malformed", "malformed answer", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"candidates":[`)) }},
		{"slow", "context deadline exceeded", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(2 * time.Second):
			case <-r.Context().Done():
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := route(t, serve(t, c.h))
			if !strings.Contains(st.Error, c.err) || len(st.Candidates) != 0 {
				t.Errorf("remote stage %+v, want error %q", st, c.err)
			}
		})
	}

	t.Run("check", func(t *testing.T) {
		for _, rc := range []intent.RemoteClassifier{{URL: "localhost:8000"}, {URL: "ftp://x/y"}, {URL: "http://x", TopK: -1}} {
			if err := rc.Check(); !errors.Is(err, intent.ErrConfig) {
				t.Errorf("Check(%+v) = %v, want ErrConfig", rc, err)
			}
		}
		if err := (&intent.RemoteClassifier{URL: "https://bert.internal/classify"}).Check(); err != nil {
			t.Errorf("Check: %v", err)
		}
	})
}
