package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"slices"
	"strings"
	"unicode"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/intent"
	"github.com/loomkit/loom/schema"
	"github.com/loomkit/loom/store"
)

// Agent is one agent the server serves: how to build its graph on the
// server's saver, and what clients need to call it. Assistants in the
// LangGraph API and models in the OpenAI API are agents.
type Agent struct {
	// Name identifies the agent (assistant_id and graph_id, model id).
	Name string
	// Description says in one line what the agent does.
	Description string
	// DescriptionZh says the same in Chinese, for clients that show the
	// agent in Chinese; "" when the agent has none.
	DescriptionZh string
	// InputSchema is the JSON schema of a run's input, a JSON object whose
	// fields are decoded over the agent's state. A run's input is checked
	// against it before anything is written. Nil accepts any object.
	InputSchema json.RawMessage
	// ConfigSchema, when set, is the JSON schema of the agent's
	// configuration (ConfigSchemaFor makes one from a Go struct): what an
	// assistant's and a run's config.configurable and context may set,
	// such as the locale, a data source or a limit. A run's settings, merged
	// over its assistant's, are checked against it before the run starts
	// (422 naming a wrong field), and the graph's nodes read them with
	// RunConfig. Besides its own fields every agent takes the model
	// settings, model and temperature, which the server adds and RunModel
	// applies; the schema may not declare them. Nil: the agent takes only
	// those.
	ConfigSchema json.RawMessage
	// Budgets, when set, turns a run's configuration (as RunConfig reads
	// it; nil for none) into bounds for the graph's budgets, for a run
	// that starts (see graph.Input.Budgets): budget name → a bound no
	// higher than the declared max, which ConfigSchema should say. Nil or
	// an empty map keeps the declared bounds.
	Budgets func(config json.RawMessage) map[string]int
	// Build compiles the agent's graph on the server's database: it
	// checkpoints on db.Saver() and keeps the agent's own tables beside
	// the checkpoints (db.Migrate, db.SQL, db.Write), so that every
	// replica of a server on Postgres shares them. loom run builds on its
	// SQLite file, and loom graph on a scratch one. Compile makes a Build
	// for an agent that is a graph and nothing more.
	Build func(ctx context.Context, db *store.DB) (graph.Runner, error)
	// Migrations are the agent's own tables, versioned (see store.Migrate;
	// the component is the agent's name). The server applies those the
	// database lacks before it builds the agent, and so does Migrate.
	Migrations []store.Migration
	// FromChat turns a chat message into the input of a new run, for
	// /v1/chat/completions. Nil gives {"input": text}.
	FromChat func(text string) (json.RawMessage, error)
	// Reply turns a run's final state, and the question it waits on if any,
	// into the assistant's text. Nil gives the question's payload, or the
	// state, as JSON.
	Reply func(state json.RawMessage, pending *checkpoint.Interrupt) string
	// Answer turns a chat message into the value that resumes a pending
	// question. Nil gives DefaultAnswer. An error, or a value that does
	// not fit what the question asks for, asks the question again: the
	// chat answers 200 with the question, starts no run, and the question
	// stays pending.
	Answer func(text string, pending *checkpoint.Interrupt) (json.RawMessage, error)
	// Routes, when set, are the agent's own endpoints. New serves the
	// handler it returns under RoutesPrefix through HandleAPI: behind the
	// API's keys and limits, with Caller saying who called; TrackThread
	// and HoldThread on srv make its sessions threads of the server's.
	// runner is what Build made.
	Routes func(srv *Server, runner graph.Runner) http.Handler
	// RoutesPrefix is the pattern Routes is served under, a path ending
	// in "/" (default "/api/v1/" followed by the agent's name and "/").
	RoutesPrefix string
	// UploadLimit, when above zero, lets Routes take multipart/form-data
	// bodies (file uploads) of up to that many bytes, and a little more
	// for the form around the file; other bodies stay JSON within the
	// server's MaxBody.
	UploadLimit int64
	// UploadTypes are media types besides multipart/form-data (such as
	// application/yaml) that Routes take as the body itself, up to
	// UploadLimit bytes; with UploadLimit zero they are refused like any
	// body that is not JSON.
	UploadTypes []string
	// Ready, when set, says whether what the agent depends on beyond the
	// server's database (its data sources, say) can be used now: nil when
	// it can, else an error naming what is down, in words a client may
	// read (no credentials). GET /readyz reports it; an agent that is not
	// ready is still served, and says so when asked.
	Ready func(ctx context.Context) error
	// Panel, when set, is the agent's own view on the web page, beside
	// the chat: panel.js, an ES module the page imports, and panel.css if
	// the agent has one, served under /ui/panels/{name}/. The module's
	// default export is a function the page calls with what it offers
	// (see package server/ui). The assistant's metadata names the files
	// ("panel": {"script", "style"}), so the page names no agent.
	Panel fs.FS
}

