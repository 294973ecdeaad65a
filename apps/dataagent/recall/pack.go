package recall

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/loomkit/loom/convo"
)

// Counter counts the tokens of a text; convo.Tiktoken's counters are
// Counters.
type Counter interface {
	Count(text string) int
}

var (
	defaultOnce    sync.Once
	defaultCounter Counter
)

// counter returns tiktoken's cl100k_base, or convo's estimate when it
// cannot load.
func counter() Counter {
	defaultOnce.Do(func() {
		c, err := convo.Tiktoken("cl100k_base")
		if err != nil {
			defaultCounter = convo.Estimate{}
			return
		}
		defaultCounter = c
	})
	return defaultCounter
}

// pack writes the tables' text in rank order within the budget: whole
// where it fits, else compact, else not at all. at[n] is the index of
// tables[n].
func (s *Schema) pack(tables []Table, at []int, o Options) (*Result, error) {
	count, cached := o.Counter, o.Counter == nil
	if cached {
		count = counter()
	}
	res := &Result{}
	var b strings.Builder
	for n, t := range tables {
		i := at[n]
		text := s.describe(i, t, false)
		var n int
		switch {
		case !cached || t.Via != "":
			n = count.Count(text)
		case s.tokens[i].Load() > 0:
			n = int(s.tokens[i].Load()) - 1
		default:
			// A table's whole description does not change: it is
			// counted once, the first time it is recalled.
			n = count.Count(text)
			s.tokens[i].Store(int32(n) + 1)
		}
		if o.TokenBudget > 0 && res.Tokens+n > o.TokenBudget {
			text = s.describe(i, t, true)
			n = count.Count(text)
			if res.Tokens+n > o.TokenBudget {
				continue
			}
			t.Compact = true
		}
		b.WriteString(text)
		res.Tokens += n
		res.Tables = append(res.Tables, t)
	}
	res.Text = b.String()
	return res, nil
}

// describe writes a table for a model: one line per column with its type,
// keys, joins, business name, enum meanings and sample values. Compact
// keeps only the matched and key columns.
func (s *Schema) describe(i int, t Table, compact bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "TABLE %s", t.Name)
	var notes []string
	if t.Comment != "" {
		notes = append(notes, t.Comment)
	}
	if m := s.tableMng[i]; m != nil {
		notes = append(notes, meaningNote(m))
	}
	if t.Via != "" {
		notes = append(notes, t.Via)
	}
	if len(notes) > 0 {
		b.WriteString(" -- " + strings.Join(notes, "; "))
	}
	b.WriteByte('\n')
	pk := map[string]bool{}
	for _, c := range t.PrimaryKey {
		pk[strings.ToLower(c)] = true
	}
	refs := map[string]string{}
	for _, l := range s.links[i] {
		if !l.refers {
			continue
		}
		if _, ok := refs[strings.ToLower(l.from)]; !ok || l.declared {
			refs[strings.ToLower(l.from)] = s.tables[l.to].Name + "." + l.at
		}
	}
	matched := map[string]bool{}
	for _, c := range t.Columns {
		matched[c] = true
	}
	left := 0
	for j, c := range t.Table.Columns {
		ci := s.columns[i][j]
		if compact && !ci.key && !matched[c.Name] {
			left++
			continue
		}
		fmt.Fprintf(&b, "  %s %s", c.Name, c.Type)
		if pk[strings.ToLower(c.Name)] {
			b.WriteString(" PRIMARY KEY")
		}
		if r, ok := refs[strings.ToLower(c.Name)]; ok {
			b.WriteString(" -> " + r)
		}
		var notes []string
		if c.Comment != "" {
			notes = append(notes, c.Comment)
		}
		if ci.meaning != nil {
			notes = append(notes, meaningNote(ci.meaning))
		}
		if len(ci.samples) > 0 {
			notes = append(notes, "e.g. "+quoteAll(ci.samples))
		}
		if len(notes) > 0 {
			b.WriteString(" -- " + strings.Join(notes, "; "))
		}
		b.WriteByte('\n')
	}
	if left > 0 {
		fmt.Fprintf(&b, "  ... %d more columns\n", left)
	}
	return b.String()
}

func meaningNote(m *Meaning) string {
	var parts []string
	if m.Name != "" {
		parts = append(parts, m.Name)
	}
	if len(m.Synonyms) > 0 {
		parts = append(parts, "also "+strings.Join(m.Synonyms, ", "))
	}
	if m.Description != "" {
		parts = append(parts, m.Description)
	}
	if len(m.Values) > 0 {
		var vs []string
		for _, v := range slices.Sorted(maps.Keys(m.Values)) {
			vs = append(vs, fmt.Sprintf("'%s' = %s", v, m.Values[v]))
		}
		parts = append(parts, "values "+strings.Join(vs, ", "))
	}
	return strings.Join(parts, "; ")
}

func quoteAll(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = "'" + strings.ReplaceAll(v, "'", "''") + "'"
	}
	return strings.Join(q, ", ")
}
