package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/loomkit/loom/llm/openai"

	"github.com/loomkit/loom/apps/cabin"
	"github.com/loomkit/loom/apps/dataagent"
	"github.com/loomkit/loom/apps/demo"
	"github.com/loomkit/loom/apps/report"
	"github.com/loomkit/loom/apps/schedule"
	"github.com/loomkit/loom/apps/sqlagent"
	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/server"
)

// agents returns every agent the command knows: what `loom agents` lists,
// `loom run` and `loom graph` use, and `loom serve` serves.
func agents() *server.Registry {
	// A model if OPENAI_* and LOOM_MODEL configure one; the agents work
	// without.
	model, err := openai.NewFromEnv()
	if err != nil {
		slog.Warn("no model: the agents run without one", "err", err)
	}
	embedder, err := openai.NewEmbedderFromEnv()
	if err != nil {
		slog.Warn("no embeddings: recall runs on words alone", "err", err)
	}
	var r server.Registry
	for _, a := range []server.Agent{
		demoAgent(),
		// The schedule agent keeps its tables beside the checkpoints
		// (LOOM_DATABASE_URL, default ./loom.db).
		schedule.ServerAgent(schedule.ServerOptions{Model: model}),
		// The cabin agent keeps its simulated vehicles and orders beside
		// the checkpoints; LOOM_CABIN_LOCALE (zh-CN, en) and
		// LOOM_CABIN_CONFIG (a directory of YAML overrides) configure it.
		cabin.ServerAgent(cabin.ServerOptions{Model: model}),
		// The SQL explorer reads the databases LOOM_SQLAGENT_SOURCES lists,
		// else a demo shop it writes beside the checkpoints on first start.
		sqlagent.ServerAgent(sqlagent.ServerOptions{Model: model}),
		// The data analyst reads the SQL explorer's databases, with
		// knowledge per data source kept beside the checkpoints;
		// LOOM_EMBED_MODEL adds embeddings to its recall.
		dataagent.ServerAgent(dataagent.ServerOptions{Model: model, Embedder: embedder}),
		// The report designer: JasperReports templates from a chat, an
		// uploaded form or template; LOOM_REPORT_TEMPLATES names a
		// directory of templates to learn from, LOOM_JRXML_XSD the schemas.
		report.ServerAgent(report.ServerOptions{Model: model}),
	} {
		if err := r.Register(a); err != nil {
			panic(err) // a programming error in the list above
		}
	}
	return &r
}

func demoAgent() server.Agent {
	return server.Agent{
		Name:        "demo",
		Description: "checklist with a bounded correction loop and an approval (no model needed)",
		InputSchema: server.InputSchemaFor[demo.Input](),
		Build: func(s checkpoint.Saver) (graph.Runner, error) {
			return demo.Graph().Compile(graph.WithSaver(s))
		},
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
