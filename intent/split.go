package intent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// splitter cuts an utterance into clauses at connectives and punctuation.
type splitter struct {
	connectives *automaton
	punct       string
	conditional *automaton
	minRunes    int
}

func newSplitter(c SplitConfig) *splitter {
	norm := func(list []string) []string {
		var out []string
		for _, s := range list {
			if s = Normalize(s); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return &splitter{
		connectives: newAutomaton(norm(c.Connectives)),
		punct:       c.Punctuation,
		conditional: newAutomaton(norm(c.Conditional)),
		minRunes:    c.MinRunes,
	}
}

// span is text[start:end].
type span struct{ start, end int }

// split returns the clauses of normalized text. A cut needs a clause of at
// least minRunes on either side; a connective at the very start (再来一首)
// cuts nothing.
func (s *splitter) split(text string) []string {
	// Separators: punctuation runes and connectives, leftmost-longest,
	// never overlapping.
	var seps []span
	for i, r := range text {
		if strings.ContainsRune(s.punct, r) {
			seps = append(seps, span{i, i + utf8.RuneLen(r)})
		}
	}
	for _, m := range s.connectives.find(text) {
		seps = append(seps, span{m.start, m.end})
	}
	slices.SortFunc(seps, func(a, b span) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return b.end - a.end
	})
	var clauses []span
	from, last := 0, -1
	for _, sep := range seps {
		if sep.start < last {
			continue // overlaps the previous separator
		}
		last = sep.end
		if from > 0 && trimPunct(text[from:sep.start]) == "" {
			from = sep.end // a separator right after a cut: "，然后"
			continue
		}
		if s.long(text[from:sep.start]) && s.long(text[sep.end:]) {
			clauses = append(clauses, span{from, sep.start})
			from = sep.end
		}
	}
	clauses = append(clauses, span{from, len(text)})
	out := make([]string, 0, len(clauses))
	for _, c := range clauses {
		if t := trimPunct(text[c.start:c.end]); t != "" {
			out = append(out, t)
		}
	}
	return out
}

func (s *splitter) long(clause string) bool {
	return utf8.RuneCountInString(trimPunct(clause)) >= s.minRunes
}

// MultiIntent is an utterance read as several requests.
type MultiIntent struct {
	// Kind is "single" (fewer than two clauses route to an intent),
	// "sequence", or "conditional" (a conditional phrase such as 如果).
	Kind string `json:"kind"`
	// Clauses are the routed clauses, in the order said.
	Clauses []Clause `json:"clauses"`
}

// Clause is one routed part of an utterance.
type Clause struct {
	// Text is the clause, normalized.
	Text string `json:"text"`
	// Result is the clause routed on its own.
	Result Result `json:"result"`
}

// Split cuts text into clauses at the configured connectives and
// punctuation; one clause means no cut.
func (e *Engine) Split(text string) []string {
	return e.splitter.split(Normalize(text))
}

// RouteClauses splits text and routes every clause on its own. The kind is
// single unless at least two clauses execute or clarify an in-scope intent.
func (e *Engine) RouteClauses(ctx context.Context, text string) (MultiIntent, error) {
	norm := Normalize(text)
	mi := MultiIntent{Kind: "single"}
	matched := 0
	for _, c := range e.splitter.split(norm) {
		r, err := e.Route(ctx, c)
		if err != nil {
			return mi, fmt.Errorf("route clauses: %w", err)
		}
		if r.Decision == Execute || r.Decision == Clarify {
			matched++
		}
		mi.Clauses = append(mi.Clauses, Clause{Text: c, Result: r})
	}
	switch {
	case matched < 2:
	case len(e.splitter.conditional.find(norm)) > 0:
		mi.Kind = "conditional"
	default:
		mi.Kind = "sequence"
	}
	return mi, nil
}
