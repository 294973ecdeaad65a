package intent

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/loomkit/loom/contract"
	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/schema"
)

// ModelMatcher is the model stage (WithModel): it shows a model the intents
// and asks which one a text is. The answer is decoded through package
// contract (malformed answers go back to the model with what was wrong)
// and checked against the intents (an unknown id goes back once); a stage
// that still has no usable answer fails, and fusion leaves it out.
type ModelMatcher struct {
	model  llm.Model
	system string
	known  map[string]bool
	oos    string // label an answer of "none" scores, when the intents have it
}

// ModelOptions configure NewModelMatcher.
type ModelOptions struct {
	// Examples is how many examples of each intent the prompt shows.
	// Default 2; negative shows none.
	Examples int
}

// modelChoice is what the model answers.
type modelChoice struct {
	Intent       string             `json:"intent" jsonschema:"description=the id of the intent the text asks for; none when no intent fits"`
	Confidence   float64            `json:"confidence" jsonschema:"minimum=0,maximum=1,description=how sure you are from 0 to 1"`
	Alternatives []modelAlternative `json:"alternatives,omitempty" jsonschema:"description=up to two other intents that could fit"`
}

type modelAlternative struct {
	Intent     string  `json:"intent"`
	Confidence float64 `json:"confidence" jsonschema:"minimum=0,maximum=1"`
}

// noIntent is the model's answer when no intent fits.
const noIntent = "none"

// NewModelMatcher makes the model stage for cfg's intents: each is listed
// in the prompt with its description and a few examples. The out-of-scope
// intent (cfg.OutOfScope) is not listed; a "none" answer scores it, so that
// fusion rejects. The prompt does not change between requests, so a
// provider's prompt cache serves it.
func NewModelMatcher(model llm.Model, cfg Config, opts ModelOptions) (*ModelMatcher, error) {
	switch {
	case opts.Examples == 0:
		opts.Examples = 2
	case opts.Examples < 0:
		opts.Examples = 0
	}
	cfg = cfg.withDefaults()
	sch, err := schema.For[modelChoice]()
	if err != nil {
		return nil, fmt.Errorf("model stage: %w", err)
	}
	m := &ModelMatcher{model: model, known: map[string]bool{}}
	var b strings.Builder
	b.WriteString("You route what a user says to one intent of an assistant, or to none when no intent fits.\n\nIntents:\n")
	for _, in := range cfg.Intents {
		if in.ID == cfg.OutOfScope && cfg.OutOfScope != "" {
			m.oos = in.ID
			continue
		}
		m.known[in.ID] = true
		fmt.Fprintf(&b, "- %s", in.ID)
		if in.Description != "" {
			fmt.Fprintf(&b, ": %s", in.Description)
		}
		for i, ex := range in.Examples[:min(opts.Examples, len(in.Examples))] {
			sep := ", "
			if i == 0 {
				sep = " (e.g. "
			}
			fmt.Fprintf(&b, "%s%q", sep, ex)
		}
		if len(in.Examples) > 0 && opts.Examples > 0 {
			b.WriteByte(')')
		}
		b.WriteByte('\n')
	}
	if len(m.known) == 0 {
		return nil, fmt.Errorf("%w: the model stage needs at least one intent", ErrConfig)
	}
	b.WriteString("\nAnswer with one JSON object and nothing else, in this format:\n")
	b.WriteString(sch.Format())
	m.system = b.String()
	return m, nil
}

// Match implements Matcher: the chosen intent and its alternatives, scored
// by the model's confidence.
func (m *ModelMatcher) Match(ctx context.Context, text string) ([]Candidate, error) {
	msgs := []llm.Message{llm.System(m.system), llm.User(text)}
	ask := contract.Chat(m.model, &msgs, llm.WithTemperature(0), llm.WithMaxTokens(200))
	for attempt := 1; ; attempt++ {
		c, err := contract.Ask[modelChoice](ctx, ask, contract.WithRetries(1))
		if err != nil {
			return nil, fmt.Errorf("model stage: %w", err)
		}
		unknown := m.unknown(c)
		if len(unknown) == 0 {
			return m.candidates(c), nil
		}
		if attempt == 2 {
			return nil, fmt.Errorf("model stage: unknown intents %s", strings.Join(unknown, ", "))
		}
		msgs = append(msgs, llm.User(fmt.Sprintf("%s is not an intent of the list. Answer again with an id from the list, or %q.",
			strings.Join(unknown, ", "), noIntent)))
	}
}

// unknown lists the intents of an answer that are not in the list.
func (m *ModelMatcher) unknown(c modelChoice) []string {
	var out []string
	for _, id := range append([]string{c.Intent}, alternativeIDs(c)...) {
		if id != noIntent && !m.known[id] && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

func alternativeIDs(c modelChoice) []string {
	ids := make([]string, len(c.Alternatives))
	for i, a := range c.Alternatives {
		ids[i] = a.Intent
	}
	return ids
}

// candidates turns a checked answer into the stage's candidates; "none"
// scores the out-of-scope intent when there is one.
func (m *ModelMatcher) candidates(c modelChoice) []Candidate {
	var out []Candidate
	add := func(id string, conf float64) {
		if id == noIntent {
			id = m.oos
		}
		if id == "" || slices.ContainsFunc(out, func(x Candidate) bool { return x.Intent == id }) {
			return
		}
		out = append(out, Candidate{Intent: id, Score: min(max(conf, 0), 1), Reason: "model"})
	}
	add(c.Intent, c.Confidence)
	for _, a := range c.Alternatives {
		add(a.Intent, a.Confidence)
	}
	return out
}
