package server_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/cabin"
	"github.com/loomkit/loom/server"
)

type lcMsg struct {
	Type    string `json:"type"`
	Content string `json:"content"`
	ID      string `json:"id"`
}

// messagesOf returns the "messages" of a run's values or a state's.
func messagesOf(t *testing.T, b []byte) []lcMsg {
	t.Helper()
	var v struct {
		Messages []lcMsg `json:"messages"`
		Values   *struct {
			Messages []lcMsg `json:"messages"`
		} `json:"values"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if v.Values != nil {
		return v.Values.Messages
	}
	return v.Messages
}

func types(msgs []lcMsg) string {
	var ts []string
	for _, m := range msgs {
		ts = append(ts, m.Type)
	}
	return strings.Join(ts, ",")
}

// A LangGraph chat client sends {"messages": [...]}: the last human
// message is the demo's input, then the answer to its question, and the
// values carry the conversation as LangChain messages.
func TestChatConvention(t *testing.T) {
	const key = "k"
	ts := startServer(t, server.Options{Keys: []string{key}})
	st, b := call(t, "POST", ts.URL+"/threads", key, map[string]any{"thread_id": "chat"})
	if st != 200 {
		t.Fatalf("create thread: %d %s", st, b)
	}
	st, b = call(t, "POST", ts.URL+"/threads/chat/runs/wait", key, map[string]any{"assistant_id": "demo",
		"input": map[string]any{"messages": []any{map[string]any{"type": "human", "content": "launch", "id": "m1"}}}})
	if st != 200 || !strings.Contains(string(b), "__interrupt__") {
		t.Fatalf("first turn: %d %s", st, b)
	}
	msgs := messagesOf(t, b)
	if types(msgs) != "human,ai" || msgs[0].Content != "launch" || msgs[0].ID != "m1" || !strings.Contains(msgs[1].Content, "Approve?") || msgs[1].ID == "" {
		t.Fatalf("first turn's messages %+v", msgs)
	}

	// Not an answer: the question is asked again, nothing runs.
	st, b = call(t, "POST", ts.URL+"/threads/chat/runs/wait", key, map[string]any{"assistant_id": "demo",
		"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "maybe"}}}})
	if st != 422 || !strings.Contains(string(b), "Approve?") {
		t.Fatalf("unclear answer: %d %s", st, b)
	}

	// OpenAI's shape and content parts work too; "yes" answers the question.
	st, b = call(t, "POST", ts.URL+"/threads/chat/runs/wait", key, map[string]any{"assistant_id": "demo",
		"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "yes"}}}}}})
	if st != 200 || !strings.Contains(string(b), `"approved":true`) {
		t.Fatalf("answer: %d %s", st, b)
	}
	st, b = call(t, "GET", ts.URL+"/threads/chat/state", key, nil)
	if st != 200 {
		t.Fatalf("state: %d %s", st, b)
	}
	msgs = messagesOf(t, b)
	if types(msgs) != "human,ai,human,ai" || msgs[2].Content != "yes" || msgs[1].ID == msgs[3].ID {
		t.Fatalf("state's messages %+v", msgs)
	}
	again := messagesOf(t, func() []byte { _, b := call(t, "GET", ts.URL+"/threads/chat/state", key, nil); return b }())
	if again[3].ID != msgs[3].ID {
		t.Fatalf("the reply's id changed between reads: %s, %s", msgs[3].ID, again[3].ID)
	}

	// A streamed run's values carry the conversation too.
	resp := do(t, "POST", ts.URL+"/threads/chat/runs/stream", key, map[string]any{"assistant_id": "demo", "stream_mode": "values",
		"input": map[string]any{"messages": []any{map[string]any{"type": "human", "content": "release"}}}})
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	body := string(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, `"content":"release"`) || !strings.Contains(body, `Checklist \"release\"`) {
		t.Fatalf("stream: %s", body)
	}

	// A run without a thread answers with the conversation it was sent
	// (its thread goes with it), every time.
	for i := range 3 {
		st, b = call(t, "POST", ts.URL+"/runs/wait", key, map[string]any{"assistant_id": "demo",
			"input": map[string]any{"messages": []any{map[string]any{"type": "human", "content": "launch"}}}})
		if msgs := messagesOf(t, b); st != 200 || types(msgs) != "human,ai" || !strings.Contains(msgs[1].Content, "Approve?") {
			t.Fatalf("stateless run %d: %d %s", i, st, b)
		}
	}

	// The agent's own input still works; a wrong message is refused.
	st, b = call(t, "POST", ts.URL+"/runs/wait", key, map[string]any{"assistant_id": "demo", "input": map[string]any{"title": "typed"}})
	if st != 200 || strings.Contains(string(b), `"messages"`) {
		t.Fatalf("typed input: %d %s", st, b)
	}
	for _, in := range []map[string]any{
		{"messages": []any{map[string]any{"type": "human", "content": "x"}}, "title": "x"},
		{"messages": []any{map[string]any{"type": "robot", "content": "x"}}},
		{"messages": []any{map[string]any{"type": "ai", "content": "x"}}},
		{"messages": "launch"},
	} {
		if st, b := call(t, "POST", ts.URL+"/runs/wait", key, map[string]any{"assistant_id": "demo", "input": in}); st != 422 {
			t.Errorf("input %v: %d %s", in, st, b)
		}
	}
}

