package knowledge

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/loomkit/loom/apps/dataagent/recall"
)

// Doc is an entry as a text document for retrieval: what a question is
// matched against, and what the model is shown.
type Doc struct {
	ID     string `json:"id"`
	Kind   Kind   `json:"kind"`
	Source string `json:"source"`
	// Title names the entry: the term, the document's title, the
	// example's question, or table.column with its business name.
	Title string `json:"title"`
	// Text is everything to match and show, the title included. An
	// example's is its question and description, not its SQL, so that a
	// question matches the questions asked before.
	Text string `json:"text"`
	// SQL is an example's statement.
	SQL string `json:"sql,omitempty"`
}

// Doc returns e as a document for retrieval.
func (e *Entry) Doc() Doc {
	d := Doc{ID: e.ID, Kind: e.Kind, Source: e.Source}
	var b strings.Builder
	line := func(parts ...string) {
		for _, p := range parts {
			b.WriteString(p)
		}
		b.WriteByte('\n')
	}
	synonyms := ""
	if len(e.Synonyms) > 0 {
		synonyms = " (" + strings.Join(e.Synonyms, ", ") + ")"
	}
	switch e.Kind {
	case KindTerm:
		d.Title = e.Term
		line(e.Term, synonyms)
		if e.Formula != "" {
			line(e.Term, " = ", e.Formula)
		}
	case KindDocument:
		d.Title = e.Title
		line(e.Title)
		line(e.Text)
	case KindExample:
		d.Title, d.SQL = e.Question, e.SQL
		line(e.Question)
	case KindSemantic:
		d.Title = e.Table
		if e.Column != "" {
			d.Title += "." + e.Column
		}
		if e.Name != "" {
			d.Title += " " + e.Name
		}
		line(d.Title, synonyms)
		if len(e.Values) > 0 {
			vs := make([]string, 0, len(e.Values))
			for _, v := range slices.Sorted(maps.Keys(e.Values)) {
				vs = append(vs, v+" = "+e.Values[v])
			}
			line(strings.Join(vs, "; "))
		}
	}
	if e.Description != "" {
		line(e.Description)
	}
	d.Text = strings.TrimSpace(b.String())
	return d
}

// Docs returns the caller's knowledge of source as documents for
// retrieval: terms, documents, examples and semantic model entries.
func (s *Store) Docs(ctx context.Context, source string) ([]Doc, error) {
	entries, err := s.List(ctx, Filter{Source: source})
	if err != nil {
		return nil, fmt.Errorf("knowledge documents of %s: %w", source, err)
	}
	out := make([]Doc, len(entries))
	for i := range entries {
		out[i] = entries[i].Doc()
	}
	return out, nil
}

// SemanticModel returns the caller's semantic model of source as schema
// recall indexes it, by table and then column (the table's own entry
// first).
func (s *Store) SemanticModel(ctx context.Context, source string) ([]recall.Meaning, error) {
	entries, err := s.List(ctx, Filter{Source: source, Kind: KindSemantic})
	if err != nil {
		return nil, fmt.Errorf("semantic model of %s: %w", source, err)
	}
	out := make([]recall.Meaning, len(entries))
	for i, e := range entries {
		out[i] = recall.Meaning{Table: e.Table, Column: e.Column, Name: e.Name, Synonyms: e.Synonyms, Values: e.Values, Description: e.Description}
	}
	slices.SortStableFunc(out, func(a, b recall.Meaning) int {
		if c := strings.Compare(strings.ToLower(a.Table), strings.ToLower(b.Table)); c != 0 {
			return c
		}
		return strings.Compare(strings.ToLower(a.Column), strings.ToLower(b.Column))
	})
	return out, nil
}

// Examples returns the caller's question → SQL examples of source.
func (s *Store) Examples(ctx context.Context, source string) ([]Entry, error) {
	return s.List(ctx, Filter{Source: source, Kind: KindExample})
}
