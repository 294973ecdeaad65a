package server_test

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/loomkit/loom/apps/cabin"
	"github.com/loomkit/loom/apps/report"
	"github.com/loomkit/loom/llm/llmtest"
	"github.com/loomkit/loom/llm/openai"
	"github.com/loomkit/loom/server"
)

// a2aClient resolves assistant's card on url and returns a client that
// sends key with every call.
func a2aClient(t *testing.T, url, assistant, key string) (*a2a.AgentCard, *a2aclient.Client) {
	t.Helper()
	card, err := agentcard.NewResolver(http.DefaultClient).Resolve(t.Context(), url+"/a2a/"+assistant)
	if err != nil {
		t.Fatalf("resolve the card of %s: %v", assistant, err)
	}
	c, err := a2aclient.NewFromCard(t.Context(), card, a2aclient.WithJSONRPCTransport(&http.Client{Transport: keyed{key}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Destroy() })
	return card, c
}

func textMessage(task a2a.TaskID, text string) *a2a.MessageSendParams {
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: text})
	m.TaskID = task
	return &a2a.MessageSendParams{Message: m}
}

// sendTask sends p and returns the task it answers with.
func sendTask(t *testing.T, c *a2aclient.Client, p *a2a.MessageSendParams) *a2a.Task {
	t.Helper()
	res, err := c.SendMessage(t.Context(), p)
	if err != nil {
		t.Fatalf("message/send: %v", err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("message/send returned %T; want a task", res)
	}
	return task
}

// statusText is the text of a task status's message.
func statusText(s a2a.TaskStatus) string {
	if s.Message == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range s.Message.Parts {
		if tp, ok := p.(a2a.TextPart); ok {
			b.WriteString(tp.Text)
		}
	}
	return b.String()
}

// TestA2A: a card per assistant (and the first agent's at the
// conventional path); message/send runs the agent on a thread that is
// the task; a question leaves it input-required and the next message
// answers it; message/stream streams status lines, the reply and the
// end; tasks/cancel stops a running task; tasks belong to their key.
func TestA2A(t *testing.T) {
	ts := startServer(t, server.Options{Keys: []string{a2aKeyA, a2aKeyB}})
	a2aScenario(t, ts)
}

// TestA2APostgres is TestA2A on two replicas on Postgres behind a
// round-robin balancer: a task made on one is read, answered, streamed
// and cancelled on the other.
func TestA2APostgres(t *testing.T) {
	rs := startReplicas(t, 2, server.Options{Keys: []string{a2aKeyA, a2aKeyB}, Heartbeat: 200 * time.Millisecond})
	a2aScenario(t, &testServer{URL: roundRobin(t, rs)})
}

const a2aKeyA, a2aKeyB = "a2a-key-a", "a2a-key-b"

// a2aScenario is TestA2A's calls to ts.
func a2aScenario(t *testing.T, ts *testServer) {
	const keyA, keyB = a2aKeyA, a2aKeyB
	card, a := a2aClient(t, ts.URL, "echo", keyA)
	if card.Name != "echo" || card.URL != ts.URL+"/a2a/echo" || !card.Capabilities.Streaming || card.ProtocolVersion != "0.3.0" ||
		len(card.Skills) != 1 || !strings.Contains(card.Skills[0].Description, "echoes") || card.SecuritySchemes["bearer"] == nil {
		t.Fatalf("echo's card: %+v", card)
	}
	root, err := agentcard.NewResolver(http.DefaultClient).Resolve(t.Context(), ts.URL)
	if err != nil || root.Name != "demo" || root.URL != ts.URL+"/a2a/demo" {
		t.Fatalf("the card at /.well-known/agent-card.json: %+v, %v; want the demo's (the first agent)", root, err)
	}
	if _, err := agentcard.NewResolver(http.DefaultClient).Resolve(t.Context(), ts.URL+"/a2a/nobody"); err == nil {
		t.Error("an unknown assistant has a card")
	}

	_, anon := a2aClient(t, ts.URL, "echo", "")
	if _, err := anon.SendMessage(t.Context(), textMessage("", "hi")); err == nil {
		t.Error("a call without a key was answered")
	}

	// A question: input-required, answered by the next message.
	task := sendTask(t, a, textMessage("", "hi, ask me"))
	if task.Status.State != a2a.TaskStateInputRequired || task.ID == "" || string(task.ID) != task.ContextID || statusText(task.Status) != "Send it?" {
		t.Fatalf("a run that asks: %s %q (id %s, context %s); want input-required with the question", task.Status.State, statusText(task.Status), task.ID, task.ContextID)
	}
	got, err := a.GetTask(t.Context(), &a2a.TaskQueryParams{ID: task.ID})
	if err != nil || got.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("tasks/get of the asking task: %v %v", got, err)
	}
	_, b := a2aClient(t, ts.URL, "echo", keyB)
	if _, err := b.GetTask(t.Context(), &a2a.TaskQueryParams{ID: task.ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("another key's tasks/get: %v; want task not found", err)
	}
	if _, err := b.SendMessage(t.Context(), textMessage(task.ID, "yes")); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("another key answered the task: %v; want task not found", err)
	}
	done := sendTask(t, a, textMessage(task.ID, "yes"))
	if done.ID != task.ID || done.Status.State != a2a.TaskStateCompleted || statusText(done.Status) != "sent=true" || len(done.Artifacts) != 1 {
		t.Fatalf("the answer: %s %q, %d artifacts; want completed with sent=true", done.Status.State, statusText(done.Status), len(done.Artifacts))
	}
	if _, err := a.CancelTask(t.Context(), &a2a.TaskIDParams{ID: task.ID}); !errors.Is(err, a2a.ErrTaskNotCancelable) {
		t.Errorf("cancelling a completed task: %v; want not cancelable", err)
	}

	// A stream: the task, working with the status line, the reply, the end.
	var kinds []string
	var line string
	var final *a2a.TaskStatusUpdateEvent
	var reply string
	for ev, err := range a.SendStreamingMessage(t.Context(), textMessage("", "hello")) {
		if err != nil {
			t.Fatalf("message/stream: %v", err)
		}
		switch e := ev.(type) {
		case *a2a.Task:
			kinds = append(kinds, "task")
		case *a2a.TaskStatusUpdateEvent:
			kinds = append(kinds, "status:"+string(e.Status.State))
			if e.Final {
				final = e
			} else if s := statusText(e.Status); s != "" {
				line = s
			}
		case *a2a.TaskArtifactUpdateEvent:
			kinds = append(kinds, "artifact")
			for _, p := range e.Artifact.Parts {
				if tp, ok := p.(a2a.TextPart); ok {
					reply += tp.Text
				}
			}
		}
	}
	if len(kinds) < 4 || kinds[0] != "task" || final == nil || final.Status.State != a2a.TaskStateCompleted || line != "looking it up" || reply != "sent=false" {
		t.Fatalf("stream %v, status line %q, reply %q; want the task, working with «looking it up», the reply and a final completed", kinds, line, reply)
	}

	// Cancel: a slow run, sent without waiting, as data.
	_, slow := a2aClient(t, ts.URL, "slow", keyA)
	no := false
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.DataPart{Data: map[string]any{"steps": 1000, "ms": 20}})
	started := sendTask(t, slow, &a2a.MessageSendParams{Message: m, Config: &a2a.MessageSendConfig{Blocking: &no}})
	waitFor(t, "the slow task to work", func() bool {
		got, err := slow.GetTask(t.Context(), &a2a.TaskQueryParams{ID: started.ID})
		return err == nil && got.Status.State == a2a.TaskStateWorking
	})
	// Resubscribing: the task as it stands, then its run's status lines.
	var seen []string
	for ev, err := range slow.ResubscribeToTask(t.Context(), &a2a.TaskIDParams{ID: started.ID}) {
		if err != nil {
			t.Fatalf("tasks/resubscribe: %v", err)
		}
		if task, ok := ev.(*a2a.Task); ok {
			seen = append(seen, "task:"+string(task.Status.State))
		}
		if st, ok := ev.(*a2a.TaskStatusUpdateEvent); ok && strings.HasPrefix(statusText(st.Status), "step ") {
			seen = append(seen, "step")
			break
		}
	}
	if len(seen) != 2 || seen[0] != "task:working" || seen[1] != "step" {
		t.Fatalf("tasks/resubscribe gave %v; want the working task, then a step", seen)
	}
	cancelled, err := slow.CancelTask(t.Context(), &a2a.TaskIDParams{ID: started.ID})
	if err != nil || cancelled.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("tasks/cancel: %v %v; want canceled", cancelled, err)
	}
	if got, err := slow.GetTask(t.Context(), &a2a.TaskQueryParams{ID: started.ID}); err != nil || got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("tasks/get after the cancel: %v %v; want canceled", got, err)
	}
	// The echo's task is not the slow agent's.
	if _, err := slow.GetTask(t.Context(), &a2a.TaskQueryParams{ID: task.ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("the slow agent's tasks/get of an echo task: %v; want task not found", err)
	}
}

