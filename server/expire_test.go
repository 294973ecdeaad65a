package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/store/storetest"
)

// questionsState is the state of the agents that ask several questions
// and questions that expire.
type questionsState struct {
	Items    []string `json:"items,omitempty"`
	Verdicts []string `json:"verdicts,omitempty"`
	// ExpireMS is how long the approval question waits; below zero, its
	// deadline has passed when it is asked.
	ExpireMS int      `json:"expire_ms,omitempty"`
	Path     string   `json:"path,omitempty"`
	Trail    []string `json:"trail,omitempty"`
}

type keep struct {
	Keep bool `json:"keep"`
}

// questionAgents are "review", whose fan-out asks one question per item,
// and "approve", a chain plan → approve → publish whose approval expires
// and whose nodes leave a trail (for breakpoints and goto).
func questionAgents(t testing.TB) *server.Registry {
	t.Helper()
	review := graph.New[questionsState]("review").
		Node("review", graph.Map(func(s questionsState) []string { return s.Items },
			func(ctx context.Context, item string) (string, error) {
				v, err := graph.Ask[keep](ctx, map[string]string{"question": "Keep " + item + "?"})
				return fmt.Sprintf("%s:%v", item, v.Keep), err
			},
			func(s questionsState, rs []string) (questionsState, error) { s.Verdicts = rs; return s, nil })).
		Edge(graph.Start, "review").Edge("review", graph.End)
	step := func(name string) graph.NodeFunc[questionsState] {
		return func(_ context.Context, s questionsState) (questionsState, error) {
			s.Trail = append(s.Trail, name)
			return s, nil
		}
	}
	approve := graph.New[questionsState]("approve").
		Node("plan", step("plan")).
		Node("approve", func(ctx context.Context, s questionsState) (questionsState, error) {
			if s.ExpireMS == 0 {
				s.Trail = append(s.Trail, "approve")
				return s, nil
			}
			v, err := graph.Ask[keep](ctx, map[string]string{"question": "Publish?"},
				graph.Expires(time.Now().Add(time.Duration(s.ExpireMS)*time.Millisecond), keep{Keep: false}))
			if err != nil {
				return s, err
			}
			s.Path = map[bool]string{true: "published", false: "held"}[v.Keep]
			s.Trail = append(s.Trail, "approve")
			return s, nil
		}).
		Node("publish", step("publish")).
		Edge(graph.Start, "plan").Edge("plan", "approve").Edge("approve", "publish").Edge("publish", graph.End)
	var r server.Registry
	for _, a := range []server.Agent{
		{Name: "review", Description: "asks one question per item, all at once",
			InputSchema: server.InputSchemaFor[questionsState](), Build: server.Compile(review),
			Reply: func(_ json.RawMessage, pending *checkpoint.Interrupt) string {
				if pending == nil {
					return "done"
				}
				var q struct{ Question string }
				json.Unmarshal(pending.Payload, &q)
				return q.Question
			},
			Answer: func(text string, _ *checkpoint.Interrupt) (json.RawMessage, error) {
				return json.Marshal(keep{Keep: text == "yes"})
			}},
		{Name: "approve", Description: "plans, asks to approve (the question expires), publishes",
			InputSchema: server.InputSchemaFor[questionsState](), Build: server.Compile(approve)},
	} {
		if err := r.Register(a); err != nil {
			t.Fatal(err)
		}
	}
	return &r
}

// TestInterruptsSDK runs sdktest/interrupts.mjs: several pending
// questions answered by id, breakpoints, goto and update, through the
// official LangGraph JS client.
func TestInterruptsSDK(t *testing.T) {
	const key = "interrupts-key"
	ts := startServer(t, server.Options{Agents: questionAgents(t), Keys: []string{key}})
	runSDK(t, ts.URL, key, "", "interrupts.mjs")
}

// TestInterruptsSDKPostgres runs sdktest/interrupts.mjs against two
// replicas on Postgres behind a round-robin balancer.
func TestInterruptsSDKPostgres(t *testing.T) {
	const key = "interrupts-key"
	rs := startReplicas(t, 2, server.Options{Agents: questionAgents(t), Keys: []string{key}})
	runSDK(t, roundRobin(t, rs), key, "", "interrupts.mjs")
}

// TestSeveralQuestionsByID answers three pending questions over HTTP: a
// single value is refused, two are answered by id, the third stays
// pending (and is listed by the thread), then it is answered.
func TestSeveralQuestionsByID(t *testing.T) {
	const key = "q-key"
	ts := startServer(t, server.Options{Agents: questionAgents(t), Keys: []string{key}})
	severalQuestions(t, ts.URL, key)
}

