package sqlagent

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"unicode"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/convo"
	"github.com/loomkit/loom/datasource"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/internal/text"
	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/tool"
)

// AgentName is the name the agent is registered under.
const AgentName = "sqlagent"

// Node names.
const (
	NodeTurn   = "turn"
	NodeDirect = "direct"
	NodeFinish = "finish"
)

// Defaults of Config.
const (
	DefaultBudget    = 12
	DefaultWindow    = 10
	DefaultMaxLength = 5000
)

//go:embed prompts/system.md
var systemPrompt string

// Config configures the agent.
type Config struct {
	// Sources are the databases the agent explores.
	Sources *Sources
	// Model is the language model; nil answers only SQL the user types
	// and requests to list or describe tables.
	Model llm.Model
	// Budget is how many model rounds run before the agent summarises
	// and pauses (default 12).
	Budget int
	// Window and MaxLength shape the model's copy of the history: the
	// recent messages kept whole (default 10) and its size in characters
	// (default 5000).
	Window, MaxLength int
	// Tools are more tools beside the agent's own, such as an MCP
	// server's (see tool/mcptool); a write tool among them waits for a
	// person's confirmation.
	Tools []tool.Tool
}

// Agent is the SQL explorer: its tools and graph.
type Agent struct {
	cfg   Config
	tools *tool.Registry
	react agent.Config
}

