package sqlagent

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/contract"
	"github.com/loomkit/loom/convo"
	"github.com/loomkit/loom/datasource"
	"github.com/loomkit/loom/internal/text"
	"github.com/loomkit/loom/llm"
)

// State is a conversation with the agent: a thread. It round-trips
// through JSON, as every checkpoint stores it.
type State struct {
	// Question is a run's input: the user's message. It is consumed when
	// the turn starts.
	Question string `json:"question,omitempty"`
	// Source names the data source to use (default: the first).
	Source string `json:"source,omitempty"`
	// Title is the conversation's title: its first question.
	Title string `json:"title,omitempty"`
	// ReAct is the loop's state: the full history (kept whole for
	// display), the cached summary, the rounds.
	ReAct agent.State `json:"react"`
	// TurnStart is where the current turn's question is in ReAct.Messages.
	TurnStart int `json:"turn_start"`
	// Known is what the thread learned, restored for every new question.
	Known
	// Answer is the last turn's answer.
	Answer *Answer `json:"answer,omitempty"`
}

// Known is what the agent learned on a thread: kept in the state,
// restored for every new question and listed in the system prompt so that
// the model does not explore again.
type Known struct {
	// Tables are the tables list_tables returned, as SOURCE.TABLE when
	// the agent has more than one source.
	Tables []string `json:"known_tables"`
	// Schemas are the tables describe_table returned.
	Schemas map[string]datasource.Table `json:"known_schemas"`
	// Samples are the rows sample_rows returned (the first 5 of each).
	Samples map[string]Sample `json:"known_samples"`
	// SQL is every statement run_sql ran, oldest first.
	SQL []SQLRun `json:"sql_history"`
	// Errors are the tool calls that failed, oldest first.
	Errors []ToolError `json:"error_history"`
	// Learned is how many messages of the history have been read.
	Learned int `json:"learned"`
}

// Sample is a few rows of a table.
type Sample struct {
	Columns []string `json:"columns"`
	Rows    [][]any  `json:"rows"`
}

// SQLRun is one statement run_sql ran.
type SQLRun struct {
	// Source is the data source it ran on (empty in threads from before
	// it was kept).
	Source    string `json:"source,omitempty"`
	SQL       string `json:"sql"`
	Rows      int    `json:"rows"`
	Truncated bool   `json:"truncated,omitempty"`
}

// ToolError is a tool call that failed: a refusal, a database error.
type ToolError struct {
	Tool  string `json:"tool"`
	Input string `json:"input"`
	Error string `json:"error"`
}

// Answer is what a turn answers: the text, the SQL that produced it and
// its result as a table.
type Answer struct {
	Text      string   `json:"text"`
	SQL       string   `json:"sql,omitempty"`
	Columns   []string `json:"columns,omitempty"`
	Rows      [][]any  `json:"rows,omitempty"`
	Truncated bool     `json:"truncated,omitempty"`
}

// maxHistory bounds the SQL and error histories kept in the state.
const maxHistory = 50

// learn reads the tool calls and results of history[k.Learned:] into k.
// multi says the agent has more than one source, so names carry theirs.
func (k *Known) learn(history []llm.Message, multi bool) {
	if k.Learned > len(history) {
		k.Learned = 0 // a history that was cut: read it again
	}
	calls := map[string]llm.ToolCall{}
	for _, m := range history[:k.Learned] {
		for _, c := range m.ToolCalls {
			calls[c.ID] = c
		}
	}
	for _, m := range history[k.Learned:] {
		for _, c := range m.ToolCalls {
			calls[c.ID] = c
		}
		if m.Role != llm.RoleTool {
			continue
		}
		c, ok := calls[m.ToolCallID]
		if !ok {
			continue
		}
		k.learnCall(c, m.Content, multi)
	}
	k.Learned = len(history)
}

