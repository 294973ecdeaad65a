package sqlagent

import (
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/apps/internal/sources"
	"github.com/loomkit/loom/apps/internal/table"
	"github.com/loomkit/loom/apps/internal/threadstate"
	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/datasource"
	"github.com/loomkit/loom/datasource/shop"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/internal/text"
	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/store"
	"github.com/loomkit/loom/tool"
)

// ServerOptions configure the agent as Loom's server and command line
// serve it.
type ServerOptions struct {
	// Model is the language model; nil answers SQL, list and describe
	// only.
	Model llm.Model
	// Sources are the databases; nil reads them from SourcesFile (see
	// datasource.ReadConfigs), and without one it is the demo shop at
	// DemoPath.
	Sources []datasource.Config
	// SourcesFile is a YAML or JSON file of the data sources.
	SourcesFile string
	// DemoPath is where the demo shop is written on first start (default
	// loom-shop.db beside the server's SQLite database, else
	// ./loom-shop.db).
	DemoPath string
	// Limits bound each statement (default: 30 s, 200 rows, 1 MiB).
	Limits datasource.Limits
	// Budget is the round budget before a pause (default 12).
	Budget int
	// Window and MaxLength shape the model's copy of the history (see
	// Config).
	Window, MaxLength int
	// Tools are more tools beside the agent's own (see Config.Tools).
	Tools []tool.Tool
	// Logger receives the agent's logs (default slog.Default()).
	Logger *slog.Logger
}

// Input is a run's input, decoded over State.
type Input struct {
	Question string `json:"question,omitempty" jsonschema:"description=a question about the data\\, or a SQL query\\, e.g. which city has the most customers?"`
	Source   string `json:"source,omitempty" jsonschema:"description=the data source to use (default: the first)"`
}

// Settings is what an assistant, or a run's config.configurable or
// context, may set for the agent on Loom's server.
type Settings struct {
	Source string `json:"source,omitempty" jsonschema:"description=the data source a question uses when it names none (default: the first)"`
}

// ServerAgent returns the agent as the server registers it, under the name
// "sqlagent". Its Build opens the data sources (creating the demo shop on
// first start when none are configured); a chat message is a question, or
// the answer to a pause at the round budget.
func ServerAgent(opts ServerOptions) server.Agent {
	// The sources of the last Build, for Ready.
	var built atomic.Pointer[Sources]
	return server.Agent{
		Name:          AgentName,
		Description:   "explores a database with list / describe / sample / SQL and answers questions about its data, read only (SQL, list and describe work without a model)",
		DescriptionZh: "浏览数据库：列出表、查看结构、抽样数据、执行 SQL，回答关于数据的问题，只读不改（SQL、列表和结构查看无需模型）",
		InputSchema:   server.InputSchemaFor[Input](),
		ConfigSchema:  server.ConfigSchemaFor[Settings](),
		Build: func(ctx context.Context, db *store.DB) (graph.Runner, error) {
			o := opts
			o.DemoPath = cmp.Or(o.DemoPath, shop.Beside(db))
			a, err := open(ctx, o, db)
			if err != nil {
				return nil, err
			}
			built.Store(a.cfg.Sources)
			return a.Graph().Compile(graph.WithSaver(db.Saver()))
		},
		// Which sources answer now (see Sources.Ready).
		Ready: func(ctx context.Context) error {
			if ss := built.Load(); ss != nil {
				return ss.Ready(ctx)
			}
			return nil
		},
		FromChat: FromChat,
		Reply:    Reply,
		Routes:   func(srv *server.Server, _ graph.Runner) http.Handler { return routes(srv) },
		// A chat reply to the pause at the round budget is read by the
		// server's consent reader (server.DefaultAnswer): "继续",
		// "continue", "好的" … continue; "停止", "no" … stop with the
		// progress summary as the answer; anything else is asked again.
		// Its {"accept", "note"} is an agent.PauseAnswer.
	}
}

