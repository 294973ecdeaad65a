package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/server"
)

// toneSettings is the configuration of the test agent "tone".
type toneSettings struct {
	Tone  string `json:"tone,omitempty" jsonschema:"enum=plain,enum=loud,enum=soft"`
	Times int    `json:"times,omitempty" jsonschema:"minimum=1,maximum=5"`
}

type toneState struct {
	Text  string `json:"text"`
	Reply string `json:"reply"`
}

// toneAgents are testAgents with "tone", which answers with the tone and
// times its run's configuration sets (plain and 1 when unset).
func toneAgents(t *testing.T) *server.Registry {
	reg := testAgents(t)
	g := graph.New[toneState]("tone")
	g.Node("say", func(ctx context.Context, s toneState) (toneState, error) {
		set := toneSettings{Tone: "plain", Times: 1}
		if err := server.RunConfig(ctx, &set); err != nil {
			return s, err
		}
		s.Reply = set.Tone + ":" + strings.Repeat(s.Text, set.Times)
		return s, nil
	}).Edge(graph.Start, "say").Edge("say", graph.End)
	if err := reg.Register(server.Agent{Name: "tone", Description: "answers in the configured tone",
		InputSchema: server.InputSchemaFor[struct {
			Text string `json:"text"`
		}](),
		ConfigSchema: server.ConfigSchemaFor[toneSettings](),
		Build:        server.Compile(g)}); err != nil {
		t.Fatal(err)
	}
	return reg
}

// reply runs assistant with body's fields over {"input": {"text": "x"}}
// and returns the reply, failing unless the run answers 200.
func reply(t *testing.T, url, key, assistant string, body map[string]any) string {
	t.Helper()
	req := map[string]any{"assistant_id": assistant, "input": map[string]any{"text": "x"}}
	for k, v := range body {
		req[k] = v
	}
	st, b := call(t, "POST", url+"/runs/wait", key, req)
	if st != 200 {
		t.Fatalf("run %s: %d %s", assistant, st, b)
	}
	r, _ := mustJSON(t, b)["reply"].(string)
	return r
}