// Compile returns an Agent.Build that compiles g to checkpoint on the
// server's saver, with opts.
func Compile[S any](g *graph.Graph[S], opts ...graph.CompileOption) func(context.Context, *store.DB) (graph.Runner, error) {
	return func(_ context.Context, db *store.DB) (graph.Runner, error) {
		return g.Compile(append([]graph.CompileOption{graph.WithSaver(db.Saver())}, opts...)...)
	}
}

// Registry is the set of agents a server serves, by name. The zero value
// is empty and ready to use; it is not safe for concurrent Register.
type Registry struct {
	agents []Agent // sorted by name
}

// Register adds an agent. It fails on an empty or taken name, a name that
// is not a plain identifier, or no Build.
func (r *Registry) Register(a Agent) error {
	switch {
	case a.Name == "" || strings.IndexFunc(a.Name, func(c rune) bool {
		return !(c == '-' || c == '_' || c == '.' || unicode.IsLetter(c) || unicode.IsDigit(c))
	}) >= 0:
		return fmt.Errorf("register agent %q: name must be letters, digits, '-', '_' or '.'", a.Name)
	case a.Build == nil:
		return fmt.Errorf("register agent %q: nil Build", a.Name)
	}
	if _, ok := r.Get(a.Name); ok {
		return fmt.Errorf("register agent %q: %w", a.Name, ErrExists)
	}
	if a.Panel != nil {
		if _, err := fs.Stat(a.Panel, panelScript); err != nil {
			return fmt.Errorf("register agent %q: panel: %w", a.Name, err)
		}
	}
	if a.InputSchema != nil {
		if _, err := schema.Parse(a.InputSchema); err != nil {
			return fmt.Errorf("register agent %q: input schema: %w", a.Name, err)
		}
	}
	if a.ConfigSchema != nil {
		if _, err := schema.Parse(a.ConfigSchema); err != nil {
			return fmt.Errorf("register agent %q: config schema: %w", a.Name, err)
		}
	}
	i, _ := slices.BinarySearchFunc(r.agents, a.Name, func(x Agent, n string) int { return strings.Compare(x.Name, n) })
	r.agents = slices.Insert(r.agents, i, a)
	return nil
}

// Get returns the agent called name.
func (r *Registry) Get(name string) (Agent, bool) {
	if r == nil {
		return Agent{}, false
	}
	i, ok := slices.BinarySearchFunc(r.agents, name, func(x Agent, n string) int { return strings.Compare(x.Name, n) })
	if !ok {
		return Agent{}, false
	}
	return r.agents[i], true
}

// All returns the agents, sorted by name.
func (r *Registry) All() []Agent {
	if r == nil {
		return nil
	}
	return slices.Clone(r.agents)
}

// Names returns the agents' names, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.All()))
	for _, a := range r.All() {
		names = append(names, a.Name)
	}
	return names
}

func (a *Agent) fromChat(text string) (json.RawMessage, error) {
	if a.FromChat != nil {
		return a.FromChat(text)
	}
	return json.Marshal(map[string]string{"input": text})
}

func (a *Agent) reply(state json.RawMessage, pending *checkpoint.Interrupt) string {
	if a.Reply != nil {
		return a.Reply(state, pending)
	}
	if pending != nil {
		return string(pending.Payload)
	}
	return string(state)
}

func (a *Agent) answer(text string, pending *checkpoint.Interrupt) (json.RawMessage, error) {
	if a.Answer != nil {
		return a.Answer(text, pending)
	}
	return DefaultAnswer(text, pending)
}

// DefaultAnswer turns a chat reply to a pending question into a resume
// value. A reply that is a JSON object or array is the value itself (the
// chat path checks it against what the question asks for). Any other
// reply is read by intent.ReadConsent: a yes ("好的", "没问题", "确定",
// "yes", "sounds good", 👍 …) gives {"accept":true,"note":NOTE}, a no ("不要",
// "取消", "对不起，我不同意", "no", "go away" …) {"accept":false,"note":NOTE},
// where NOTE is the rest of the reply ("取消，周三不行" → "周三不行"); a
// cancel word the question's payload holds is what it asks about, not a no
// (intent.ReadConsentTo: "yes, cancel it" to "Cancel order B456?"). A reply
// that is neither — a question ("可以吗？"), a hedge ("好像可以", "maybe"),
// a yes with more in it ("好的，改到周三"), or anything else — is an error
// wrapping intent.ErrUnclear, and the chat asks again.
func DefaultAnswer(text string, pending *checkpoint.Interrupt) (json.RawMessage, error) {
	t := strings.TrimSpace(text)
	if (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && json.Valid([]byte(t)) {
		return json.RawMessage(t), nil
	}
	var question string
	if pending != nil {
		question = string(pending.Payload)
	}
	v := intent.ReadConsentTo(question, t)
	if err := v.Err(); err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		Accept bool   `json:"accept"`
		Note   string `json:"note,omitempty"`
	}{v.Consent == intent.Accepted, v.Note})
}
