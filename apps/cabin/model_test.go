package cabin

import (
	"slices"
	"strings"
	"testing"

	"github.com/loomkit/loom/llm/llmtest"
	"github.com/loomkit/loom/llm/openai"
)

// The model planner is consulted only when the local planners decline; its
// plan is decoded through contract and checked against the catalogue; when
// it fails, the local answer stands.
func TestModelPlanner(t *testing.T) {
	decision := func(json string) llmtest.Reply { return llmtest.Text("<DECISION>" + json + "</DECISION>") }
	for _, c := range []struct {
		name     string
		replies  []llmtest.Reply
		text     string
		typ      string
		says     string
		backend  string
		requests int
	}{
		{"plans what the local planners cannot", []llmtest.Reply{decision(`{"kind":"single","steps":[{"intent":"cabin_set_ac","slots":{"temperature":"22"}}]}`)},
			"有点热", typeWorkflowResult, "22 度", "model", 1},
		{"an unknown intent goes back to the model", []llmtest.Reply{
			decision(`{"kind":"single","steps":[{"intent":"cabin_cool_down"}]}`),
			decision(`{"kind":"single","steps":[{"intent":"cabin_ac_on"}]}`)},
			"有点热", typeWorkflowResult, "空调已打开", "model", 2},
		{"malformed JSON is corrected", []llmtest.Reply{llmtest.Text("I think you want the AC on."), decision(`{"kind":"single","steps":[{"intent":"cabin_ac_on"}]}`)},
			"有点热", typeWorkflowResult, "空调已打开", "model", 2},
		{"a conditional plan", []llmtest.Reply{decision(`{"kind":"conditional","steps":[{"intent":"cs_query_order","slots":{"order_id":"B456"}},
			{"intent":"cs_transfer_human","depends_on":[1],"condition":{"step":1,"field":"order_status","operator":"in","value":["shipped"]}}]}`)},
			"B456那单寄出来了没有，寄了的话找个人帮我看看", typeWorkflowResult, "工单", "model", 1},
		{"out of scope rejects", []llmtest.Reply{decision(`{"kind":"out_of_scope"}`)},
			"今天股市怎么样", typeReject, "帮不了", "model", 1},
		{"route to cloud, out of scope for the model, rejects (§27.2)", []llmtest.Reply{decision(`{"kind":"out_of_scope"}`)},
			"起雾了", typeReject, "帮不了", "model", 1},
		{"a failing model leaves the local answer", []llmtest.Reply{llmtest.ServerError()},
			"有点热", typeReject, "帮不了", "model-fallback", 1},
		{"a clear request never asks the model", nil, "打开车窗", typeWorkflowResult, "已打开车窗", "", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := llmtest.New(t, c.replies...)
			m, err := openai.New(openai.Config{BaseURL: srv.BaseURL(), Model: "test", MaxRetries: -1, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			a := newAPI(t, Options{Model: m})
			r := a.chat("s", c.text)
			want(t, r, c.typ, statusOf(c.typ), c.says)
			backend := ""
			if r.Debug.Planner != nil {
				backend = r.Debug.Planner.Backend
			}
			if backend != c.backend || len(srv.Requests()) != c.requests {
				t.Errorf("planner backend %q after %d model requests, want %q after %d (%+v)", backend, len(srv.Requests()), c.backend, c.requests, r.Debug.Planner)
			}
			if c.requests > 0 && !strings.Contains(srv.Requests()[0].Messages()[0].Content, "cabin_window_open") {
				t.Error("the model was not shown the intent catalogue")
			}
			if c.requests > 0 && !strings.Contains(srv.Requests()[0].Messages()[0].Content, "tool plugin_order_cancel (write)") {
				t.Error("the catalogue does not name the intents' tools and kinds from the registry")
			}
		})
	}
}

func statusOf(typ string) string {
	return map[string]string{typeWorkflowResult: statusCompleted, typeReject: statusRejected}[typ]
}

// With a model, open small talk is the model's; without one, a template's.
func TestModelSmallTalk(t *testing.T) {
	srv := llmtest.New(t, llmtest.Text("路上注意安全，想听什么歌随时说。"))
	m, err := openai.New(openai.Config{BaseURL: srv.BaseURL(), Model: "test", MaxRetries: -1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	r := newAPI(t, Options{Model: m}).chat("s", "讲个笑话")
	want(t, r, typeText, statusSocial, "路上注意安全")
	local := newAPI(t, Options{})
	r = local.chat("s", "讲个笑话")
	want(t, r, typeText, statusSocial)
	if !slices.Contains(local.app.cfg.Responses.Social["open"], r.Message) {
		t.Errorf("without a model: %q is not an open small-talk reply", r.Message)
	}
}