// chatSend posts messages to /v1/chat/completions as role, text pairs and
// returns the reply and its thread.
func chatSend(t *testing.T, url, key, model string, pairs ...string) (reply, thread string) {
	t.Helper()
	var msgs []map[string]string
	for i := 0; i+1 < len(pairs); i += 2 {
		msgs = append(msgs, map[string]string{"role": pairs[i], "content": pairs[i+1]})
	}
	st, b := call(t, "POST", url+"/v1/chat/completions", key, map[string]any{"model": model, "messages": msgs})
	if st != 200 {
		t.Fatalf("chat %v: %d %s", pairs, st, b)
	}
	var res struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
		ThreadID string `json:"thread_id"`
	}
	if err := json.Unmarshal(b, &res); err != nil || len(res.Choices) != 1 {
		t.Fatalf("chat %v: %v %s", pairs, err, b)
	}
	return res.Choices[0].Message.Content, res.ThreadID
}

// An OpenAI chat client that sends the whole conversation and no thread
// id continues the thread whose conversation it extends.
func TestChatContinuesConversation(t *testing.T) {
	const key, other = "k1", "k2"
	ts := startServer(t, server.Options{Keys: []string{key, other}})
	card, t1 := chatSend(t, ts.URL, key, "demo", "user", "launch")
	if !strings.Contains(card, "Approve?") || t1 == "" {
		t.Fatalf("first turn %q on %q", card, t1)
	}
	// The same conversation from another key is not that thread.
	if reply, t2 := chatSend(t, ts.URL, other, "demo", "user", "launch", "assistant", card, "user", "yes"); t2 == t1 || !strings.Contains(reply, `\"yes\"`) {
		t.Fatalf("another key's turn %q on %q", reply, t2)
	}
	reply, t2 := chatSend(t, ts.URL, key, "demo", "user", "launch", "assistant", card, "user", "yes")
	if t2 != t1 || !strings.Contains(reply, `"approved":true`) {
		t.Fatalf("second turn %q on %q, want the answer on %q", reply, t2, t1)
	}
	// The third turn extends the second: same thread, a new checklist
	// (spaces in the sent history do not matter).
	reply3, t3 := chatSend(t, ts.URL, key, "demo", "user", "launch", "assistant", "  "+card, "user", "yes", "assistant", reply+"\n", "user", "release")
	if t3 != t1 || !strings.Contains(reply3, `Checklist \"release\"`) {
		t.Fatalf("third turn %q on %q, want %q", reply3, t3, t1)
	}
	// A regenerated second turn, or an edited one, goes another way from
	// the card: a copy of the thread as the card left it answers it.
	regen, t6 := chatSend(t, ts.URL, key, "demo", "user", "launch", "assistant", card, "user", "yes")
	if t6 == t1 || t6 == "" || !strings.Contains(regen, `"approved":true`) {
		t.Fatalf("regenerated second turn %q on %q (first thread %q)", regen, t6, t1)
	}
	edited, t7 := chatSend(t, ts.URL, key, "demo", "user", "launch", "assistant", card, "user", "no")
	if t7 == t1 || t7 == t6 || !strings.Contains(edited, `"approved":false`) {
		t.Fatalf("edited second turn %q on %q", edited, t7)
	}
	// and the copy goes on from there.
	if reply, t8 := chatSend(t, ts.URL, key, "demo", "user", "launch", "assistant", card, "user", "no", "assistant", edited, "user", "release"); t8 != t7 || !strings.Contains(reply, `Checklist \"release\"`) {
		t.Fatalf("after the edit: %q on %q, want %q", reply, t8, t7)
	}

	// An assistant message the client changed, or a regenerated first
	// turn, is a new conversation.
	if reply, t4 := chatSend(t, ts.URL, key, "demo", "user", "launch", "assistant", "something else", "user", "yes"); t4 == t1 || !strings.Contains(reply, `\"yes\"`) {
		t.Fatalf("edited history: %q on %q", reply, t4)
	}
	if _, t5 := chatSend(t, ts.URL, key, "demo", "user", "launch"); t5 == t1 {
		t.Fatalf("a regenerated first turn continued %q", t1)
	}
	// The LangGraph API sees the same conversation.
	st, b := call(t, "GET", ts.URL+"/threads/"+t1+"/state", key, nil)
	if msgs := messagesOf(t, b); st != 200 || types(msgs) != "human,ai,human,ai,human,ai" {
		t.Fatalf("state: %d %s", st, b)
	}
}

