package dataagent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"

	"github.com/loomkit/loom/apps/dataagent/knowledge"
	"github.com/loomkit/loom/apps/dataagent/panel"
	"github.com/loomkit/loom/apps/dataagent/report"
	"github.com/loomkit/loom/apps/dataagent/sandbox"
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
)

// ServerOptions configure the agent as Loom's server and command line
// serve it.
type ServerOptions struct {
	// Model is the language model; nil answers from stored examples only.
	Model llm.Model
	// Sources are the databases; nil reads them from SourcesFile, and
	// without one it is the demo shop. Loom's command gives this agent
	// and the SQL agent the same sources.
	Sources []datasource.Config
	// SourcesFile is a YAML or JSON file of the data sources (see
	// datasource.ReadConfigs).
	SourcesFile string
	// DemoPath is where the demo shop is written on first start (default
	// loom-shop.db beside the server's SQLite database, else
	// ./loom-shop.db).
	DemoPath string
	// Embedder, when set, adds embeddings to the recall of knowledge and
	// tables (openai.NewEmbedderFromEnv gives the one LOOM_EMBED_MODEL
	// configures); nil recalls by words alone.
	Embedder llm.Embedder
	// Limits bound each statement (default datasource.DefaultLimits).
	Limits datasource.Limits
	// Sandbox is the bubblewrap sandbox Python runs in (its zero value:
	// Debian's /usr/bin/python3, bwrap on PATH, the default limits).
	// Without bwrap or python3 the analysis runs without Python.
	Sandbox sandbox.Runner
	// PythonTries is how many failed Python runs a step takes before the
	// fallback (default 3).
	PythonTries int
	// Logger receives the agent's logs (default slog.Default()).
	Logger *slog.Logger
}

// Input is a run's input, decoded over State.
type Input struct {
	Question    string `json:"question,omitempty" jsonschema:"description=a question about the data\\, e.g. which city brings the most revenue?"`
	Source      string `json:"source,omitempty" jsonschema:"description=the data source to use (default: the first)"`
	HumanReview bool   `json:"human_review,omitempty" jsonschema:"description=show the plan and wait for approval before running it"`
	NL2SQLOnly  bool   `json:"nl2sql_only,omitempty" jsonschema:"description=answer with the SQL and its result only\\, without a report"`
}

// runner is the compiled graph with what the agent's Routes serve.
type runner struct {
	graph.Runner
	parts *parts
}

// Settings is what an assistant, or a run's config.configurable or
// context, may set for the analyst on Loom's server.
type Settings struct {
	Source string `json:"source,omitempty" jsonschema:"description=the data source a question uses when it names none (default: the first)"`
}

// ServerAgent returns the agent as the server registers it, under the
// name "dataagent". Its Build opens the data sources (the SQL agent's),
// the knowledge store on the server's database (the demo shop's
// knowledge seeded for every key), schema recall and the Python sandbox.
// A chat message is a question, or the answer to a plan waiting for
// approval ("好的" / "yes" runs it, "不行，…" / "no, …" re-plans with
// the comment).
func ServerAgent(opts ServerOptions) server.Agent {
	// The sources of the last Build, for Ready.
	var built atomic.Pointer[[]Source]
	return server.Agent{
		Name:          AgentName,
		Description:   "data analyst: plans an analysis of a database, runs checked SQL and sandboxed Python, and writes a report with charts (answers stored example questions without a model)",
		DescriptionZh: "数据分析师：为数据库规划分析，运行经过检查的 SQL 和沙箱中的 Python，写出带图表的报告（已存的示例问题无需模型即可回答）",
		Panel:         panel.Files,
		InputSchema:   server.InputSchemaFor[Input](),
		ConfigSchema:  server.ConfigSchemaFor[Settings](),
		// The knowledge lives beside the checkpoints.
		Migrations: knowledge.Migrations,
		Build: func(ctx context.Context, db *store.DB) (graph.Runner, error) {
			o := opts
			o.DemoPath = cmp.Or(o.DemoPath, shop.Beside(db))
			return build(ctx, o, db, &built)
		},
		// Which sources answer now.
		Ready: func(ctx context.Context) error {
			if ss := built.Load(); ss != nil {
				return ready(ctx, *ss)
			}
			return nil
		},
		FromChat: FromChat,
		Reply:    Reply,
		// A knowledge file is imported as YAML up to its own limit,
		// above the server's limit on JSON bodies.
		UploadLimit: knowledge.MaxImport,
		UploadTypes: knowledge.ImportTypes,
		Routes: func(srv *server.Server, r graph.Runner) http.Handler {
			var p *parts
			if ar, ok := r.(runner); ok {
				p = ar.parts
			}
			return routes(srv, p)
		},
	}
}