func TestAssistantVersions(t *testing.T) {
	ts := startServer(t, server.Options{Agents: toneAgents(t), Keys: []string{"k1", "k2"}})
	st, b := call(t, "POST", ts.URL+"/assistants", "k1", map[string]any{"assistant_id": "shouty", "graph_id": "tone",
		"name": "Shouty", "config": map[string]any{"configurable": map[string]any{"tone": "loud"}}, "metadata": map[string]any{"team": "a"}})
	if st != 200 {
		t.Fatalf("create: %d %s", st, b)
	}
	if a := mustJSON(t, b); a["assistant_id"] != "shouty" || a["graph_id"] != "tone" || a["version"] != 1.0 || a["name"] != "Shouty" {
		t.Fatalf("created %s", b)
	}
	if got := reply(t, ts.URL, "k1", "shouty", nil); got != "loud:x" {
		t.Fatalf("version 1 answers %q, want loud:x", got)
	}
	// Another key does not see it, and may take the same id.
	if st, b := call(t, "GET", ts.URL+"/assistants/shouty", "k2", nil); st != 404 {
		t.Fatalf("another key reads it: %d %s", st, b)
	}
	st, b = call(t, "POST", ts.URL+"/assistants", "k1", map[string]any{"assistant_id": "shouty", "graph_id": "tone"})
	if st != 409 {
		t.Fatalf("same id again: %d %s, want 409", st, b)
	}
	st, b = call(t, "POST", ts.URL+"/assistants", "k1", map[string]any{"assistant_id": "shouty", "graph_id": "tone", "if_exists": "do_nothing"})
	if st != 200 || mustJSON(t, b)["version"] != 1.0 {
		t.Fatalf("do_nothing: %d %s", st, b)
	}

	// An update is a new version: context over config.configurable.
	st, b = call(t, "PATCH", ts.URL+"/assistants/shouty", "k1", map[string]any{"context": map[string]any{"tone": "soft", "times": 2}, "metadata": map[string]any{"v": 2}})
	if st != 200 {
		t.Fatalf("update: %d %s", st, b)
	}
	if a := mustJSON(t, b); a["version"] != 2.0 || a["metadata"].(map[string]any)["team"] != "a" {
		t.Fatalf("updated %s: want version 2 with the metadata merged", b)
	}
	if got := reply(t, ts.URL, "k1", "shouty", nil); got != "soft:xx" {
		t.Fatalf("version 2 answers %q, want soft:xx", got)
	}
	// The run's own settings go over the assistant's.
	if got := reply(t, ts.URL, "k1", "shouty", map[string]any{"config": map[string]any{"configurable": map[string]any{"times": 3}}}); got != "soft:xxx" {
		t.Fatalf("with the run's times: %q, want soft:xxx", got)
	}
	st, b = call(t, "POST", ts.URL+"/assistants/shouty/versions", "k1", map[string]any{})
	var vs []map[string]any
	if st != 200 || json.Unmarshal(b, &vs) != nil || len(vs) != 2 || vs[0]["version"] != 2.0 {
		t.Fatalf("versions: %d %s", st, b)
	}
	st, b = call(t, "POST", ts.URL+"/assistants/shouty/latest", "k1", map[string]any{"version": 1})
	if st != 200 || mustJSON(t, b)["version"] != 1.0 {
		t.Fatalf("latest 1: %d %s", st, b)
	}
	if got := reply(t, ts.URL, "k1", "shouty", nil); got != "loud:x" {
		t.Fatalf("back at version 1: %q, want loud:x", got)
	}
	if st, b := call(t, "POST", ts.URL+"/assistants/shouty/latest", "k1", map[string]any{"version": 9}); st != 404 {
		t.Fatalf("latest 9: %d %s, want 404", st, b)
	}

	st, b = call(t, "POST", ts.URL+"/assistants/search", "k1", map[string]any{"graph_id": "tone"})
	var found []map[string]any
	if st != 200 || json.Unmarshal(b, &found) != nil || len(found) != 2 || found[0]["assistant_id"] != "shouty" || found[1]["assistant_id"] != "tone" {
		t.Fatalf("search: %d %s, want shouty then tone", st, b)
	}
	st, b = call(t, "GET", ts.URL+"/assistants/shouty/schemas", "k1", nil)
	if st != 200 || !strings.Contains(string(b), `"config_schema":{`) || !strings.Contains(string(b), `"loud"`) {
		t.Fatalf("schemas: %d %s", st, b)
	}

	// Built-in assistants stay as they are.
	for _, m := range []string{"PATCH", "DELETE"} {
		if st, b := call(t, m, ts.URL+"/assistants/tone", "k1", map[string]any{}); st != 409 {
			t.Fatalf("%s a built-in assistant: %d %s, want 409", m, st, b)
		}
	}
	if st, b := call(t, "DELETE", ts.URL+"/assistants/shouty", "k1", nil); st != 204 {
		t.Fatalf("delete: %d %s", st, b)
	}
	if st, b := call(t, "GET", ts.URL+"/assistants/shouty", "k1", nil); st != 404 {
		t.Fatalf("deleted, read: %d %s", st, b)
	}
}

// TestAssistantRefused: what an assistant or a run sets that the agent
// does not take is a 422 that names it, and nothing is created.
func TestAssistantRefused(t *testing.T) {
	ts := startServer(t, server.Options{Agents: toneAgents(t)})
	for _, c := range []struct {
		name string
		body map[string]any
		want string
	}{
		{"unknown field", map[string]any{"graph_id": "tone", "config": map[string]any{"configurable": map[string]any{"volume": 3}}}, `\"volume\"`},
		{"wrong value", map[string]any{"graph_id": "tone", "context": map[string]any{"tone": "angry"}}, "tone"},
		{"config beside configurable", map[string]any{"graph_id": "tone", "config": map[string]any{"recursion_limit": 3}}, "config.recursion_limit"},
		{"agent without configuration of its own", map[string]any{"graph_id": "demo", "context": map[string]any{"tone": "loud"}}, `\"tone\"`},
		{"unknown graph", map[string]any{"graph_id": "nope"}, "nope"},
		{"unknown request field", map[string]any{"graph_id": "tone", "colour": "red"}, `\"colour\"`},
		{"bad id", map[string]any{"graph_id": "tone", "assistant_id": "../x"}, "assistant_id"},
	} {
		st, b := call(t, "POST", ts.URL+"/assistants", "", c.body)
		if st < 400 || st >= 500 || !strings.Contains(string(b), c.want) {
			t.Errorf("%s: %d %s, want a 4xx naming %s", c.name, st, b, c.want)
		}
	}
	st, b := call(t, "POST", ts.URL+"/assistants/count", "", map[string]any{"graph_id": "tone"})
	if st != 200 || string(b) != "1\n" && string(b) != "1" {
		t.Fatalf("count after refusals: %d %s, want only the agent's own", st, b)
	}
}

