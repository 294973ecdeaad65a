package cabin

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/store"
)

// ServerOptions configure the agent as Loom's server and command line
// serve it.
type ServerOptions struct {
	// Locale and ConfigDir pick the configuration (see Options).
	Locale    string
	ConfigDir string
	// Model is the optional model (see openai.NewFromEnv); nil runs local only.
	Model llm.Model
	// Logger receives the agent's logs (default slog.Default()).
	Logger *slog.Logger
}

// Input is a run's input, decoded over State: the first string field is
// what the web page fills with a chat message.
type Input struct {
	Text      string            `json:"text,omitempty" jsonschema:"description=what the driver or customer says\\, e.g. 打开车窗 or 查订单A123，如果没发货就取消"`
	FillSlots map[string]string `json:"fill_slots,omitempty" jsonschema:"description=slot values for a pending question\\, e.g. {\"destination\":\"公司\"}"`
	Accept    *bool             `json:"accept,omitempty" jsonschema:"description=a direct yes or no to a pending confirmation"`
	UserID    string            `json:"user_id,omitempty"`
	VehicleID string            `json:"vehicle_id,omitempty" jsonschema:"description=the simulated car\\, default car-1"`
}

// Settings is what an assistant, or a run's config.configurable or
// context, may set for the cabin on Loom's server.
type Settings struct {
	Locale string `json:"locale,omitempty" jsonschema:"enum=zh-CN,enum=en,description=the language every answer is in\\, whatever the language of the message: zh-CN or en (default: the language of each message)"`
}

// ServerAgent returns the agent as Loom registers it, under the name
// "cabin". Its Build makes an App on the server's saver, with the
// simulated vehicle and order tables in the same database, and the server
// serves that App's Routes under /api/v1/ beside its own API: behind its
// API keys, with every session a thread of the server's.
func ServerAgent(opts ServerOptions) server.Agent {
	return server.Agent{
		Name:          agentName,
		Description:   "in-car assistant and customer service: local intent routing, workflows, confirmations (works without a model)",
		DescriptionZh: "车载助手与客服：本地识别意图，办理业务流程，操作前先确认（无需模型）",
		InputSchema:   server.InputSchemaFor[Input](),
		ConfigSchema:  server.ConfigSchemaFor[Settings](),
		// On the server's database (SQLite or Postgres) the vehicles and
		// orders live beside the checkpoints, shared by every replica.
		Migrations: migrations,
		Build: func(ctx context.Context, db *store.DB) (graph.Runner, error) {
			a, err := New(ctx, Options{Saver: db.Saver(), Store: newSQLStore(db), Locale: opts.Locale, ConfigDir: opts.ConfigDir,
				Model: opts.Model, Logger: opts.Logger})
			if err != nil {
				return nil, err
			}
			return appRunner{a.Runner(), a}, nil
		},
		Routes: func(srv *server.Server, r graph.Runner) http.Handler {
			ar, ok := r.(appRunner)
			if !ok { // not built by this agent: nothing of its own to serve
				return http.NotFoundHandler()
			}
			return Routes(ar.app, srv)
		},
		RoutesPrefix: "/api/v1/",
		FromChat:     fromChat,
		Reply:        chatReply,
		Answer:       chatAnswer,
	}
}

// appRunner is the App's graph, with the App for its Routes.
type appRunner struct {
	graph.Runner
	app *App
}

// fromChat turns a chat message into a run's input.
func fromChat(text string) (json.RawMessage, error) {
	return json.Marshal(map[string]string{"text": strings.TrimSpace(text)})
}

// chatAnswer turns a chat message into the answer to a pending question:
// the message is the next turn's text. A JSON object is the Answer itself
// ({"accept": true}, {"slots": {...}}).
func chatAnswer(text string, _ *checkpoint.Interrupt) (json.RawMessage, error) {
	t := strings.TrimSpace(text)
	if strings.HasPrefix(t, "{") && json.Valid([]byte(t)) {
		return json.RawMessage(t), nil
	}
	return json.Marshal(Answer{Text: t})
}

// chatReply is the assistant's text for a run: the turn's reply, which is
// also the question while the session waits.
func chatReply(state json.RawMessage, pending *checkpoint.Interrupt) string {
	var s struct {
		Reply struct {
			Message string `json:"message"`
		} `json:"reply"`
	}
	if err := json.Unmarshal(state, &s); err == nil && s.Reply.Message != "" {
		return s.Reply.Message
	}
	if pending != nil {
		var q Question
		if json.Unmarshal(pending.Payload, &q) == nil && q.Message != "" {
			return q.Message
		}
	}
	return string(state)
}
