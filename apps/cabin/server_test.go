package cabin

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/server/servertest"
	"github.com/loomkit/loom/store/storetest"
)

// serveLoom runs Loom's server with the cabin agent, and the cabin's
// routes mounted beside Loom's API the way `loom serve` mounts them.
func serveLoom(t testing.TB, keys ...string) *api {
	t.Helper()
	return serveLoomOn(t, filepath.Join(t.TempDir(), "loom.db"), keys...)
}

// serveLoomOn is serveLoom on the database at url (a SQLite file or a
// postgres:// URL).
func serveLoomOn(t testing.TB, url string, keys ...string) *api {
	t.Helper()
	var reg server.Registry
	if err := reg.Register(ServerAgent(ServerOptions{Logger: quiet})); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(context.Background(), server.Options{Agents: &reg, Database: url, Logger: quiet, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	return &api{t: t, url: servertest.Serve(t, srv)}
}

// completion posts a chat message to Loom's OpenAI-compatible endpoint
// and returns the assistant's text.
func (a *api) completion(thread, text string) string {
	a.t.Helper()
	var out struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	body := map[string]any{"model": "cabin", "thread_id": thread, "messages": []map[string]string{{"role": "user", "content": text}}}
	if code := a.do("POST", "/v1/chat/completions", body, &out); code != http.StatusOK || len(out.Choices) != 1 {
		a.t.Fatalf("chat completion %q: HTTP %d, %+v", text, code, out)
	}
	return out.Choices[0].Message.Content
}

func TestServerAgent(t *testing.T) {
	a := serveLoom(t)
	// Through Loom's OpenAI-compatible API: the question, then its answer.
	if got := a.completion("driver-1", "导航"); !strings.Contains(got, "去哪里") {
		t.Fatalf("first reply %q", got)
	}
	if got := a.completion("driver-1", "去公司"); !strings.Contains(got, "开始导航去公司") {
		t.Fatalf("second reply %q", got)
	}
	// The run through Loom's API drove the vehicle the cabin routes show:
	// one SQLite file holds the threads and the cabin tables.
	if n := a.vehicle(defaultVehicle).Navigation; n.Destination != "公司" {
		t.Errorf("navigation %+v", n)
	}
	// The web page's confirm card resumes the interrupt with {"accept": true}.
	var th struct {
		ThreadID string `json:"thread_id"`
	}
	a.do("POST", "/threads", map[string]any{"metadata": map[string]string{"assistant_id": "cabin"}}, &th)
	if code := a.do("POST", "/threads/"+th.ThreadID+"/runs/wait", map[string]any{"assistant_id": "cabin", "input": map[string]string{"text": "解锁车门"}}, nil); code != http.StatusOK {
		t.Fatalf("run: HTTP %d", code)
	}
	if !a.vehicle(defaultVehicle).DoorsLocked {
		t.Fatal("doors unlocked before the confirmation")
	}
	if code := a.do("POST", "/threads/"+th.ThreadID+"/runs/wait", map[string]any{"assistant_id": "cabin", "command": map[string]any{"resume": map[string]bool{"accept": true}}}, nil); code != http.StatusOK {
		t.Fatalf("resume: HTTP %d", code)
	}
	if a.vehicle(defaultVehicle).DoorsLocked {
		t.Error("doors still locked after the card was accepted")
	}
	// The seed's endpoints work beside Loom's.
	want(t, a.chat("s1", "关闭车窗"), typeWorkflowResult, statusCompleted, "已关闭车窗")
}

// TestSessionsAreThreads checks that a session of the seed's endpoints is
// a thread of the caller's in Loom's API: listed with its status, its
// state readable, and not found for another API key.
func TestSessionsAreThreads(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		sessionsAreThreads(t, serveLoom(t, "key-a", "key-b"))
	})
	t.Run("postgres", func(t *testing.T) {
		sessionsAreThreads(t, serveLoomOn(t, storetest.PostgresURL(t), "key-a", "key-b"))
	})
}