// open dials the sources of opts and returns the agent on them. A source
// that is db, the server's own database, is refused.
func open(ctx context.Context, opts ServerOptions, db *store.DB) (*Agent, error) {
	cfgs, err := sources.Configs(ctx, sources.Options{Sources: opts.Sources, File: opts.SourcesFile, DemoPath: opts.DemoPath, Logger: opts.Logger})
	if err != nil {
		return nil, fmt.Errorf("sqlagent: %w", err)
	}
	if err := sources.RefuseOwn(db, cfgs); err != nil {
		return nil, fmt.Errorf("sqlagent: %w", err)
	}
	limits := opts.Limits
	if limits == (datasource.Limits{}) {
		limits = datasource.DefaultLimits()
	}
	ss, err := openSources(ctx, cfgs, limits, cmp.Or(opts.Logger, slog.Default()))
	if err != nil {
		return nil, err
	}
	return New(Config{Sources: ss, Model: opts.Model, Budget: opts.Budget, Window: opts.Window, MaxLength: opts.MaxLength, Tools: opts.Tools})
}

// FromChat turns a chat message into a run's input: the question.
func FromChat(text string) (json.RawMessage, error) {
	return json.Marshal(map[string]string{"question": strings.TrimSpace(text)})
}

// Reply is the assistant's text for a run: the answer with its SQL and
// table, or the progress summary and the question while paused.
func Reply(state json.RawMessage, pending *checkpoint.Interrupt) string {
	var s State
	if err := json.Unmarshal(state, &s); err != nil {
		return string(state)
	}
	q := s.question()
	if pending != nil {
		var p agent.PauseRequest
		if json.Unmarshal(pending.Payload, &p) == nil && p.Summary != "" {
			return text.Say(q,
				fmt.Sprintf("I have used my step budget (%d rounds) and paused. Progress so far:\n%s\n\nReply \"continue\" to go on, or \"stop\" to end here.", p.Rounds, p.Summary),
				fmt.Sprintf("已用完本轮的步数预算（%d 轮），先暂停一下。目前进展：\n%s\n\n回复“继续”接着执行，回复“停止”到此为止。", p.Rounds, p.Summary))
		}
		return string(pending.Payload)
	}
	if s.Answer == nil {
		return ""
	}
	return s.Answer.Markdown(q)
}

// Markdown writes the answer as text: the answer, the SQL in a fenced
// block, and the result as a table (the first 20 rows, with the count).
func (a *Answer) Markdown(question string) string {
	return strings.TrimSpace(a.Text + a.tail(question))
}

// tail is what Markdown writes after the answer's text.
func (a *Answer) tail(question string) string {
	var b strings.Builder
	if a.SQL != "" {
		b.WriteString("\n\n```sql\n" + strings.TrimSpace(a.SQL) + "\n```")
	}
	if len(a.Columns) > 0 {
		b.WriteString("\n\n" + table.Markdown(a.Columns, a.Rows, a.Truncated, text.HasHan(question)))
	}
	return b.String()
}

// routes are the agent's own endpoint, which the server serves behind its
// API keys (server.Agent.Routes):
//
//	GET /api/v1/sqlagent/threads/{id}/result.csv   the last answer's table as CSV
//
// A thread of another key, or without an answer with a table, is a 404.
func routes(srv *server.Server) http.Handler {
	m := http.NewServeMux()
	m.Handle("GET /api/v1/sqlagent/threads/{id}/result.csv", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		s, ok := threadstate.Read[State](w, r, srv, id, AgentName, "not_sqlagent", "the SQL agent's")
		if !ok {
			return
		}
		switch {
		case s.Answer == nil || len(s.Answer.Columns) == 0:
			server.WriteError(w, http.StatusNotFound, "no_result", "thread "+id+" has no answer with a table yet")
			return
		}
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="result.csv"`)
		cw := csv.NewWriter(w)
		cw.Write(s.Answer.Columns)
		for _, row := range s.Answer.Rows {
			cells := make([]string, len(row))
			for i, v := range row {
				if v != nil {
					cells[i] = table.Cell(v)
				}
			}
			cw.Write(cells)
		}
		cw.Flush()
	}))
	return m
}

// question returns the current turn's question.
func (s *State) question() string {
	if n := len(s.ReAct.Messages); s.TurnStart < n && s.ReAct.Messages[s.TurnStart].Role == llm.RoleUser {
		return s.ReAct.Messages[s.TurnStart].Content
	}
	return s.Title
}