// TestRunFieldsRefused: a run field the server does not act on is a 422
// naming it, never dropped; those it does act on, or that ask for what
// it does anyway, work.
func TestRunFieldsRefused(t *testing.T) {
	ts := startServer(t, server.Options{Agents: toneAgents(t)})
	for _, c := range []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"feedback_keys": []string{"a"}}, `\"feedback_keys\"`},
		{map[string]any{"langsmith_tracer": map[string]any{}}, `\"langsmith_tracer\"`},
		{map[string]any{"durability": "never"}, "durability"},
		{map[string]any{"config": map[string]any{"tags": []string{"a"}}}, "config.tags"},
		{map[string]any{"config": map[string]any{"configurable": map[string]any{"times": 9}}}, "times"},
		{map[string]any{"context": map[string]any{"mood": "x"}}, `\"mood\"`},
		{map[string]any{"context": "loud"}, "context"},
	} {
		req := map[string]any{"assistant_id": "tone", "input": map[string]any{"text": "x"}}
		for k, v := range c.body {
			req[k] = v
		}
		st, b := call(t, "POST", ts.URL+"/runs/wait", "", req)
		if st != 422 || !strings.Contains(string(b), c.want) {
			t.Errorf("%v: %d %s, want 422 naming %s", c.body, st, b, c.want)
		}
	}
	ok := map[string]any{"durability": "sync", "stream_resumable": true, "stream_subgraphs": true, "checkpoint_during": true,
		"context": map[string]any{"tone": "loud"}}
	if got := reply(t, ts.URL, "", "tone", ok); got != "loud:x" {
		t.Fatalf("supported fields: %q, want loud:x", got)
	}
	if got := reply(t, ts.URL, "", "tone", nil); got != "plain:x" {
		t.Fatalf("no configuration: %q, want the defaults, plain:x", got)
	}
}

// TestAssistantsSDK runs sdktest/assist.mjs (assistants over the cabin,
// refused run fields, batches) with the official LangGraph JS client
// against a server with the agents loom serve registers.
func TestAssistantsSDK(t *testing.T) {
	const key = "assist-key"
	ts := startServer(t, server.Options{Agents: servedAgents(t), Keys: []string{key}})
	runSDK(t, ts.URL, key, "", "assist.mjs")
}

// TestAssistantsPostgres: on two replicas of Postgres behind a
// round-robin balancer an assistant made on one runs on the other, with
// its configuration carried in the run's job.
func TestAssistantsPostgres(t *testing.T) {
	rs := startReplicas(t, 2, server.Options{Agents: toneAgents(t)})
	url := roundRobin(t, rs)
	st, b := call(t, "POST", url+"/assistants", "", map[string]any{"assistant_id": "soft", "graph_id": "tone", "context": map[string]any{"tone": "soft"}})
	if st != 200 {
		t.Fatalf("create: %d %s", st, b)
	}
	if st, b := call(t, "PATCH", url+"/assistants/soft", "", map[string]any{"config": map[string]any{"configurable": map[string]any{"times": 2}}}); st != 200 {
		t.Fatalf("update: %d %s", st, b)
	}
	for range 2 { // one run on each replica
		if got := reply(t, url, "", "soft", nil); got != "soft:xx" {
			t.Fatalf("run: %q, want soft:xx", got)
		}
	}
	st, b = call(t, "POST", url+"/runs/batch", "", []map[string]any{{"assistant_id": "soft", "input": map[string]any{"text": "y"}, "on_completion": "keep"}})
	var runs []map[string]any
	if st != 200 || json.Unmarshal(b, &runs) != nil || len(runs) != 1 {
		t.Fatalf("batch: %d %s", st, b)
	}
	st, b = call(t, "GET", url+"/threads/"+runs[0]["thread_id"].(string)+"/runs/"+runs[0]["run_id"].(string)+"/join", "", nil)
	if st != 200 || mustJSON(t, b)["reply"] != "soft:yy" {
		t.Fatalf("join the batch's run: %d %s, want soft:yy", st, b)
	}
}