// TestSeveralQuestionsPostgres is TestSeveralQuestionsByID on two
// replicas on Postgres, each request to the next.
func TestSeveralQuestionsPostgres(t *testing.T) {
	const key = "q-key"
	rs := startReplicas(t, 2, server.Options{Agents: questionAgents(t), Keys: []string{key}})
	severalQuestions(t, roundRobin(t, rs), key)
}

func severalQuestions(t *testing.T, url, key string) {
	code, body := call(t, "POST", url+"/threads/r1/runs/wait", key, map[string]any{
		"assistant_id": "review", "if_not_exists": "create", "input": map[string]any{"items": []string{"a", "b", "c"}}})
	if code != http.StatusOK {
		t.Fatalf("start: %d %s", code, body)
	}
	var res struct {
		Interrupts []struct {
			ID    string          `json:"id"`
			Value json.RawMessage `json:"value"`
		} `json:"__interrupt__"`
	}
	if err := json.Unmarshal(body, &res); err != nil || len(res.Interrupts) != 3 {
		t.Fatalf("start: want three questions in __interrupt__, got %s (%v)", body, err)
	}
	ids := []string{res.Interrupts[0].ID, res.Interrupts[1].ID, res.Interrupts[2].ID}
	if !strings.Contains(string(res.Interrupts[2].Value), "Keep c?") {
		t.Fatalf("third question %s, want the third item's", res.Interrupts[2].Value)
	}
	// An update of the state keeps every question pending.
	if code, body := call(t, "POST", url+"/threads/r1/state", key, map[string]any{"values": map[string]any{"path": "edited"}}); code != http.StatusOK {
		t.Fatalf("update state: %d %s", code, body)
	}
	if got := pendingIDs(t, url, key, "r1"); len(got) != 3 {
		t.Fatalf("after a state update, pending %v, want the three questions %v", got, ids)
	}
	resume := func(v any) (int, []byte) {
		return call(t, "POST", url+"/threads/r1/runs/wait", key, map[string]any{"assistant_id": "review", "command": map[string]any{"resume": v}})
	}
	if code, body := resume(map[string]bool{"keep": true}); code != http.StatusUnprocessableEntity || !strings.Contains(string(body), "3 questions") {
		t.Fatalf("one value for three questions: %d %s, want 422 saying three wait", code, body)
	}
	if code, body := resume(map[string]any{ids[0]: map[string]any{"keep": "yes"}}); code != http.StatusUnprocessableEntity || !strings.Contains(string(body), ids[0]) {
		t.Fatalf("an answer of the wrong type: %d %s, want 422 naming the question", code, body)
	}
	code, body = resume(map[string]any{ids[0]: map[string]bool{"keep": true}, ids[2]: map[string]bool{"keep": false}})
	if err := json.Unmarshal(body, &res); code != http.StatusOK || err != nil || len(res.Interrupts) != 1 || res.Interrupts[0].ID != ids[1] {
		t.Fatalf("two answered: %d %s, want the second question still pending", code, body)
	}
	if got := pendingIDs(t, url, key, "r1"); !slices.Equal(got, []string{ids[1]}) {
		t.Fatalf("thread's interrupts %v, want only %s", got, ids[1])
	}
	if code, body := resume(map[string]any{ids[0]: map[string]bool{"keep": true}}); code != http.StatusConflict && code != http.StatusUnprocessableEntity {
		t.Fatalf("answering an answered question: %d %s, want it refused", code, body)
	}
	code, body = resume(map[string]any{ids[1]: map[string]bool{"keep": true}})
	var done questionsState
	if err := json.Unmarshal(body, &done); code != http.StatusOK || err != nil || !slices.Equal(done.Verdicts, []string{"a:true", "b:true", "c:false"}) {
		t.Fatalf("last answer: %d %s, want every verdict", code, body)
	}
}

// TestChatAnswersQuestionsOneByOne: the chat endpoint shows several
// pending questions one at a time; each reply answers the one shown.
func TestChatAnswersQuestionsOneByOne(t *testing.T) {
	const key = "c-key"
	ts := startServer(t, server.Options{Agents: questionAgents(t), Keys: []string{key}})
	code, body := call(t, "POST", ts.URL+"/threads/c1/runs/wait", key, map[string]any{
		"assistant_id": "review", "if_not_exists": "create", "input": map[string]any{"items": []string{"a", "b", "c"}}})
	if code != http.StatusOK {
		t.Fatalf("start: %d %s", code, body)
	}
	ids := pendingIDs(t, ts.URL, key, "c1")
	for i, step := range []struct{ say, next string }{{"yes", "Keep b?"}, {"no", "Keep c?"}, {"yes", "done"}} {
		code, body := call(t, "POST", ts.URL+"/v1/chat/completions", key, map[string]any{
			"model": "review", "thread_id": "c1", "messages": []map[string]string{{"role": "user", "content": step.say}}})
		var res struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(body, &res); code != http.StatusOK || err != nil || len(res.Choices) != 1 {
			t.Fatalf("answer %d: %d %s", i, code, body)
		}
		if got := res.Choices[0].Message.Content; !strings.Contains(got, step.next) {
			t.Fatalf("answer %d (%s): reply %q, want %q", i, step.say, got, step.next)
		}
		if i < 2 {
			if got := pendingIDs(t, ts.URL, key, "c1"); !slices.Equal(got, ids[i+1:]) {
				t.Fatalf("after answer %d pending %v, want %v", i, got, ids[i+1:])
			}
		}
	}
	code, body = call(t, "GET", ts.URL+"/threads/c1/state", key, nil)
	var st struct {
		Values questionsState `json:"values"`
	}
	if err := json.Unmarshal(body, &st); code != http.StatusOK || err != nil || !slices.Equal(st.Values.Verdicts, []string{"a:true", "b:false", "c:true"}) {
		t.Fatalf("state: %d %s, want each answer in its branch", code, body)
	}
}

