package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/loomkit/loom/apps/cabin"
	"github.com/loomkit/loom/apps/dataagent"
	"github.com/loomkit/loom/apps/demo"
	"github.com/loomkit/loom/apps/report"
	"github.com/loomkit/loom/apps/report/xsd"
	"github.com/loomkit/loom/apps/schedule"
	"github.com/loomkit/loom/apps/sqlagent"
	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/llm/openai"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/tool"
)

// agents returns every agent the command knows, configured from the
// environment: what `loom agents` lists, `loom run` and `loom graph` use,
// and `loom serve` serves.
func agents() *server.Registry { return agentsFor(configFromEnv()) }

// config is what the command gives the agents; the agents read no
// environment variables themselves.
type config struct {
	// sqlSources is the SQL explorer's and the data analyst's file of
	// data sources (LOOM_SQLAGENT_SOURCES, loom serve --sqlagent-sources);
	// without one they read a demo shop written at sqlDemo
	// (LOOM_SQLAGENT_DEMO, default beside the checkpoints).
	sqlSources, sqlDemo string
	// sqlBudget, sqlWindow and sqlMaxLength are the SQL explorer's round
	// budget (LOOM_SQLAGENT_BUDGET) and the shape of the model's copy of
	// the history (MESSAGE_COMPRESS_RECENT_WINDOW,
	// MESSAGE_COMPRESS_MAX_LENGTH); 0: the defaults.
	sqlBudget, sqlWindow, sqlMaxLength int
	// pythonTries is how many failed Python runs a data analyst's step
	// takes (LOOM_DATAAGENT_PYTHON_TRIES; 0: the default).
	pythonTries int
	// cabinLocale (zh-CN, en) and cabinConfig (a directory of YAML
	// overrides) configure the cabin (LOOM_CABIN_LOCALE, LOOM_CABIN_CONFIG).
	cabinLocale, cabinConfig string
	// reportTemplates is a directory of JRXML templates for the report
	// designer to learn from (LOOM_REPORT_TEMPLATES), reportSchemas the
	// XSD files it validates against (LOOM_JRXML_XSD, separated as PATH is).
	reportTemplates string
	reportSchemas   []string
	// reportMaxRetry bounds the report designer's correction loop
	// (LOOM_REPORT_MAX_RETRY, loom serve --report-max-retry) and
	// reportSSIM is the similarity a template drawn from a picture must
	// reach (LOOM_REPORT_SSIM, loom serve --report-ssim); 0: the defaults.
	reportMaxRetry int
	reportSSIM     float64
	// reportFont is the TrueType font the report designer draws previews
	// and PDFs with (LOOM_REPORT_FONT, see reportFont).
	reportFont string
	// sqlTools are the SQL explorer's tools from MCP servers (loom serve
	// --mcp-servers, see openMCP).
	sqlTools []tool.Tool
}

// configFromEnv reads the agents' configuration from the environment.
func configFromEnv() config {
	num := func(name string) int {
		n, _ := strconv.Atoi(os.Getenv(name))
		return max(n, 0)
	}
	fraction := func(name string) float64 {
		f, _ := strconv.ParseFloat(os.Getenv(name), 64)
		return min(max(f, 0), 1)
	}
	return config{
		sqlSources: os.Getenv("LOOM_SQLAGENT_SOURCES"), sqlDemo: os.Getenv("LOOM_SQLAGENT_DEMO"),
		sqlBudget: num("LOOM_SQLAGENT_BUDGET"), sqlWindow: num("MESSAGE_COMPRESS_RECENT_WINDOW"), sqlMaxLength: num("MESSAGE_COMPRESS_MAX_LENGTH"),
		pythonTries: num("LOOM_DATAAGENT_PYTHON_TRIES"),
		cabinLocale: os.Getenv("LOOM_CABIN_LOCALE"), cabinConfig: os.Getenv("LOOM_CABIN_CONFIG"),
		reportTemplates: os.Getenv("LOOM_REPORT_TEMPLATES"), reportSchemas: xsd.SchemasFromEnv(),
		reportMaxRetry: num("LOOM_REPORT_MAX_RETRY"), reportSSIM: fraction("LOOM_REPORT_SSIM"),
		reportFont: reportFont(),
	}
}