// build opens the agent's parts and compiles its graph on db, which
// keeps its checkpoints and knowledge; built, when not nil, is given the
// sources.
func build(ctx context.Context, opts ServerOptions, db *store.DB, built *atomic.Pointer[[]Source]) (graph.Runner, error) {
	log := cmp.Or(opts.Logger, slog.Default())
	cfgs, err := sources.Configs(ctx, sources.Options{Sources: opts.Sources, File: opts.SourcesFile, DemoPath: opts.DemoPath, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("dataagent: %w", err)
	}
	limits := opts.Limits
	if limits == (datasource.Limits{}) {
		limits = datasource.DefaultLimits()
	}
	// Through the server's own database any key would read every key's
	// threads.
	if err := sources.RefuseOwn(db, cfgs); err != nil {
		return nil, fmt.Errorf("dataagent: %w", err)
	}
	// A source whose database is down does not stop the agent: it is
	// connected when used, and a question on it says it is unavailable.
	var sources []Source
	for _, c := range cfgs {
		s, err := datasource.Dial(c.URL, limits)
		if err != nil {
			for _, o := range sources {
				o.Close()
			}
			return nil, fmt.Errorf("dataagent: source %s: %w", c.Name, err)
		}
		sources = append(sources, Source{Name: c.Name, Description: c.Description, Source: s})
	}
	// The sandbox directories of a server killed during a run (the query
	// results its scripts read) go before any new run.
	if n, err := sandbox.Sweep(opts.Sandbox.WorkRoot); err != nil {
		log.Warn("dataagent: could not remove the sandbox directories of a stopped process", "err", err)
	} else if n > 0 {
		log.Info("dataagent: removed the sandbox directories of a stopped process", "directories", n)
	}
	closeAll := func() {
		for _, o := range sources {
			o.Close()
		}
	}
	p, err := openParts(ctx, opts, sources, db, log)
	if err != nil {
		closeAll()
		return nil, err
	}
	cfg := Config{
		Sources: sources, Model: opts.Model, PythonTries: opts.PythonTries, Logger: log,
		Knowledge: p.knowledge, Schema: p.schema, Python: p.python, Report: p.report,
	}
	g, err := New(cfg).Graph().Compile(graph.WithSaver(db.Saver()))
	if err != nil {
		closeAll()
		return nil, err
	}
	if built != nil {
		built.Store(&sources)
	}
	return runner{g, p}, nil
}

// ready says whether every source answers now: nil, or one line per
// source that does not ("source sales is unavailable: connection
// refused"), without hosts or credentials.
func ready(ctx context.Context, ss []Source) error {
	return sources.Ready(ctx, ss, func(s Source) (string, *datasource.Source) { return s.Name, s.Source })
}

// FromChat turns a chat message into a run's input: the question, after
// leading option lines that set the run's other fields:
//
//	source: sales        (数据源：sales)   the data source
//	review: yes          (审核：是)        show the plan and wait for approval
//	sql only: yes        (只要 SQL：是)    the SQL and its result, no report
//
// Each option is a line of its own before the question; "no" (否) turns
// one off. A message with no question after its options is an error.
func FromChat(text string) (json.RawMessage, error) {
	var in Input
	lines := strings.Split(strings.TrimSpace(text), "\n")
	i := 0
	for ; i < len(lines); i++ {
		key, value, ok := chatOption(lines[i])
		if !ok {
			break
		}
		switch key {
		case "source":
			in.Source = value
		case "review", "sql only":
			on, known := chatSwitch[strings.ToLower(value)]
			if !known {
				return nil, fmt.Errorf("option %q: %q is not yes or no (是/否)", key, value)
			}
			if key == "review" {
				in.HumanReview = on
			} else {
				in.NL2SQLOnly = on
			}
		}
	}
	in.Question = strings.TrimSpace(strings.Join(lines[i:], "\n"))
	if in.Question == "" {
		return nil, errors.New("the message has options but no question after them")
	}
	return json.Marshal(in)
}

// chatOption reads a leading option line of a chat message ("source:
// sales", "审核：是"): its key in English and its value.
func chatOption(line string) (key, value string, ok bool) {
	name, value, found := strings.Cut(strings.ReplaceAll(line, "：", ":"), ":")
	if !found {
		return "", "", false
	}
	key, ok = chatKeys[strings.Join(strings.Fields(strings.ToLower(name)), " ")]
	value = strings.TrimSpace(value)
	return key, value, ok && value != "" && !strings.ContainsAny(value, " \t")
}

var chatKeys = map[string]string{
	"source": "source", "数据源": "source",
	"review": "review", "审核": "review",
	"sql only": "sql only", "sql-only": "sql only", "只要 sql": "sql only", "只要sql": "sql only",
}

var chatSwitch = map[string]bool{
	"yes": true, "on": true, "true": true, "是": true, "开": true,
	"no": false, "off": false, "false": false, "否": false, "关": false,
}

// Reply is the assistant's text for a run: the report (or, in
// nl2sql_only mode, the SQL and its table), or the plan while it waits
// for approval.
func Reply(state json.RawMessage, pending *checkpoint.Interrupt) string {
	var s State
	if err := json.Unmarshal(state, &s); err != nil {
		return string(state)
	}
	q := s.Query
	if pending != nil {
		var r PlanReview
		if json.Unmarshal(pending.Payload, &r) == nil && r.Plan != nil {
			return text.Say(q, "Here is my plan:\n\n", "分析计划如下：\n\n") + planText(r.Plan) +
				text.Say(q, "\nReply \"yes\" to run it, or \"no, …\" with what to change.", "\n回复“好的”开始执行，或回复“不行，……”说明要修改的地方。")
		}
		return string(pending.Payload)
	}
	if s.Answer == nil {
		return text.Say(q, "The analysis stopped without an answer.", "分析已停止，没有得到结果。")
	}
	return s.Answer.Markdown(q)
}

// Markdown writes the answer as text: the report with its charts as
// tables and where its HTML page is, or the text with the SQL and the
// result as a table.
func (a *Answer) Markdown(question string) string {
	if a.Report != "" {
		md := strings.TrimSpace(report.Markdown(a.Report, report.Options{ChartsAsTables: true, Locale: text.Say(question, "en", "zh")}))
		// A picture carried in the report is named, not inlined, in a
		// chat: the web page shows it.
		md = dataImage.ReplaceAllString(md, text.Say(question, "*(chart: $1, on the web page)*", "*（图表：$1，见网页版报告）*"))
		if a.ReportPath != "" {
			md += text.Say(question, "\n\nThe report with its charts, as a web page: ", "\n\n带图表的网页版报告：") + a.ReportPath
		}
		return md
	}
	var b strings.Builder
	b.WriteString(a.Text)
	if a.SQL != "" {
		b.WriteString("\n\n```sql\n" + strings.TrimSpace(a.SQL) + "\n```")
	}
	if len(a.Columns) > 0 {
		b.WriteString("\n\n" + table.Markdown(a.Columns, a.Rows, a.Truncated, text.HasHan(question)))
	}
	return strings.TrimSpace(b.String())
}

// dataImage is a Markdown image carried as a data URI.
var dataImage = regexp.MustCompile(`!\[([^\]]*)\]\(data:image/[^)]*\)`)

// routes are the agent's own endpoints, served behind the server's API
// keys under /api/v1/dataagent/:
//
//	GET /api/v1/dataagent/reports/{thread}                 the last report as one HTML page
//	GET /api/v1/dataagent/reports/{thread}?format=markdown  the same as Markdown
//	    /api/v1/dataagent/knowledge/…                      the knowledge API
//
// A thread of another key, or without a report, is a 404.
func routes(srv *server.Server, p *parts) http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("GET /api/v1/dataagent/reports/{thread}", func(w http.ResponseWriter, r *http.Request) {
		format := r.URL.Query().Get("format")
		if format != "" && format != "html" && format != "markdown" {
			server.WriteError(w, http.StatusBadRequest, "invalid_format", "format must be html or markdown")
			return
		}
		id := r.PathValue("thread")
		s, ok := threadstate.Read[State](w, r, srv, id, AgentName, "not_dataagent", "the data analyst's")
		if !ok {
			return
		}
		switch {
		case s.Answer == nil || s.Answer.Report == "":
			server.WriteError(w, http.StatusNotFound, "no_report", "thread "+id+" has no report yet")
			return
		case p == nil || p.report == nil:
			server.WriteError(w, http.StatusNotFound, "no_renderer", "reports are not rendered by this server")
			return
		}
		locale := text.Say(s.Query, "en", "zh")
		if format == "markdown" {
			w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
			w.Header().Set("Content-Disposition", `attachment; filename="report.md"`)
			w.Write([]byte(p.report.Markdown(s.Answer.Report, locale)))
			return
		}
		page, err := p.report.HTML(s.Answer.Report, locale)
		if err != nil {
			slog.Warn("dataagent: rendering a report", "thread", id, "err", err)
			server.WriteError(w, http.StatusUnprocessableEntity, "render_failed", "the report could not be rendered as a page; ask for it with format=markdown")
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.URL.Query().Has("download") {
			w.Header().Set("Content-Disposition", `attachment; filename="report.html"`)
		}
		w.Write(page)
	})
	if p != nil && p.knowledgeAPI != nil {
		m.Handle("/api/v1/dataagent/knowledge/", p.knowledgeAPI)
	}
	return m
}