// pendingIDs returns the ids of the questions GET /threads/{id} lists,
// failing unless the thread is interrupted.
func pendingIDs(t *testing.T, url, key, thread string) []string {
	t.Helper()
	code, body := call(t, "GET", url+"/threads/"+thread, key, nil)
	var th struct {
		Status     string `json:"status"`
		Interrupts map[string][]struct {
			ID string `json:"id"`
		} `json:"interrupts"`
	}
	if err := json.Unmarshal(body, &th); code != http.StatusOK || err != nil {
		t.Fatalf("get thread: %d %s", code, body)
	}
	if th.Status != "interrupted" {
		t.Fatalf("thread %s is %s, want interrupted", thread, th.Status)
	}
	var ids []string
	for _, qs := range th.Interrupts {
		for _, q := range qs {
			ids = append(ids, q.ID)
		}
	}
	return ids
}

// TestQuestionExpiresAfterRestart: a question whose deadline passed while
// no server ran takes its default answer when a server starts again on
// the database.
func TestQuestionExpiresAfterRestart(t *testing.T) {
	db := filepath.Join(t.TempDir(), "loom.db")
	expiresAfterRestart(t, func() *testServer {
		return startServer(t, server.Options{Agents: questionAgents(t), Keys: []string{"x-key"}, Database: db})
	})
}

// TestQuestionExpiresAfterRestartPostgres is TestQuestionExpiresAfterRestart
// on Postgres, where the sweeper's run is a job.
func TestQuestionExpiresAfterRestartPostgres(t *testing.T) {
	db := storetest.PostgresURL(t)
	expiresAfterRestart(t, func() *testServer {
		return startServer(t, server.Options{Agents: questionAgents(t), Keys: []string{"x-key"}, Database: db})
	})
}

func expiresAfterRestart(t *testing.T, start func() *testServer) {
	const key = "x-key"
	ts := start()
	code, body := call(t, "POST", ts.URL+"/threads/late/runs/wait", key, map[string]any{
		"assistant_id": "approve", "if_not_exists": "create", "input": map[string]any{"expire_ms": 60_000}})
	if code != http.StatusOK || !strings.Contains(string(body), "Publish?") {
		t.Fatalf("start: %d %s, want the approval question", code, body)
	}
	ts.shutdown()

	// The deadline passes while no server runs: here, the question is
	// asked again with a deadline already past, on a thread of its own.
	ts = start()
	code, body = call(t, "POST", ts.URL+"/threads/past/runs/wait", key, map[string]any{
		"assistant_id": "approve", "if_not_exists": "create", "input": map[string]any{"expire_ms": -1000}})
	if code != http.StatusOK || !strings.Contains(string(body), "Publish?") {
		t.Fatalf("start: %d %s, want the approval question", code, body)
	}
	ts.shutdown()

	ts = start()
	var st struct {
		Status string         `json:"status"`
		Values questionsState `json:"values"`
	}
	for range 200 { // the sweep at start continues the thread
		code, body = call(t, "GET", ts.URL+"/threads/past", key, nil)
		if err := json.Unmarshal(body, &st); code != http.StatusOK || err != nil {
			t.Fatalf("get thread: %d %s", code, body)
		}
		if st.Status == "idle" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st.Status != "idle" || st.Values.Path != "held" || !slices.Equal(st.Values.Trail, []string{"plan", "approve", "publish"}) {
		t.Fatalf("expired thread: %s with %+v; want it done on the default path (held)", st.Status, st.Values)
	}
	// The question that has not expired still waits.
	code, body = call(t, "GET", ts.URL+"/threads/late", key, nil)
	if err := json.Unmarshal(body, &st); code != http.StatusOK || err != nil || st.Status != "interrupted" {
		t.Fatalf("thread before its deadline: %d %s, want interrupted", code, body)
	}
}