// The cabin's confirmation, answered by a client that resends the whole
// conversation: [解锁车门, its question, 确定] unlocks, and the same
// conversation through the LangGraph API's chat convention does too,
// with the same replies.
func TestChatContinuesCabin(t *testing.T) {
	const key = "k"
	var reg server.Registry
	if err := reg.Register(cabin.ServerAgent(cabin.ServerOptions{Logger: slog.New(slog.DiscardHandler)})); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, server.Options{Keys: []string{key}, Agents: &reg})
	asked, t1 := chatSend(t, ts.URL, key, "cabin", "user", "解锁车门")
	if asked == "" || t1 == "" {
		t.Fatalf("first turn %q on %q", asked, t1)
	}
	done, t2 := chatSend(t, ts.URL, key, "cabin", "user", "解锁车门", "assistant", asked, "user", "确定")
	t.Logf("asked %q, then %q", asked, done)
	if t2 != t1 || strings.Contains(done, "帮不了") || !strings.Contains(done, "解锁") || done == asked {
		t.Fatalf("confirmation %q on %q, want the unlock on %q (asked %q)", done, t2, t1, asked)
	}

	// A new server, whose car's doors are locked again.
	ts = startServer(t, server.Options{Keys: []string{key}, Agents: &reg})
	st, b := call(t, "POST", ts.URL+"/threads/lg/runs/wait", key, map[string]any{"assistant_id": "cabin", "if_not_exists": "create",
		"input": map[string]any{"messages": []any{map[string]any{"type": "human", "content": "解锁车门"}}}})
	msgs := messagesOf(t, b)
	if st != 200 || types(msgs) != "human,ai" || msgs[1].Content != strings.TrimSpace(asked) {
		t.Fatalf("LangGraph first turn: %d %s", st, b)
	}
	st, b = call(t, "POST", ts.URL+"/threads/lg/runs/wait", key, map[string]any{"assistant_id": "cabin",
		"input": map[string]any{"messages": []any{map[string]any{"type": "human", "content": "确定"}}}})
	msgs = messagesOf(t, b)
	if st != 200 || types(msgs) != "human,ai,human,ai" || strings.TrimSpace(msgs[3].Content) != strings.TrimSpace(done) {
		t.Fatalf("LangGraph confirmation: %d %s\nwant the reply %q", st, b, done)
	}
}

// Every agent loom serve has takes the chat convention: a human message
// in, the conversation (the message and the agent's reply) in the values.
func TestChatConventionEveryAgent(t *testing.T) {
	const key = "k"
	reg := servedAgents(t)
	ts := startServer(t, server.Options{Agents: reg, Keys: []string{key}})
	for agent, text := range map[string]string{
		"demo": "launch", "cabin": "打开车窗", "schedule": "明天下午三点和王总开会",
		"sqlagent": "how many orders are there", "dataagent": "how many orders are there", "report": "make a sales report",
	} {
		st, b := call(t, "POST", ts.URL+"/threads/"+agent+"/runs/wait", key, map[string]any{"assistant_id": agent, "if_not_exists": "create",
			"input": map[string]any{"messages": []any{map[string]any{"type": "human", "content": text}}}})
		msgs := messagesOf(t, b)
		if st != 200 || types(msgs) != "human,ai" || msgs[0].Content != text || strings.TrimSpace(msgs[1].Content) == "" {
			t.Errorf("%s: %d %.600s", agent, st, b)
		}
		t.Logf("%s: %q → %.200q", agent, text, msgs[len(msgs)-1].Content)
	}
}
