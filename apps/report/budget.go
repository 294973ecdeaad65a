package report

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/loomkit/loom/apps/report/jrxml"
	"github.com/loomkit/loom/convo"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/llm"
)

// defaultContextTokens is the model's context window assumed when
// Config.ContextTokens is not set: 32,768 tokens, what most models served
// today take at least.
const defaultContextTokens = 32768

// Parts of the model's window that are not the conversation's.
const (
	// answerShare is the part of the window kept for the model's answer
	// (a whole template), at most maxAnswerTokens.
	answerShare     = 4
	maxAnswerTokens = 8192
	// promptReserve is kept for the system prompts, which the view
	// does not count (the longest is under 200 tokens).
	promptReserve = 512
	// windowWorkers is how many windows of a template are sent to the
	// model at once.
	windowWorkers = 4
)

// promptBudget is how many tokens the conversation and context sent to a
// model with a window of n tokens may take.
func promptBudget(n int) int {
	return n - min(n/answerShare, maxAnswerTokens) - promptReserve
}

// viewConfig is the configuration of the model's view: cfg's, within the
// prompt budget of the model's window, with older turns summarised by
// the model when there is one and extractively without. Each summary is
// cached in the thread's state under its SummaryKey.
func (a *Agent) viewConfig(cfg convo.Config) convo.Config {
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = promptBudget(a.cfg.ContextTokens)
	}
	if cfg.Summarizer == nil && a.model != nil {
		cfg.Summarizer = a.summarize
		if cfg.SummaryKey == "" {
			cfg.SummaryKey = "report-model-1"
		}
	}
	if cfg.SummaryKey == "" {
		cfg.SummaryKey = "report-extractive-1"
	}
	return cfg
}

// summaryPrompt asks the model for the summary of older turns.
const summaryPrompt = `You summarise the older part of a conversation between a user and a JasperReports report designer, for the designer to read before the recent messages. Keep what the user asked for and decided, what the template has now (title, fields, bands, styles) and what is still wrong or open. At most 150 words, plain text, in the language the user writes.`

// maxSummarised bounds each message shown to the summariser, in runes.
const maxSummarised = 1500

// summarize is the convo.Summarizer with a model: the previous summary and
// the messages that left the window, summarised by the model.
func (a *Agent) summarize(ctx context.Context, previous string, older []llm.Message) (string, error) {
	var b strings.Builder
	if previous != "" {
		b.WriteString("Summary so far:\n" + previous + "\n\n")
	}
	b.WriteString("Messages:\n")
	for _, m := range older {
		fmt.Fprintf(&b, "%s: %s\n", m.Role, clip(strings.TrimSpace(m.Content), maxSummarised))
	}
	out, err := a.ask(ctx, []llm.Message{llm.System(summaryPrompt), llm.User(b.String())})
	if err != nil || out == "" {
		// A summary is not worth failing the turn: the extractive one
		// stands in.
		a.log.Warn("report: the model did not summarise the conversation; summarising extractively", "err", err)
		return convo.Extractive(cmp.Or(a.cfg.Convo.SummaryMaxChars, 2000))(ctx, previous, older)
	}
	return out, nil
}

// tokens counts the tokens of text as the view does.
func (a *Agent) tokens(text string) int { return a.counter.Count(text) }

// piece is a part of a template sent to the model on its own: the header
// or a window of a band.
type piece struct {
	label string
	text  string
}

// editWindowPrompt asks the model to change one piece of a template.
const editWindowPrompt = `You are a JasperReports 6.x expert. The template is too long to be shown whole, so you see one piece of it at a time: the header (properties, styles, parameters, query, fields, variables, groups) or a window of one band. Change the piece as the user's request needs, and keep everything else in it exactly as it is. A piece the request does not concern comes back unchanged.

Rules:
- The piece may start or end in the middle of a band: keep its first and last tags exactly as they are.
- Declare what you use ($F{}, $P{}, $V{}) in the header; keep elements inside their bands.
- Answer with the piece only, in one ` + "```xml" + ` block.`

// editByWindows changes a template too long for the prompt budget as
// request asks, a piece at a time, as refine_layout does: the header and
// each band window are sent on their own (with the conversation's summary
// and the context pins), at most windowWorkers at once, and put back
// together. It returns the changed template, or an error when the pieces
// do not make a well-formed template again.
func (a *Agent) editByWindows(ctx context.Context, s *State, src, request string, pins convo.Pins) (string, error) {
	doc, err := jrxml.Parse([]byte(src))
	if err != nil {
		return "", fmt.Errorf("reading the template to change it by windows: %w", err)
	}
	dec := doc.Decompose()
	pieces := []piece{{label: "the header", text: dec.Header}}
	for _, b := range dec.Bands {
		for j, w := range b.Windows {
			pieces = append(pieces, piece{label: fmt.Sprintf("band %s, window %d of %d", b.Label(), j+1, len(b.Windows)), text: w})
		}
	}
	shared := renderPins(pins)
	if s.Summary.Text != "" {
		shared += "\n\n<conversation_summary>\n" + s.Summary.Text + "\n</conversation_summary>"
	}
	budget := promptBudget(a.cfg.ContextTokens)
	out := make([]string, len(pieces))
	errs := make([]error, len(pieces))
	sem := make(chan struct{}, windowWorkers)
	var wg sync.WaitGroup
	for i, p := range pieces {
		out[i] = p.text
		if strings.TrimSpace(p.text) == "" || a.tokens(p.text)+a.tokens(shared) > budget {
			continue // nothing to change, or too large to send: kept as it is
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			}
			msgs := []llm.Message{
				llm.System(editWindowPrompt + shared),
				llm.User(fmt.Sprintf("The request: %s\n\nPiece %d of %d (%s):\n```xml\n%s\n```", request, i+1, len(pieces), p.label, p.text)),
			}
			answer, err := a.ask(ctx, msgs)
			if err != nil {
				errs[i] = fmt.Errorf("changing %s: %w", p.label, err)
				return
			}
			if x := extractPiece(answer); strings.TrimSpace(x) != "" {
				out[i] = x
			}
			graph.Emit(ctx, kindProgress, Progress{Window: i + 1, Windows: len(pieces), Band: p.label})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return "", err
		}
	}
	dec.Header = out[0]
	k := 1
	for i := range dec.Bands {
		for j := range dec.Bands[i].Windows {
			dec.Bands[i].Windows[j] = out[k]
			k++
		}
	}
	changed := string(dec.Reassemble())
	if _, err := jrxml.Parse([]byte(changed)); err != nil {
		return "", fmt.Errorf("the changed pieces do not make a well-formed template: %w", err)
	}
	s.Turn.Windows = len(pieces)
	return changed, nil
}
