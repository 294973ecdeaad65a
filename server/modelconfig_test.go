package server_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/llm/llmtest"
	"github.com/loomkit/loom/llm/openai"
	"github.com/loomkit/loom/server"
)

// askState is the state of the test agent "ask".
type askState struct {
	Text  string `json:"text"`
	Reply string `json:"reply"`
}

// askAgents are testAgents and toneAgents with "ask", whose one node
// asks the model of endpoint (made for the model "small", and wrapped in
// RunModel as loom serve does) twice, whole and streamed, at the
// temperature 0.7.
func askAgents(t *testing.T, endpoint *llmtest.Server) *server.Registry {
	m, err := openai.New(openai.Config{BaseURL: endpoint.BaseURL(), Model: "small", MaxRetries: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	model := server.RunModel(m)
	reg := toneAgents(t)
	g := graph.New[askState]("ask")
	g.Node("ask", func(ctx context.Context, s askState) (askState, error) {
		resp, err := model.Generate(ctx, []llm.Message{llm.User(s.Text)}, llm.WithTemperature(0.7))
		if err != nil {
			return s, err
		}
		streamed, err := llm.Collect(model.Stream(ctx, []llm.Message{llm.User(s.Text)}, llm.WithTemperature(0.7)))
		if err != nil {
			return s, err
		}
		s.Reply = resp.Message.Content + "+" + streamed.Message.Content
		return s, nil
	}).Edge(graph.Start, "ask").Edge("ask", graph.End)
	if err := reg.Register(server.Agent{Name: "ask", Description: "asks the model",
		InputSchema: server.InputSchemaFor[struct {
			Text string `json:"text"`
		}](),
		Build:    server.Compile(g),
		FromChat: func(text string) (json.RawMessage, error) { return json.Marshal(map[string]string{"text": text}) }}); err != nil {
		t.Fatal(err)
	}
	return reg
}

// sent is the model and temperature of each request endpoint received
// since the first from-th.
func sent(endpoint *llmtest.Server, from int) (models []string, temps []any) {
	for _, r := range endpoint.Requests()[from:] {
		models = append(models, r.Model())
		temps = append(temps, r.Body["temperature"])
	}
	return models, temps
}

// TestRunModelSettings: a run's model and temperature (configurable or
// context, its own or its assistant's) reach every call its nodes make,
// whole and streamed; a run that sets none gets the server's model and
// the temperature each call asks for.
func TestRunModelSettings(t *testing.T) {
	endpoint := llmtest.New(t)
	endpoint.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Text("ok") })
	ts := startServer(t, server.Options{Agents: askAgents(t, endpoint), Models: []string{"small", "large"}})

	check := func(what string, body map[string]any, assistant, wantModel string, wantTemp float64) {
		t.Helper()
		from := len(endpoint.Requests())
		if got := reply(t, ts.URL, "", assistant, body); got != "ok+ok" {
			t.Fatalf("%s: reply %q, want ok+ok", what, got)
		}
		models, temps := sent(endpoint, from)
		if want := []string{wantModel, wantModel}; !reflect.DeepEqual(models, want) {
			t.Errorf("%s: the endpoint was asked for models %v, want %v", what, models, want)
		}
		if want := []any{wantTemp, wantTemp}; !reflect.DeepEqual(temps, want) {
			t.Errorf("%s: the endpoint got temperatures %v, want %v", what, temps, want)
		}
	}
	check("configurable", map[string]any{"config": map[string]any{"configurable": map[string]any{"model": "large", "temperature": 0.2}}}, "ask", "large", 0.2)
	check("no configuration", nil, "ask", "small", 0.7)
	check("context, temperature only", map[string]any{"context": map[string]any{"temperature": 0}}, "ask", "small", 0)

	// An assistant's settings, with a run's over them.
	st, b := call(t, "POST", ts.URL+"/assistants", "", map[string]any{"assistant_id": "big", "graph_id": "ask",
		"context": map[string]any{"model": "large", "temperature": 1.5}})
	if st != 200 {
		t.Fatalf("create an assistant: %d %s", st, b)
	}
	check("the assistant's", nil, "big", "large", 1.5)
	check("the run's over the assistant's", map[string]any{"context": map[string]any{"temperature": 2}}, "big", "large", 2)
	check("the agent itself after the assistant's runs", nil, "ask", "small", 0.7)

	// Through the OpenAI chat endpoint, as an extra body field.
	from := len(endpoint.Requests())
	st, b = call(t, "POST", ts.URL+"/v1/chat/completions", "", map[string]any{"model": "ask",
		"messages": []any{map[string]any{"role": "user", "content": "hi"}}, "context": map[string]any{"model": "large"}})
	if st != 200 {
		t.Fatalf("chat completion: %d %s", st, b)
	}
	if models, _ := sent(endpoint, from); !reflect.DeepEqual(models, []string{"large", "large"}) {
		t.Errorf("chat completion with context model large: the endpoint was asked for %v", models)
	}

	// The schema every agent serves lists the models.
	st, b = call(t, "GET", ts.URL+"/assistants/tone/schemas", "", nil)
	var schemas struct {
		Config struct {
			Properties map[string]struct {
				Enum    []string `json:"enum"`
				Maximum float64  `json:"maximum"`
			} `json:"properties"`
		} `json:"config_schema"`
	}
	if st != 200 || json.Unmarshal(b, &schemas) != nil {
		t.Fatalf("schemas: %d %s", st, b)
	}
	p := schemas.Config.Properties
	if _, ok := p["tone"]; !ok || !reflect.DeepEqual(p["model"].Enum, []string{"small", "large"}) || p["temperature"].Maximum != 2 {
		t.Errorf("tone's config schema: %s, want its own tone with model (small, large) and temperature (up to 2)", b)
	}
}