// modelNames are the models a run may choose (server.Options.Models):
// LOOM_MODEL, then the others LOOM_MODELS lists (comma separated) on the
// same endpoint; none when no model is configured.
func modelNames() []string {
	if m, err := openai.NewFromEnv(); m == nil || err != nil {
		return nil
	}
	names := []string{os.Getenv("LOOM_MODEL")}
	for _, n := range strings.Split(os.Getenv("LOOM_MODELS"), ",") {
		if n = strings.TrimSpace(n); n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// agentsFor returns every agent, configured by cfg.
func agentsFor(cfg config) *server.Registry {
	// A model if OPENAI_* and LOOM_MODEL configure one; the agents work
	// without.
	model, err := openai.NewFromEnv()
	if err != nil {
		slog.Warn("no model: the agents run without one", "err", err)
	}
	// A run may choose another of the models (see modelNames) and a
	// temperature in its configuration.
	model = server.RunModel(model)
	embedder, err := openai.NewEmbedderFromEnv()
	if err != nil {
		slog.Warn("no embeddings: recall runs on words alone", "err", err)
	}
	var r server.Registry
	for _, a := range []server.Agent{
		demoAgent(),
		// The schedule agent keeps its tables beside the checkpoints.
		schedule.ServerAgent(schedule.ServerOptions{Model: model}),
		// The cabin agent keeps its simulated vehicles and orders beside
		// the checkpoints.
		cabin.ServerAgent(cabin.ServerOptions{Model: model, Locale: cfg.cabinLocale, ConfigDir: cfg.cabinConfig}),
		sqlagent.ServerAgent(sqlagent.ServerOptions{Model: model, SourcesFile: cfg.sqlSources, DemoPath: cfg.sqlDemo,
			Budget: cfg.sqlBudget, Window: cfg.sqlWindow, MaxLength: cfg.sqlMaxLength, Tools: cfg.sqlTools}),
		// The data analyst reads the SQL explorer's databases, with
		// knowledge per data source kept beside the checkpoints;
		// LOOM_EMBED_MODEL adds embeddings to its recall.
		dataagent.ServerAgent(dataagent.ServerOptions{Model: model, Embedder: embedder, SourcesFile: cfg.sqlSources, DemoPath: cfg.sqlDemo,
			PythonTries: cfg.pythonTries}),
		report.ServerAgent(report.ServerOptions{Model: model, TemplatesDir: cfg.reportTemplates, Schemas: cfg.reportSchemas, MaxRetry: cfg.reportMaxRetry, SSIM: cfg.reportSSIM, Font: cfg.reportFont}),
	} {
		if err := r.Register(a); err != nil {
			panic(err) // a programming error in the list above
		}
	}
	return &r
}

func demoAgent() server.Agent {
	return server.Agent{
		Name:          "demo",
		Description:   "checklist with a bounded correction loop and an approval (no model needed)",
		DescriptionZh: "清单示例：带有次数上限的修正循环和一次审批（无需模型）",
		InputSchema:   server.InputSchemaFor[demo.Input](),
		Build:         server.Compile(demo.Graph()),
		// A chat message is the checklist's title.
		FromChat: func(text string) (json.RawMessage, error) {
			return json.Marshal(map[string]string{"title": strings.TrimSpace(text)})
		},
		Reply: demoReply,
	}
}

// demoReply shows the checklist, with the question while it waits for
// approval.
func demoReply(state json.RawMessage, pending *checkpoint.Interrupt) string {
	var d demo.Doc
	if err := json.Unmarshal(state, &d); err != nil {
		return string(state)
	}
	var b strings.Builder
	if pending != nil {
		var q demo.Question
		if json.Unmarshal(pending.Payload, &q) == nil && q.Summary != "" {
			b.WriteString(q.Summary + "\n")
		}
	} else if d.Approved {
		fmt.Fprintf(&b, "Checklist %q approved.\n", d.Title)
	} else {
		fmt.Fprintf(&b, "Checklist %q rejected.\n", d.Title)
	}
	for _, it := range d.Items {
		b.WriteString("- " + it + "\n")
	}
	switch {
	case pending != nil:
		b.WriteString(`Reply "yes" to approve, or "no" to reject with a reason after it ("no, too long").`)
	case d.Note != "":
		b.WriteString("Note: " + d.Note)
	}
	return strings.TrimRight(b.String(), "\n")
}