// TestSourceSetting: the source setting of the sqlagent and the
// dataagent reaches their graphs: a source they do not have is named in
// the answer.
func TestSourceSetting(t *testing.T) {
	ts := startServer(t, server.Options{Agents: servedAgents(t)})
	for agent, input := range map[string]map[string]any{"sqlagent": {"question": "SELECT 1"}, "dataagent": {"question": "how many orders are there?"}} {
		st, b := call(t, "POST", ts.URL+"/runs/wait", "", map[string]any{"assistant_id": agent, "input": input, "context": map[string]any{"source": "nowhere"}})
		if st != 200 || !strings.Contains(string(b), "nowhere") {
			t.Fatalf("%s with source nowhere: %d %s, want its answer to name the source", agent, st, b)
		}
	}
}

// TestAssistantRunsAndThreads: a run of a created assistant reports the
// assistant's id, and the thread it creates names it in its metadata;
// deleting the assistant with delete_threads deletes those threads and
// no other.
func TestAssistantRunsAndThreads(t *testing.T) {
	ts := startServer(t, server.Options{Agents: toneAgents(t), Keys: []string{"k1"}})
	if st, b := call(t, "POST", ts.URL+"/assistants", "k1", map[string]any{"assistant_id": "loud", "graph_id": "tone", "context": map[string]any{"tone": "loud"}}); st != 200 {
		t.Fatalf("create: %d %s", st, b)
	}
	// A thread made by a run of the assistant, one by a run of the agent.
	start := func(assistant string) (thread, run string) {
		t.Helper()
		st, b := call(t, "POST", ts.URL+"/threads/"+assistant+"-thread/runs", "k1", map[string]any{"assistant_id": assistant,
			"input": map[string]any{"text": "x"}, "if_not_exists": "create"})
		if st != 200 {
			t.Fatalf("run %s: %d %s", assistant, st, b)
		}
		r := mustJSON(t, b)
		if r["assistant_id"] != assistant {
			t.Fatalf("run of %s reports assistant_id %v", assistant, r["assistant_id"])
		}
		thread, run = r["thread_id"].(string), r["run_id"].(string)
		if st, b := call(t, "GET", ts.URL+"/threads/"+thread+"/runs/"+run+"/join", "k1", nil); st != 200 {
			t.Fatalf("join: %d %s", st, b)
		}
		return thread, run
	}
	mine, run := start("loud")
	other, _ := start("tone")
	// Read back once the run is over: from the records.
	st, b := call(t, "GET", ts.URL+"/threads/"+mine+"/runs/"+run, "k1", nil)
	if st != 200 || mustJSON(t, b)["assistant_id"] != "loud" {
		t.Fatalf("finished run: %d %s, want assistant_id loud", st, b)
	}
	st, b = call(t, "GET", ts.URL+"/threads/"+mine+"/runs", "k1", nil)
	var runs []map[string]any
	if st != 200 || json.Unmarshal(b, &runs) != nil || len(runs) != 1 || runs[0]["assistant_id"] != "loud" {
		t.Fatalf("runs of the thread: %d %s, want one with assistant_id loud", st, b)
	}
	st, b = call(t, "GET", ts.URL+"/threads/"+mine, "k1", nil)
	if meta, _ := mustJSON(t, b)["metadata"].(map[string]any); st != 200 || meta["assistant_id"] != "loud" || meta["graph_id"] != "tone" {
		t.Fatalf("thread of the assistant: %d %s, want metadata assistant_id loud, graph_id tone", st, b)
	}

	if st, b := call(t, "DELETE", ts.URL+"/assistants/loud?delete_threads=maybe", "k1", nil); st != 422 {
		t.Fatalf("delete_threads=maybe: %d %s, want 422", st, b)
	}
	if st, b := call(t, "DELETE", ts.URL+"/assistants/loud?delete_threads=true", "k1", nil); st != 204 {
		t.Fatalf("delete with its threads: %d %s", st, b)
	}
	if st, b := call(t, "GET", ts.URL+"/threads/"+mine, "k1", nil); st != 404 {
		t.Fatalf("the assistant's thread after the delete: %d %s, want 404", st, b)
	}
	if st, b := call(t, "GET", ts.URL+"/threads/"+other, "k1", nil); st != 200 {
		t.Fatalf("the agent's thread after the delete: %d %s, want it kept", st, b)
	}
	if st, b := call(t, "DELETE", ts.URL+"/assistants/loud?delete_threads=true", "k1", nil); st != 404 {
		t.Fatalf("delete again: %d %s, want 404", st, b)
	}
}