func (k *Known) learnCall(c llm.ToolCall, result string, multi bool) {
	if msg, failed := strings.CutPrefix(result, "error: "); failed {
		input := c.Arguments
		if a := decodeArgs[sqlArgs](c.Arguments); a.SQL != "" {
			input = a.SQL
		}
		k.Errors = appendBounded(k.Errors, ToolError{Tool: c.Name, Input: input, Error: msg})
		return
	}
	qualify := func(source, table string) string {
		if multi && source != "" {
			return source + "." + table
		}
		return table
	}
	switch c.Name {
	case ToolListTables:
		var l tableList
		if json.Unmarshal([]byte(result), &l) != nil {
			return
		}
		for _, t := range l.Tables {
			if n := qualify(l.Source, t.Name); !slices.Contains(k.Tables, n) {
				k.Tables = append(k.Tables, n)
			}
		}
	case ToolDescribeTable:
		var t datasource.Table
		if json.Unmarshal([]byte(result), &t) != nil || t.Name == "" {
			return
		}
		if k.Schemas == nil {
			k.Schemas = map[string]datasource.Table{}
		}
		k.Schemas[qualify(decodeArgs[tableArgs](c.Arguments).Source, t.Name)] = t
	case ToolSampleRows:
		var s struct {
			Table   string   `json:"table"`
			Columns []string `json:"columns"`
			Rows    [][]any  `json:"rows"`
		}
		if json.Unmarshal([]byte(result), &s) != nil || s.Table == "" {
			return
		}
		if k.Samples == nil {
			k.Samples = map[string]Sample{}
		}
		k.Samples[qualify(decodeArgs[sampleArgs](c.Arguments).Source, s.Table)] = Sample{s.Columns, s.Rows[:min(len(s.Rows), 5)]}
	case ToolRunSQL:
		var r struct {
			Source string `json:"source"`
			datasource.Result
		}
		if json.Unmarshal([]byte(result), &r) != nil {
			return
		}
		a := decodeArgs[sqlArgs](c.Arguments)
		k.SQL = appendBounded(k.SQL, SQLRun{Source: cmp.Or(r.Source, a.Source), SQL: a.SQL, Rows: len(r.Rows), Truncated: r.Truncated})
	}
}

func appendBounded[T any](s []T, v T) []T {
	s = append(s, v)
	if len(s) > maxHistory {
		s = slices.Clone(s[len(s)-maxHistory:])
	}
	return s
}

// lastResult returns the last run_sql call of history that succeeded,
// with its result.
func lastResult(history []llm.Message) (string, *datasource.Result) {
	calls := map[string]llm.ToolCall{}
	for _, m := range history {
		for _, c := range m.ToolCalls {
			calls[c.ID] = c
		}
	}
	for i := len(history) - 1; i >= 0; i-- {
		m := history[i]
		c, ok := calls[m.ToolCallID]
		if m.Role != llm.RoleTool || !ok || c.Name != ToolRunSQL || strings.HasPrefix(m.Content, "error: ") {
			continue
		}
		var r datasource.Result
		if json.Unmarshal([]byte(m.Content), &r) != nil {
			continue
		}
		return decodeArgs[sqlArgs](c.Arguments).SQL, &r
	}
	return "", nil
}

