package dataagent

import (
	"context"
	"embed"
	"fmt"
	"slices"
	"strings"

	"github.com/loomkit/loom/apps/internal/decision"
	"github.com/loomkit/loom/apps/internal/table"
	"github.com/loomkit/loom/datasource"
	"github.com/loomkit/loom/internal/text"
	"github.com/loomkit/loom/llm"
)

//go:embed prompts/*.md
var prompts embed.FS

// prompt returns an embedded prompt; a missing one is a programming error.
func prompt(name string) string {
	b, err := prompts.ReadFile("prompts/" + name + ".md")
	if err != nil {
		panic(fmt.Sprintf("dataagent: prompt %s: %v", name, err))
	}
	return strings.TrimSpace(string(b))
}

// askJSON asks the model for a typed decision T (decision.Ask).
func askJSON[T any](ctx context.Context, m llm.Model, system, user string) (T, error) {
	return decision.Ask[T](ctx, m, system, user, false, llm.WithTemperature(0.1))
}

// askText asks the model for free text (code, a report).
func askText(ctx context.Context, m llm.Model, system, user string) (string, error) {
	resp, err := m.Generate(ctx, []llm.Message{llm.System(system), llm.User(user)}, llm.WithTemperature(0.2))
	if err != nil {
		return "", err
	}
	return resp.Message.Content, nil
}

// brief is the context a prompt gives the model, section by section;
// empty sections are left out.
type brief []string

func (b brief) add(title, body string) brief {
	if strings.TrimSpace(body) == "" {
		return b
	}
	return append(b, "## "+title+"\n"+strings.TrimSpace(body))
}

func (b brief) String() string { return strings.Join(b, "\n\n") }

// schemaText writes the tables for a prompt, one line a table: name
// (column type PK, column type → other.column, …) and the comments.
func schemaText(tables []datasource.Table) string {
	var b strings.Builder
	for _, t := range tables {
		fks := map[string]string{}
		for _, fk := range t.ForeignKeys {
			for i, c := range fk.Columns {
				if i < len(fk.RefColumns) {
					fks[c] = fk.RefTable + "." + fk.RefColumns[i]
				}
			}
		}
		cols := make([]string, len(t.Columns))
		for i, c := range t.Columns {
			s := c.Name + " " + strings.ToLower(c.Type)
			if slices.Contains(t.PrimaryKey, c.Name) {
				s += " PK"
			}
			if ref, ok := fks[c.Name]; ok {
				s += " → " + ref
			}
			if c.Comment != "" {
				s += " -- " + text.OneLine(c.Comment, 80)
			}
			cols[i] = s
		}
		fmt.Fprintf(&b, "- %s(%s)", t.Name, strings.Join(cols, ", "))
		if t.Comment != "" {
			b.WriteString(" -- " + text.OneLine(t.Comment, 120))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func relationText(rs []Relation) string {
	var b strings.Builder
	for _, r := range rs {
		kind := "foreign key"
		if r.Logical {
			kind = "logical key"
		}
		fmt.Fprintf(&b, "- %s = %s (%s)\n", r.From, r.To, kind)
	}
	return b.String()
}

func evidenceText(ev []Evidence) string {
	var b strings.Builder
	for _, e := range ev {
		switch e.Kind {
		case "example":
			fmt.Fprintf(&b, "- example: %s\n  SQL: %s\n", e.Title, text.OneLine(e.SQL, 600))
		default:
			fmt.Fprintf(&b, "- %s %s: %s\n", e.Kind, e.Title, text.OneLine(e.Text, 400))
		}
	}
	return b.String()
}

func planText(p *Plan) string {
	if p == nil {
		return ""
	}
	var b strings.Builder
	for i, st := range p.Steps {
		fmt.Fprintf(&b, "%d. [%s] %s\n", i+1, st.Tool, st.Instruction)
	}
	return b.String()
}

// resultText writes a step's result as a Markdown table (the first 20
// rows, with the count), as the SQL agent shows its results.
func resultText(r StepResult, question string) string {
	return table.Markdown(r.Columns, r.Rows, r.Truncated, text.HasHan(question))
}

func resultsText(rs []StepResult, question string) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "Step %d: %s\nSQL: %s\n%s\n\n", r.Step+1, r.Instruction, text.OneLine(r.SQL, 600), resultText(r, question))
	}
	return b.String()
}
