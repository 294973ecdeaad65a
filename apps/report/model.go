package report

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strings"

	"github.com/loomkit/loom/contract"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/llm"
)

//go:embed prompts/*.md
var promptFS embed.FS

// prompt returns the embedded prompt file name.
func prompt(name string) string {
	b, err := promptFS.ReadFile("prompts/" + name)
	if err != nil {
		panic("report: missing prompt " + name) // a build mistake, caught by every test
	}
	return strings.TrimSpace(string(b))
}

// continuePrompt asks a model cut at its length limit to go on.
const continuePrompt = "Your answer was cut off at the length limit. Continue exactly where it stopped, without repeating anything and without any preface."

// errNoModel is what a node that needs a model finds without one.
var errNoModel = errors.New("no model configured")

// needsModel says what the user must set for what they asked.
func (t *Turn) needsModel(what, was string) {
	t.NeedsModel = true
	t.modelNeeded(what, was)
}

// modelNeeded adds to the reply that what needs a model and which
// variables configure one.
func (t *Turn) modelNeeded(what, was string) {
	before := ""
	if t.Reply != "" {
		before = t.Reply + "\n"
	}
	t.Reply = before + t.say(
		what+" needs a language model. Set OPENAI_API_KEY (and OPENAI_BASE_URL for a provider other than OpenAI) and LOOM_MODEL, then restart the server."+was,
		what+"需要语言模型。请设置 OPENAI_API_KEY（非 OpenAI 的服务再设置 OPENAI_BASE_URL）和 LOOM_MODEL，然后重启服务。"+was)
}

// kindDraft is the kind of the events that carry a template as the model
// writes it, piece by piece (a string); the turn's reply comes at its end.
const kindDraft graph.Kind = "draft"

// write streams the model's answer to msgs as events of kind (KindToken
// for an answer to the user, KindDraft for a template), and continues it,
// up to MaxContinuations times, while the model stops at its length limit.
func (a *Agent) write(ctx context.Context, kind graph.Kind, msgs []llm.Message, opts ...llm.Option) (string, error) {
	if a.model == nil {
		return "", errNoModel
	}
	var all strings.Builder
	for round := 0; ; round++ {
		var part strings.Builder
		var finish llm.FinishReason
		for c, err := range a.model.Stream(ctx, msgs, opts...) {
			if err != nil {
				return "", fmt.Errorf("streaming from the model: %w", err)
			}
			if c.Content != "" {
				part.WriteString(c.Content)
				graph.Emit(ctx, kind, c.Content)
			}
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
		}
		all.WriteString(part.String())
		if finish != llm.FinishLength || round == maxContinuations {
			return all.String(), nil
		}
		msgs = append(msgs[:len(msgs):len(msgs)], llm.Assistant(part.String()), llm.User(continuePrompt))
	}
}

// ask asks the model once, without streaming, for short answers.
func (a *Agent) ask(ctx context.Context, msgs []llm.Message) (string, error) {
	if a.model == nil {
		return "", errNoModel
	}
	r, err := a.model.Generate(ctx, msgs)
	if err != nil {
		return "", fmt.Errorf("asking the model: %w", err)
	}
	return strings.TrimSpace(r.Message.Content), nil
}

// extractXML takes the XML out of a model's answer: the body of its xml
// block when there is one (see contract.Block), from the XML declaration
// or the first tag.
func extractXML(answer string) string {
	s := answer
	if body, ok := contract.Block(answer, "xml"); ok {
		s = body
	}
	if i := strings.Index(s, "<?xml"); i >= 0 {
		s = s[i:]
	} else if i := strings.Index(s, "<jasperReport"); i >= 0 {
		s = s[i:]
	}
	if i := strings.LastIndex(s, "</jasperReport>"); i >= 0 {
		s = s[:i+len("</jasperReport>")]
	}
	return strings.TrimSpace(s) + "\n"
}

// extractPiece takes a piece of XML (a window) out of a model's answer:
// the body of its xml block when there is one, else the answer.
func extractPiece(answer string) string {
	if body, ok := contract.Block(answer, "xml"); ok {
		return body
	}
	return answer
}