// TestA2ABadInput: what is wrong with a call is a JSON-RPC error or a
// 4xx naming it, never a 5xx.
func TestA2ABadInput(t *testing.T) {
	const key = "a2a-bad-key"
	ts := startServer(t, server.Options{Keys: []string{key}, MaxBody: 4 << 10})
	url := ts.URL + "/a2a/echo"
	rpc := func(method string, params any) string {
		return string(must(json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})))
	}
	msg := func(parts ...map[string]any) map[string]any {
		return map[string]any{"message": map[string]any{"kind": "message", "messageId": "m1", "role": "user", "parts": parts}}
	}
	text := map[string]any{"kind": "text", "text": "hi"}
	for _, c := range []struct {
		name, method, url, key, body string
		status, code                 int
		says                         string
	}{
		{"no key", "POST", url, "", rpc("message/send", msg(text)), 401, 0, "API key"},
		{"GET", "GET", url, key, "", 405, -32600, "POST"},
		{"unknown assistant", "POST", ts.URL + "/a2a/nobody", key, rpc("message/send", msg(text)), 404, -32600, "nobody"},
		{"too large", "POST", url, key, rpc("message/send", msg(map[string]any{"kind": "text", "text": strings.Repeat("x", 5<<10)})), 413, -32600, "larger than"},
		{"not JSON", "POST", url, key, "{", 200, -32700, ""},
		{"unknown method", "POST", url, key, rpc("tasks/explode", map[string]any{}), 200, -32601, ""},
		{"no message", "POST", url, key, rpc("message/send", map[string]any{}), 200, -32602, "message is required"},
		{"no parts", "POST", url, key, rpc("message/send", msg()), 200, -32602, "no text and no data"},
		{"a file", "POST", url, key, rpc("message/send", msg(map[string]any{"kind": "file", "file": map[string]any{"uri": "file:///etc/passwd"}})), 200, -32005, "file"},
		{"text and data", "POST", url, key, rpc("message/send", msg(text, map[string]any{"kind": "data", "data": map[string]any{"text": "x"}})), 200, -32602, "not both"},
		{"data the agent does not take", "POST", url, key, rpc("message/send", msg(map[string]any{"kind": "data", "data": map[string]any{"text": 5}})), 200, -32602, "text"},
		{"a bad task id", "POST", url, key, rpc("tasks/get", map[string]any{"id": "../../etc"}), 200, -32001, ""},
		{"an unknown task", "POST", url, key, rpc("tasks/get", map[string]any{"id": "missing"}), 200, -32001, "missing"},
		{"answering an unknown task", "POST", url, key, rpc("message/send", map[string]any{"message": map[string]any{"kind": "message", "messageId": "m", "role": "user", "taskId": "missing", "parts": []any{text}}}), 200, -32001, "missing"},
		{"push", "POST", url, key, rpc("tasks/pushNotificationConfig/get", map[string]any{"taskId": "x"}), 200, -32003, ""},
		{"1.0: a task without an id", "POST", url, key, rpc("GetTask", map[string]any{}), 200, -32602, "params.id"},
		{"1.0: an unknown task", "POST", url, key, rpc("CancelTask", map[string]any{"id": "missing"}), 200, -32001, "missing"},
		{"1.0: listing tasks", "POST", url, key, rpc("ListTasks", map[string]any{}), 200, -32004, "GetTask"},
		{"1.0: data that is not an object", "POST", url, key, rpc("SendMessage", map[string]any{"message": map[string]any{"messageId": "m", "role": "ROLE_USER", "parts": []any{map[string]any{"data": []int{1}}}}}), 200, -32602, "object"},
		{"1.0: a file", "POST", url, key, rpc("SendMessage", map[string]any{"message": map[string]any{"messageId": "m", "role": "ROLE_USER", "parts": []any{map[string]any{"url": "file:///etc/passwd"}}}}), 200, -32005, "file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, body := call(t, c.method, c.url, c.key, c.body)
			if status != c.status {
				t.Fatalf("status %d; want %d: %s", status, c.status, body)
			}
			if !strings.Contains(string(body), c.says) {
				t.Errorf("answer %s does not say %q", body, c.says)
			}
			if c.code == 0 {
				return
			}
			var resp struct {
				Error *struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &resp); err != nil || resp.Error == nil || resp.Error.Code != c.code {
				t.Errorf("answer %s; want JSON-RPC error %d", body, c.code)
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestA2ASDK: the official A2A JavaScript SDK (its 1.0 client, and its
// 0.3 client through the compatibility layer) fetches a card, sends a
// message to the cabin, streams a report run (its model a stand-in that
// answers with a template) and answers the demo's input-required task.
func TestA2ASDK(t *testing.T) {
	const key = "a2a-sdk-key"
	model := llmtest.New(t, llmtest.Text("Here is the template:\n```xml\n"+salesJRXML+"```\n"))
	m, err := openai.New(openai.Config{BaseURL: model.BaseURL(), APIKey: "test", Model: "fake", MaxRetries: 0})
	if err != nil {
		t.Fatal(err)
	}
	reg := testAgents(t)
	quiet := slog.New(slog.DiscardHandler)
	for _, a := range []server.Agent{
		cabin.ServerAgent(cabin.ServerOptions{Logger: quiet}),
		report.ServerAgent(report.ServerOptions{Logger: quiet, Model: m, Schemas: []string{}}),
	} {
		if err := reg.Register(a); err != nil {
			t.Fatal(err)
		}
	}
	ts := startServer(t, server.Options{Agents: reg, Keys: []string{key}})
	runSDK(t, ts.URL, key, "", "a2a.mjs")
}

// salesJRXML is a small template that passes the report designer's checks.
var salesJRXML = func() string {
	b, err := os.ReadFile("../apps/report/testdata/sales.jrxml")
	if err != nil {
		panic(err)
	}
	return string(b)
}()