// render lists what is known for the system prompt, bounded in
// characters: tables, then schemas (one line a table), then the last
// statements and errors.
func (k *Known) render(maxChars int) string {
	if len(k.Tables) == 0 && len(k.Schemas) == 0 && len(k.SQL) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Known from earlier on this conversation — use it and do not call list_tables or describe_table again for these tables:\n")
	if len(k.Tables) > 0 {
		b.WriteString("Tables: " + strings.Join(k.Tables, ", ") + "\n")
	}
	for _, name := range slices.Sorted(maps.Keys(k.Schemas)) {
		line := "- " + schemaLine(name, k.Schemas[name]) + "\n"
		if utf8.RuneCountInString(b.String())+utf8.RuneCountInString(line) > maxChars*3/4 {
			b.WriteString("- … (more tables described)\n")
			break
		}
		b.WriteString(line)
	}
	if runs := k.lastSQL(pinnedSQL); len(runs) > 0 {
		b.WriteString("SQL that ran:\n")
		for _, r := range runs {
			on := ""
			if r.Source != "" {
				on = "[" + r.Source + "] "
			}
			more := ""
			if r.Truncated {
				more = "+"
			}
			fmt.Fprintf(&b, "- %s%s → %d%s rows\n", on, text.OneLine(r.SQL, 200), r.Rows, more)
		}
	}
	if n := len(k.Errors); n > 0 {
		b.WriteString("Errors to avoid:\n")
		for _, e := range k.Errors[max(0, n-3):] {
			fmt.Fprintf(&b, "- %s %s: %s\n", e.Tool, text.OneLine(e.Input, 120), text.OneLine(e.Error, 160))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// pinnedSQL is how many statements the model is reminded of.
const pinnedSQL = 5

// lastSQL returns the last n different statements that ran, oldest
// first: a statement run again on the same source counts once, where it
// last ran.
func (k *Known) lastSQL(n int) []SQLRun {
	var out []SQLRun
	seen := map[string]bool{}
	for i := len(k.SQL) - 1; i >= 0 && len(out) < n; i-- {
		r := k.SQL[i]
		key := r.Source + "\x00" + strings.Join(strings.Fields(r.SQL), " ")
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, r)
	}
	slices.Reverse(out)
	return out
}

// schemaLine writes a table in one line: name(col type PK, col type →
// other.col, …).
func schemaLine(name string, t datasource.Table) string {
	fks := references(t)
	cols := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		s := c.Name + " " + strings.ToLower(c.Type)
		if slices.Contains(t.PrimaryKey, c.Name) {
			s += " PK"
		}
		if ref, ok := fks[c.Name]; ok {
			s += " → " + ref
		}
		cols[i] = s
	}
	rows := ""
	if t.Rows >= 0 {
		rows = fmt.Sprintf(" [%d rows]", t.Rows)
	}
	return name + "(" + strings.Join(cols, ", ") + ")" + rows
}

// references maps each foreign-key column of t to the TABLE.COLUMN it
// references.
func references(t datasource.Table) map[string]string {
	fks := map[string]string{}
	for _, fk := range t.ForeignKeys {
		for i, c := range fk.Columns {
			if i < len(fk.RefColumns) {
				fks[c] = fk.RefTable + "." + fk.RefColumns[i]
			}
		}
	}
	return fks
}

// summarize is the summary of older messages for the model's view (the
// convo.Summarizer): the questions asked, the tables listed and described,
// the statements run and their outcome, the answers given, then the
// previous summary's lines, bounded to maxChars with the oldest lines
// dropped.
func summarize(maxChars int) convo.Summarizer {
	return func(_ context.Context, previous string, older []llm.Message) (string, error) {
		var lines []string
		if previous != "" {
			lines = strings.Split(previous, "\n")
		}
		var k Known
		k.learn(older, true)
		for _, m := range older {
			switch {
			case m.Role == llm.RoleUser && !strings.HasPrefix(m.Content, "Your previous answer"):
				lines = append(lines, "question: "+text.OneLine(m.Content, 200))
			case m.Role == llm.RoleAssistant && len(m.ToolCalls) > 0:
				for _, c := range m.ToolCalls {
					lines = append(lines, "called "+c.Name+" "+text.OneLine(c.Arguments, 200))
				}
			case m.Role == llm.RoleAssistant:
				if d, err := contract.Decode[agent.Decision](m.Content); err == nil && d.Answer != "" {
					lines = append(lines, "answered: "+text.OneLine(d.Answer, 300))
				} else if strings.HasPrefix(m.Content, "Progress so far: ") {
					lines = append(lines, text.OneLine(m.Content, 400))
				}
			}
		}
		if len(k.Tables) > 0 {
			lines = append(lines, "tables listed: "+strings.Join(k.Tables, ", "))
		}
		for _, name := range slices.Sorted(maps.Keys(k.Schemas)) {
			lines = append(lines, "described: "+text.OneLine(schemaLine(name, k.Schemas[name]), 300))
		}
		for _, e := range k.Errors {
			lines = append(lines, "failed: "+e.Tool+" "+text.OneLine(e.Input, 100)+": "+text.OneLine(e.Error, 150))
		}
		total := 0
		for _, l := range lines {
			total += utf8.RuneCountInString(l) + 1
		}
		for len(lines) > 1 && total > maxChars {
			total -= utf8.RuneCountInString(lines[0]) + 1
			lines = lines[1:]
		}
		return strings.Join(lines, "\n"), nil
	}
}