func sessionsAreThreads(t *testing.T, a *api) {
	type thread struct {
		ThreadID string `json:"thread_id"`
		Status   string `json:"status"`
	}
	search := func() map[string]string {
		var ts []thread
		if code := a.do("POST", "/threads/search", map[string]any{}, &ts); code != http.StatusOK {
			t.Fatalf("search threads: HTTP %d", code)
		}
		out := map[string]string{}
		for _, th := range ts {
			out[th.ThreadID] = th.Status
		}
		return out
	}
	a.key = "key-a"
	want(t, a.chat("car-a", "导航"), typeAskSlot, statusWaitingSlot, "去哪里")
	if got := search(); got["car-a"] != "interrupted" {
		t.Errorf("key-a's threads after a question: %v", got)
	}
	var st struct {
		Values State `json:"values"`
	}
	if code := a.do("GET", "/threads/car-a/state", nil, &st); code != http.StatusOK || st.Values.Session.Intent != "cabin_nav_to" {
		t.Errorf("thread state: HTTP %d, intent %q", code, st.Values.Session.Intent)
	}

	a.key = "key-b"
	if got := search(); len(got) != 0 {
		t.Errorf("key-b sees threads %v", got)
	}
	var e struct {
		Error httpError `json:"error"`
	}
	// Each key has its own session ids: key-b has no car-a, and its turn
	// on car-a starts a session of its own, leaving key-a's question
	// pending.
	if code := a.do("GET", "/api/v1/agent/sessions/car-a", nil, &e); code != http.StatusNotFound || e.Error.Code != "not_found" {
		t.Errorf("key-b reads car-a: HTTP %d %+v", code, e)
	}
	want(t, a.chat("car-a", "打开车窗"), typeWorkflowResult, statusCompleted)
	if got := search(); got["car-a"] != "idle" || len(got) != 1 {
		t.Errorf("key-b's threads after its turn on car-a: %v", got)
	}
	a.key = ""
	if code := a.do("POST", "/api/v1/agent/chat", map[string]any{"session_id": "car-c", "text": "打开车窗"}, &e); code != http.StatusUnauthorized {
		t.Errorf("without a key: HTTP %d %+v", code, e)
	}
	// A session id must be a thread id; nothing is run for one that is not.
	a.key = "key-b"
	if code := a.do("POST", "/api/v1/agent/chat", map[string]any{"session_id": "会话 1", "text": "打开车窗"}, &e); code != http.StatusUnprocessableEntity || e.Error.Code != "invalid_thread_id" {
		t.Errorf("session id that is not a thread id: HTTP %d %+v", code, e)
	}
	if got := search(); len(got) != 1 {
		t.Errorf("key-b's threads after a refused session id: %v", got)
	}

	// key-a's session was not touched by key-b: the answer completes it.
	a.key = "key-a"
	want(t, a.chat("car-a", "去公司"), typeWorkflowResult, statusCompleted, "开始导航去公司")
	if got := search(); got["car-a"] != "idle" || len(got) != 1 {
		t.Errorf("key-a's threads after the answer: %v", got)
	}
}

func TestChatHooks(t *testing.T) {
	in, err := fromChat("  打开车窗 ")
	if err != nil || string(in) != `{"text":"打开车窗"}` {
		t.Errorf("FromChat = %s, %v", in, err)
	}
	for _, c := range []struct{ text, want string }{
		{"去公司", `{"text":"去公司"}`},
		{`{"accept":true}`, `{"accept":true}`},
	} {
		if got, err := chatAnswer(c.text, nil); err != nil || string(got) != c.want {
			t.Errorf("ChatAnswer(%q) = %s, %v", c.text, got, err)
		}
	}
	state := json.RawMessage(`{"reply":{"message":"请告诉我要去哪里。"}}`)
	if got := chatReply(state, &checkpoint.Interrupt{}); got != "请告诉我要去哪里。" {
		t.Errorf("ChatReply = %q", got)
	}
	q, _ := json.Marshal(Question{Message: "确认吗？"})
	if got := chatReply(json.RawMessage(`{}`), &checkpoint.Interrupt{Payload: q}); got != "确认吗？" {
		t.Errorf("ChatReply from the question = %q", got)
	}
	var schema map[string]any
	if err := json.NewDecoder(bytes.NewReader(ServerAgent(ServerOptions{}).InputSchema)).Decode(&schema); err != nil {
		t.Errorf("input schema: %v", err)
	}
}
