package schedule

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/loomkit/loom/apps/schedule/panel"
	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/store"
)

// ServerOptions configure the agent as Loom's server and command line
// serve it.
type ServerOptions struct {
	// Model is the language model; nil runs on heuristics.
	Model llm.Model
	// StreamDelay is the pause between pseudo-stream chunks; 0 means
	// 40 ms, a negative value none.
	StreamDelay time.Duration
	// Logger receives the agent's logs (default slog.Default()).
	Logger *slog.Logger
}

// Input is a run's input, decoded over State.
type Input struct {
	Message string `json:"message,omitempty" jsonschema:"description=what the student asks\\, e.g. 帮我安排下周的复习"`
}

// ServerAgent returns the agent as the server registers it, under the name
// "schedule". Its tables are Migrations, which the server applies before
// Build; Build keeps the schedules on the server's database and creates
// the sample schedule on first start; a chat message starts a task or
// answers the pending card or question (see chatAnswer).
func ServerAgent(opts ServerOptions) server.Agent {
	return server.Agent{
		Name:          "schedule",
		Description:   "arranges a student's week: plan card, rough schedule, optimiser candidates confirmed one by one (works without a model)",
		DescriptionZh: "安排学生的一周：计划卡、初步日程，再逐一确认优化给出的候选方案（无需模型）",
		Panel:         panel.Files,
		InputSchema:   server.InputSchemaFor[Input](),
		Build: func(ctx context.Context, db *store.DB) (graph.Runner, error) {
			a, err := agentOn(ctx, NewStore(db), db.String(), opts)
			if err != nil {
				return nil, err
			}
			g, err := a.Graph().Compile(graph.WithSaver(db.Saver()))
			if err != nil {
				return nil, err
			}
			return runner{Runner: g, agent: a}, nil
		},
		Routes: func(srv *server.Server, r graph.Runner) http.Handler {
			sr, ok := r.(runner)
			if !ok { // not built by this agent: nothing of its own to serve
				return http.NotFoundHandler()
			}
			return routes(srv, sr.agent)
		},
		Migrations:   Migrations,
		RoutesPrefix: "/api/v1/schedule/",
		FromChat:     fromChat,
		Reply:        replyText,
		Answer:       chatAnswer,
	}
}

// agentOn creates the sample schedule in st when the owner has none, and
// returns the agent on st.
func agentOn(ctx context.Context, st *Store, where string, opts ServerOptions) (*Agent, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if made, err := st.EnsureSample(ctx, DefaultOwner); err != nil {
		return nil, fmt.Errorf("schedule agent: %w", err)
	} else if made {
		log.Debug("schedule: created the sample schedule", "owner", DefaultOwner, "database", where)
	}
	delay := opts.StreamDelay
	switch {
	case delay == 0:
		delay = defaultStreamDelay
	case delay < 0:
		delay = 0
	}
	a, err := New(Config{Store: st, Model: opts.Model, StreamDelay: delay, Logger: log})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// fromChat turns a chat message into a run's input.
func fromChat(text string) (json.RawMessage, error) {
	return json.Marshal(map[string]string{"message": strings.TrimSpace(text)})
}

// chatAnswer turns a chat message into the answer to the pending question,
// whichever it is (see Answer and parseAnswer): a yes ("确认", "没问题",
// "yes" …) accepts a plan or tool card and continues at the round budget;
// a no ("取消", "不行", "no" …) rejects; any text answers an ask_user
// question. A reply to a card that is neither is an error wrapping
// intent.ErrUnclear, so the chat asks again.
func chatAnswer(text string, pending *checkpoint.Interrupt) (json.RawMessage, error) {
	a, err := parseAnswer(text)
	var c card
	if err != nil && (pending == nil || json.Unmarshal(pending.Payload, &c) != nil || c.Kind != kindAskUser) {
		return nil, err
	}
	return json.Marshal(a)
}

// card holds the fields of any question the agent asks: an Interaction,
// a tool.ConfirmRequest or an agent.PauseRequest.
type card struct {
	Kind    string `json:"kind"`
	Text    string `json:"text"`
	Tool    string `json:"tool"`
	Summary string `json:"summary"`
	Rounds  int    `json:"rounds"`
}

// replyText is the assistant's text for a run: the card or question it waits
// on, else the chat reply or the summary.
func replyText(state json.RawMessage, pending *checkpoint.Interrupt) string {
	if pending != nil {
		var c card
		if err := json.Unmarshal(pending.Payload, &c); err != nil {
			return string(pending.Payload)
		}
		switch {
		case c.Kind == kindPlan:
			return c.Text + "\n回复「确认」开始执行，「取消」重新规划（可以附上原因，比如「取消，周三不行」）。"
		case c.Kind == kindAskUser:
			return c.Text
		case c.Tool != "":
			return "需要你确认：" + c.Summary + "\n回复「确认」执行，「取消」换一个方案（可以附上原因）。"
		case c.Rounds > 0:
			return fmt.Sprintf("本轮已用完预算（%d 轮）。进度：%s\n回复「继续」接着做，「结束」就此总结。", c.Rounds, c.Summary)
		}
		return string(pending.Payload)
	}
	var s State
	if err := json.Unmarshal(state, &s); err != nil {
		return string(state)
	}
	return s.Reply
}