// New returns the agent for cfg.
func New(cfg Config) (*Agent, error) {
	if cfg.Sources == nil {
		cfg.Sources = &Sources{}
	}
	if cfg.Budget <= 0 {
		cfg.Budget = DefaultBudget
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.MaxLength <= 0 {
		cfg.MaxLength = DefaultMaxLength
	}
	a := &Agent{cfg: cfg}
	var err error
	if a.tools, err = newTools(cfg.Sources); err != nil {
		return nil, fmt.Errorf("sqlagent: tools: %w", err)
	}
	if err := a.tools.Register("", "", cfg.Tools...); err != nil {
		return nil, fmt.Errorf("sqlagent: more tools: %w", err)
	}
	a.react = agent.Config{
		Model:  cfg.Model,
		Tools:  a.tools,
		System: strings.Replace(systemPrompt, "{{sources}}", cfg.Sources.describe(), 1),
		Budget: cfg.Budget,
		// The third malformed answer in a row ends the turn with a plain
		// answer (the model's answers are logged, not shown).
		MaxCorrections: 2,
		GiveUp:         giveUp,
		ModelFailed:    modelFailed,
		Status:         roundStatus,
		SummaryRequest: summaryRequest,
		View: convo.Config{
			Window:          cfg.Window,
			MaxChars:        cfg.MaxLength,
			Observation:     convo.Trim{MaxItems: 10},
			SummaryMaxChars: cfg.MaxLength / 4,
			SummaryKey:      "sqlagent-1",
			Summarizer:      summarize(cfg.MaxLength / 4),
			Counter:         convo.Estimate{},
		},
	}
	return a, nil
}

// Graph builds the agent's graph:
//
//	turn → think ⇄ act (ReAct, pause at the budget) → finish
//	turn → direct (no model: SQL typed, list and describe)
func (a *Agent) Graph() *graph.Graph[State] {
	g := graph.New[State](AgentName)
	think := agent.Think
	g.Node(NodeTurn, a.turn).
		Node(NodeDirect, a.direct).
		Node(NodeFinish, a.finish)
	agent.AddTo(g, "", a.react, func(s *State) *agent.State { return &s.ReAct }, NodeFinish)
	g.Edge(graph.Start, NodeTurn).
		Route(NodeTurn, func(s State) string {
			switch {
			case s.Answer != nil:
				return graph.End
			case a.cfg.Model == nil:
				return NodeDirect
			}
			return think
		}, think, NodeDirect, graph.End).
		Edge(NodeDirect, graph.End).
		Edge(NodeFinish, graph.End)
	return g
}

// turn starts a turn with the question: the knowledge of earlier turns is
// read from the history and pinned for the model.
func (a *Agent) turn(ctx context.Context, s State) (State, error) {
	q := strings.TrimSpace(s.Question)
	s.Question, s.Answer = "", nil
	var set Settings
	if err := server.RunConfig(ctx, &set); err != nil {
		return s, err
	}
	s.Source = cmp.Or(s.Source, set.Source)
	if q == "" {
		s.Answer = &Answer{Text: text.Say(q, "Ask a question about the data, or type a SQL query.", "请提出一个关于数据的问题，或直接输入 SQL 查询。")}
		return s, nil
	}
	if s.Title == "" {
		s.Title = text.OneLine(q, 80)
	}
	s.Known.learn(s.ReAct.Messages, len(a.cfg.Sources.list) > 1)
	s.TurnStart = len(s.ReAct.Messages)
	if s.Source != "" {
		if _, err := a.cfg.Sources.get(s.Source); err != nil {
			s.Answer = &Answer{Text: err.Error()}
			return s, nil
		}
		q += "\n(Use data source " + s.Source + ".)"
	}
	// A turn on a source that is down is answered at once, without the
	// model's rounds (during the source's backoff this asks nothing of
	// the database).
	if s.Source != "" || len(a.cfg.Sources.list) == 1 {
		if src, err := a.cfg.Sources.get(s.Source); err == nil {
			if err := src.Ping(ctx); errors.Is(err, datasource.ErrUnavailable) {
				var u *datasource.UnavailableError
				errors.As(err, &u)
				a.cfg.Sources.unavailable(src.Name, err)
				s.Answer = &Answer{Text: text.Say(q,
					fmt.Sprintf("Source %s is unavailable: %s. Try again later.", src.Name, u.Reason),
					fmt.Sprintf("数据源 %s 暂时无法访问（%s），请稍后再试。", src.Name, u.Reason))}
				return s, nil
			}
		}
	}
	s.ReAct.NewTurn(q)
	if known := s.Known.render(a.cfg.MaxLength / 2); known != "" {
		s.ReAct.Pins = s.ReAct.Pins.Set("known", known)
	}
	return s, nil
}

// finish records what the turn learned and its answer: the model's text,
// and the last statement it ran with that result. The model's text was
// streamed as it came; the SQL and the table follow it.
func (a *Agent) finish(ctx context.Context, s State) (State, error) {
	s, err := a.answer(s)
	if tail := s.Answer.tail(s.question()); err == nil && tail != "" {
		graph.Emit(ctx, graph.KindToken, tail)
	}
	return s, err
}

// answer records what the turn learned and its answer.
func (a *Agent) answer(s State) (State, error) {
	s.Known.learn(s.ReAct.Messages, len(a.cfg.Sources.list) > 1)
	ans := &Answer{Text: s.ReAct.Answer}
	if s.TurnStart <= len(s.ReAct.Messages) {
		if sql, res := lastResult(s.ReAct.Messages[s.TurnStart:]); res != nil {
			ans.SQL, ans.Columns, ans.Rows, ans.Truncated = sql, res.Columns, res.Rows, res.Truncated
		}
	}
	s.Answer = ans
	return s, nil
}

var (
	listRE     = regexp.MustCompile(`(?i)^\s*(?:list|show)?\s*(?:all\s+)?tables\s*[?？]?\s*$|^\s*(?:列出|显示|查看)?\s*(?:所有|全部)?的?表(?:格)?(?:列表)?\s*[?？]?$|有哪些表|有什么表`)
	describeRE = regexp.MustCompile(`(?i)^\s*(?:describe|desc|show\s+columns\s+(?:of|from)|schema\s+of)\s+(?:table\s+)?([\p{L}\p{N}_.$"` + "`" + `]+)\s*[?？]?\s*$|^\s*(?:描述|查看|显示)?\s*表?\s*([\p{L}\p{N}_.$]+)\s*(?:表)?\s*的?\s*(?:结构|字段|列)\s*[?？]?$|^\s*(?:描述|查看表|显示表)\s*([\p{L}\p{N}_.$]+)\s*$`)
	sampleRE   = regexp.MustCompile(`(?i)^\s*(?:sample|preview)\s+(?:rows\s+(?:of|from)\s+)?([\p{L}\p{N}_.$]+)\s*$|^\s*(?:预览|样例|看看)\s*表?\s*([\p{L}\p{N}_.$]+)\s*(?:的数据)?\s*$`)
	sqlWords   = []string{"SELECT", "WITH", "VALUES", "TABLE", "EXPLAIN", "SHOW", "DESCRIBE", "DESC", "INSERT", "UPDATE", "DELETE",
		"MERGE", "REPLACE", "CREATE", "DROP", "ALTER", "TRUNCATE", "GRANT", "REVOKE", "COPY", "PRAGMA", "ATTACH", "VACUUM", "SET", "BEGIN", "COMMIT", "CALL", "DO", "LOAD"}
)

// direct answers without a model: SQL the user types runs through the
// guard, "list tables" and "describe X" call the tools; anything else
// says which variables configure a model. Each request is written into
// the history as a tool call and its result, so the known tables and
// schemas are learned as with a model.
func (a *Agent) direct(ctx context.Context, s State) (State, error) {
	q := strings.TrimSpace(strings.TrimSuffix(s.ReAct.Messages[len(s.ReAct.Messages)-1].Content, "\n(Use data source "+s.Source+".)"))
	call := func(name string, args any) (string, bool) {
		raw, _ := json.Marshal(args)
		id := fmt.Sprintf("direct_%d", len(s.ReAct.Messages))
		c := llm.ToolCall{ID: id, Name: name, Arguments: string(raw)}
		t, err := a.tools.Resolve(tool.View{}, name)
		var out string
		if err == nil {
			out, err = t.Call(tool.WithView(ctx, &tool.View{}), raw)
		}
		if err != nil {
			out = "error: " + strings.TrimPrefix(err.Error(), "tool "+name+": ")
		}
		s.ReAct.Messages = append(s.ReAct.Messages, llm.Assistant("", c), llm.ToolResult(id, out))
		graph.Emit(ctx, graph.KindToolResult, map[string]string{"id": id, "tool": name, "result": out})
		return out, err == nil
	}
	var reply string
	var sample sampleResult
	switch {
	case listRE.MatchString(q):
		out, ok := call(ToolListTables, sourceArgs{Source: s.Source})
		reply = out
		if ok {
			var l tableList
			json.Unmarshal([]byte(out), &l)
			reply = listText(q, l)
		}
	case describeRE.MatchString(q):
		name := firstGroup(describeRE.FindStringSubmatch(q))
		out, ok := call(ToolDescribeTable, tableArgs{Table: strings.Trim(name, "\"`"), Source: s.Source})
		reply = strings.TrimPrefix(out, "error: ")
		if ok {
			var t datasource.Table
			json.Unmarshal([]byte(out), &t)
			reply = describeText(q, t)
		}
	case sampleRE.MatchString(q):
		out, ok := call(ToolSampleRows, sampleArgs{Table: firstGroup(sampleRE.FindStringSubmatch(q)), N: 10, Source: s.Source})
		if !ok {
			reply = strings.TrimPrefix(out, "error: ")
			break
		}
		// The rows are the answer's table, as a query's are.
		json.Unmarshal([]byte(out), &sample)
		reply = text.Say(q, "The first rows of "+sample.Table+":", "表 "+sample.Table+" 的前几行数据：")
	case looksLikeSQL(q):
		out, ok := call(ToolRunSQL, sqlArgs{SQL: q, Source: s.Source})
		reply = text.Say(q, "Here is the result.", "查询结果如下。")
		if !ok {
			reply = strings.TrimPrefix(out, "error: ")
		}
	default:
		reply = text.Say(q,
			"No language model is configured, so I can only run SQL you type (read-only), list the tables (\"list tables\") and describe a table (\"describe orders\"). To ask questions in plain language, set OPENAI_API_KEY (and OPENAI_BASE_URL for another OpenAI-compatible endpoint) and LOOM_MODEL, then restart loom serve.",
			"尚未配置语言模型，所以我现在只能执行你输入的只读 SQL、列出所有表（\"有哪些表\"）和查看表结构（\"describe orders\" 或 \"orders 表结构\"）。若要用自然语言提问，请设置 OPENAI_API_KEY（使用其他兼容 OpenAI 的服务时再设置 OPENAI_BASE_URL）和 LOOM_MODEL，然后重启 loom serve。")
	}
	s.ReAct.Messages = append(s.ReAct.Messages, llm.Assistant(reply))
	s.ReAct.Answer = reply
	s, err := a.answer(s)
	if err == nil && sample.Result != nil {
		s.Answer.SQL = ""
		s.Answer.Columns, s.Answer.Rows, s.Answer.Truncated = sample.Columns, sample.Rows, sample.Truncated
	}
	return s, err
}

func firstGroup(m []string) string {
	for _, g := range m[1:] {
		if g != "" {
			return g
		}
	}
	return ""
}

// looksLikeSQL reports whether text starts with a SQL statement's word.
func looksLikeSQL(text string) bool {
	w := strings.TrimLeft(text, "( \t\n")
	end := strings.IndexFunc(w, func(r rune) bool { return !unicode.IsLetter(r) })
	if end < 0 {
		end = len(w)
	}
	first := strings.ToUpper(w[:end])
	for _, s := range sqlWords {
		if first == s {
			return end < len(w) || first == "VACUUM" || first == "BEGIN" || first == "COMMIT"
		}
	}
	return false
}

func listText(q string, l tableList) string {
	var b strings.Builder
	b.WriteString(text.Say(q, fmt.Sprintf("%s has %d tables and views:\n", l.Source, len(l.Tables)), fmt.Sprintf("%s 共有 %d 个表和视图：\n", l.Source, len(l.Tables))))
	for _, t := range l.Tables {
		fmt.Fprintf(&b, "- %s", t.Name)
		switch {
		case t.Kind == "view":
			b.WriteString(text.Say(q, " (view)", "（视图）"))
		case t.Rows >= 0:
			b.WriteString(text.Say(q, fmt.Sprintf(" (%d rows)", t.Rows), fmt.Sprintf("（%d 行）", t.Rows)))
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

func describeText(q string, t datasource.Table) string {
	var b strings.Builder
	switch {
	case t.Kind == "view":
		b.WriteString(text.Say(q, "View "+t.Name+"\n", "视图 "+t.Name+"\n"))
	case t.Rows >= 0:
		b.WriteString(text.Say(q, fmt.Sprintf("Table %s (%d rows)\n", t.Name, t.Rows), fmt.Sprintf("表 %s（%d 行）\n", t.Name, t.Rows)))
	default:
		b.WriteString(text.Say(q, "Table "+t.Name+"\n", "表 "+t.Name+"\n"))
	}
	fks := references(t)
	b.WriteString(text.Say(q, "| column | type | null | key |\n", "| 列 | 类型 | 可空 | 键 |\n"))
	b.WriteString("|---|---|---|---|\n")
	for _, c := range t.Columns {
		key := ""
		for _, p := range t.PrimaryKey {
			if p == c.Name {
				key = "PK"
			}
		}
		if ref, ok := fks[c.Name]; ok {
			key = strings.TrimSpace(key + " → " + ref)
		}
		null := text.Say(q, "no", "否")
		if c.Nullable {
			null = text.Say(q, "yes", "是")
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", c.Name, c.Type, null, key)
	}
	return strings.TrimRight(b.String(), "\n")
}

// turnQuestion returns the question of the loop's current turn: the last
// user message that is neither the feedback on a malformed answer nor the
// reply to a pause (which follows the progress summary), and where it is.
func turnQuestion(st *agent.State) (string, int) {
	for i := len(st.Messages) - 1; i >= 0; i-- {
		m := st.Messages[i]
		if m.Role != llm.RoleUser || strings.HasPrefix(m.Content, "Your previous answer") {
			continue
		}
		if i > 0 && st.Messages[i-1].Role == llm.RoleAssistant && strings.HasPrefix(st.Messages[i-1].Content, "Progress so far: ") {
			continue
		}
		return m.Content, i
	}
	return "", 0
}

// roundStatus is the status line of a model round, in the question's
// language.
func roundStatus(st *agent.State) string {
	q, _ := turnQuestion(st)
	return text.Say(q, fmt.Sprintf("round %d", st.Rounds), fmt.Sprintf("第 %d 轮", st.Rounds))
}

// summaryRequest asks the model for its progress summary at the round
// budget: it restates the turn's question and the problems its tool
// calls hit, so that the summary answers them, in the question's
// language.
func summaryRequest(st *agent.State) string {
	q, at := turnQuestion(st)
	var k Known
	k.learn(st.Messages[at:], true)
	var b strings.Builder
	b.WriteString("You have used your step budget for now. The question was:\n")
	b.WriteString(text.OneLine(q, 1000) + "\n")
	if len(k.Errors) > 0 {
		b.WriteString("Problems hit on the way (say which are solved and which are not):\n")
		for _, e := range k.Errors[max(0, len(k.Errors)-5):] {
			fmt.Fprintf(&b, "- %s %s: %s\n", e.Tool, text.OneLine(e.Input, 200), text.OneLine(strings.TrimPrefix(e.Error, "tool "+e.Tool+": "), 200))
		}
	}
	b.WriteString("Summarise in a few sentences what you did, what you found towards answering the question, and what is left to do. Answer in plain text, not JSON")
	b.WriteString(text.Say(q, ".", ", in Chinese (简体中文)."))
	return b.String()
}

// giveUp answers a turn whose model gave three malformed answers in a row
// with a plain sentence; the answers are logged for whoever runs the
// server.
func giveUp(ctx context.Context, st *agent.State, err *agent.MalformedError) string {
	slog.WarnContext(ctx, "sqlagent: the model's answers could not be used; the turn ends without an answer", "err", err)
	q, _ := turnQuestion(st)
	return text.Say(q,
		"I could not get a usable answer from the language model this time: it answered three times in a form I could not read. Please ask again, perhaps in other words.",
		"这次没能从语言模型得到可用的回答：它连续三次给出了无法解析的答复。请再问一次，或换个说法。")
}

// modelFailed answers a turn whose model call failed with a plain
// sentence; the error, which may name the endpoint, is logged.
func modelFailed(ctx context.Context, st *agent.State, err error) string {
	slog.WarnContext(ctx, "sqlagent: the model call failed; the turn ends without an answer", "err", err)
	q, _ := turnQuestion(st)
	return text.Say(q,
		"The language model could not be reached just now, so I could not answer. Please try again in a moment.",
		"暂时无法连接语言模型，所以没能回答这个问题。请稍后再试。")
}