// TestRunModelSettingsRefused: a model the server does not list, or a
// temperature outside 0 to 2, is a 422 that says what would do, on a run
// and on an assistant, and nothing reaches the model.
func TestRunModelSettingsRefused(t *testing.T) {
	endpoint := llmtest.New(t)
	endpoint.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Text("ok") })
	ts := startServer(t, server.Options{Agents: askAgents(t, endpoint), Models: []string{"small", "large"}})
	for _, c := range []struct {
		name     string
		settings map[string]any
		want     []string
	}{
		{"unknown model", map[string]any{"model": "huge"}, []string{`\"huge\"`, "small, large"}},
		{"temperature above 2", map[string]any{"temperature": 2.5}, []string{"temperature", "2.5"}},
		{"temperature below 0", map[string]any{"temperature": -0.1}, []string{"temperature", "-0.1"}},
		{"model not a name", map[string]any{"model": 3}, []string{"model"}},
	} {
		for _, where := range []string{"config", "context"} {
			var body map[string]any
			if where == "config" {
				body = map[string]any{"config": map[string]any{"configurable": c.settings}}
			} else {
				body = map[string]any{"context": c.settings}
			}
			for _, agent := range []string{"ask", "tone", "demo"} {
				run := map[string]any{"assistant_id": agent, "input": map[string]any{"text": "x"}}
				if agent == "demo" {
					run["input"] = map[string]any{"title": "x"}
				}
				for k, v := range body {
					run[k] = v
				}
				st, b := call(t, "POST", ts.URL+"/runs/wait", "", run)
				if st != 422 || !containsAll(string(b), c.want) {
					t.Errorf("%s in %s, run of %s: %d %s, want 422 naming %v", c.name, where, agent, st, b, c.want)
				}
			}
			st, b := call(t, "POST", ts.URL+"/assistants", "", map[string]any{"graph_id": "ask", where: body[where]})
			if st != 422 || !containsAll(string(b), c.want) {
				t.Errorf("%s in %s, assistant: %d %s, want 422 naming %v", c.name, where, st, b, c.want)
			}
		}
	}
	if n := len(endpoint.Requests()); n != 0 {
		t.Errorf("refused runs made %d model calls, want none", n)
	}

	// A server that lists no models takes none by name.
	bare := startServer(t, server.Options{Agents: askAgents(t, endpoint)})
	st, b := call(t, "POST", bare.URL+"/runs/wait", "", map[string]any{"assistant_id": "ask", "input": map[string]any{"text": "x"},
		"context": map[string]any{"model": "small"}})
	if st != 422 || !strings.Contains(string(b), "no model configured") {
		t.Errorf("a model on a server without models: %d %s, want 422 saying none is configured", st, b)
	}
}

// TestAgentDeclaresModelSetting: an agent whose schema declares model or
// temperature itself is refused when the server starts.
func TestAgentDeclaresModelSetting(t *testing.T) {
	var reg server.Registry
	if err := reg.Register(server.Agent{Name: "own", Build: server.Compile(echoGraph()),
		ConfigSchema: server.ConfigSchemaFor[struct {
			Temperature float64 `json:"temperature,omitempty"`
		}]()}); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(t.Context(), server.Options{Agents: &reg, Database: filepath.Join(t.TempDir(), "loom.db"), Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		srv.Close()
		t.Fatal("an agent declaring temperature was served")
	}
	if !strings.Contains(err.Error(), `"temperature"`) || !strings.Contains(err.Error(), "own") {
		t.Fatalf("error %q, want it to name the agent and temperature", err)
	}
}

// containsAll reports whether s contains every one of subs.
func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
