package report

import (
	"context"
	"embed"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/loomkit/loom/contract"
	"github.com/loomkit/loom/intent"
	"github.com/loomkit/loom/llm"
)

//go:embed config/intents.yml
var configFS embed.FS

// DefaultIntents returns the embedded configuration of the eight intents:
// keywords and examples in Chinese and English.
func DefaultIntents() (intent.Config, error) {
	b, err := configFS.ReadFile("config/intents.yml")
	if err != nil {
		return intent.Config{}, fmt.Errorf("report: reading the intents: %w", err)
	}
	var c intent.Config
	if err := yaml.Unmarshal(b, &c); err != nil {
		return intent.Config{}, fmt.Errorf("report: reading the intents: %w", err)
	}
	return c, nil
}

// IntentDecision is the model's choice of intent.
type IntentDecision struct {
	Intent string `json:"intent" enum:"initial_generation,modify_report,preview_report,export_pdf,export_jrxml,consult_question,undo_modification,reset_session,unknown"`
}

// classifyIntent decides the turn's intent: the local engine when it is
// sure, an upload with no other request means a new design, then the
// model through a contract; without either, the fallback of R1 applies.
func (a *Agent) classifyIntent(ctx context.Context, s State) (State, error) {
	msg := strings.TrimSpace(s.Turn.Text)
	if msg != "" {
		r, err := a.engine.Route(ctx, msg)
		if err != nil {
			return s, fmt.Errorf("classifying the intent: %w", err)
		}
		if r.Decision == intent.Execute && slices.Contains(Intents, r.Intent) {
			s.Turn.Intent, s.Turn.By = r.Intent, "local"
			return s, nil
		}
	}
	if s.Turn.Uploaded && (msg == "" || s.JRXML == "") {
		s.Turn.Intent, s.Turn.By = IntentGenerate, "upload"
		return s, nil
	}
	if a.model != nil && msg != "" {
		d, err := a.askIntent(ctx, s, msg)
		if err != nil {
			return s, err
		}
		if slices.Contains(Intents, d.Intent) {
			s.Turn.Intent, s.Turn.By = d.Intent, "model"
			return s, nil
		}
	}
	s.Turn.Intent, s.Turn.By = "", "fallback"
	return s, nil
}

// askIntent asks the model which intent msg is.
func (a *Agent) askIntent(ctx context.Context, s State, msg string) (IntentDecision, error) {
	sys := prompt("intent_classify.md")
	if s.JRXML != "" {
		sys += "\n\nThere is a current report template."
	} else {
		sys += "\n\nThere is no report template yet."
	}
	msgs := []llm.Message{llm.System(sys), llm.User(msg)}
	d, err := contract.Ask[IntentDecision](ctx, contract.Chat(a.model, &msgs), contract.WithLogger(a.log))
	if err != nil {
		return d, fmt.Errorf("asking the model for the intent: %w", err)
	}
	return d, nil
}
