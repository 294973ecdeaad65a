package intent

import (
	"context"
	"fmt"
	"time"
)

// Turn is one user turn with what the session knows.
type Turn struct {
	// Text is what the user said.
	Text string `json:"text"`
	// Intent is the session's current intent, for rewrite rules.
	Intent string `json:"intent,omitempty"`
	// Slots are the session's known slots, for rewrite rules.
	Slots map[string]string `json:"slots,omitempty"`
	// ActiveTask is set while a task runs or waits; stop phrases need it.
	ActiveTask bool `json:"active_task,omitempty"`
	// LastSocial is set when the previous turn was small talk.
	LastSocial bool `json:"last_social,omitempty"`
}

// Understanding is what the engine made of a turn, in the order it is
// made: dialog act, stop, social, rewrite, routing, clauses.
type Understanding struct {
	// Act is the turn's dialog act.
	Act string `json:"act"`
	// Stop is set when a stop phrase ended the active task; nothing more
	// was done.
	Stop bool `json:"stop,omitempty"`
	// Social is set when the turn is small talk; it was not routed.
	Social       bool   `json:"social,omitempty"`
	SocialReason string `json:"social_reason,omitempty"`
	// Rewritten and RewriteRule are set when a rewrite rule applied; Slots
	// are then the slots it used, adjusted.
	Rewritten   string            `json:"rewritten,omitempty"`
	RewriteRule string            `json:"rewrite_rule,omitempty"`
	Slots       map[string]string `json:"slots,omitempty"`
	// Route is the whole (rewritten) text routed; nil when stopped or social.
	Route *Result `json:"route,omitempty"`
	// Multi is set when the text holds two or more routable clauses.
	Multi *MultiIntent `json:"multi,omitempty"`
	// Times are what each rule took; Elapsed is the
	// whole turn, routing included.
	Times   RuleTimes     `json:"rule_times"`
	Elapsed time.Duration `json:"elapsed_ns"`
}

// RuleTimes are the times of the rules run before routing; a rule that did
// not run (the turn stopped or was social before it) took 0.
type RuleTimes struct {
	DialogAct   time.Duration `json:"dialog_act_ns"`
	StopCheck   time.Duration `json:"stop_check_ns"`
	SocialRoute time.Duration `json:"social_route_ns"`
	Rewrite     time.Duration `json:"rewrite_ns"`
}

// Understand runs the rules and the router over a turn: Act, IsStop,
// Social and Rewrite in this order, then Route and RouteClauses.
func (e *Engine) Understand(ctx context.Context, t Turn) (u Understanding, err error) {
	start := time.Now()
	defer func() { u.Elapsed = time.Since(start) }()
	text := Normalize(t.Text)
	// lap returns the time since the last lap.
	last := start
	lap := func() time.Duration {
		now := time.Now()
		d := now.Sub(last)
		last = now
		return d
	}
	u.Act = e.rules.act(text)
	u.Times.DialogAct = lap()
	_, _, stop := e.rules.stop.match(text)
	u.Times.StopCheck = lap()
	if stop && t.ActiveTask {
		u.Stop = true
		return u, nil
	}
	u.Social, u.SocialReason = e.social(text, t.LastSocial)
	u.Times.SocialRoute = lap()
	if u.Social {
		return u, nil
	}
	if out, rule, slots, ok := e.rules.rewriteTurn(text, t.Intent, t.Slots); ok {
		u.Rewritten, u.RewriteRule, u.Slots = out, rule, slots
		text = Normalize(out)
	}
	u.Times.Rewrite = lap()
	r, err := e.Route(ctx, text)
	if err != nil {
		return u, fmt.Errorf("understand: %w", err)
	}
	u.Route = &r
	if len(e.splitter.split(text)) > 1 {
		mi, err := e.RouteClauses(ctx, text)
		if err != nil {
			return u, fmt.Errorf("understand: %w", err)
		}
		if mi.Kind != "single" {
			u.Multi = &mi
		}
	}
	return u, nil
}

// The rules one at a time, for an agent whose graph runs them as steps of
// its own; Understand runs them all.

// Act returns the dialog act of text: the first of Rules.Acts whose
// phrases it holds, else the default act.
func (e *Engine) Act(text string) string { return e.rules.act(Normalize(text)) }

// IsStop reports whether text holds a stop phrase. It stops a task only
// when one is active; that is the caller's to know.
func (e *Engine) IsStop(text string) bool {
	_, _, ok := e.rules.stop.match(Normalize(text))
	return ok
}

// Social reports whether text is small talk and why (the reason
// Understanding.SocialReason carries); lastSocial is set when the
// previous turn was small talk.
func (e *Engine) Social(text string, lastSocial bool) (bool, string) {
	return e.social(Normalize(text), lastSocial)
}

// social is Social on normalized text.
func (e *Engine) social(text string, lastSocial bool) (bool, string) {
	return e.rules.social(text, len(e.keywords.ac.find(text)) > 0, lastSocial)
}

// Rewrite completes a short follow-up with the first rewrite rule that
// fits the session's intent and slots: the new text, the rule's name and
// the slots it used, adjusted; ok is false when no rule fits.
func (e *Engine) Rewrite(text, intent string, slots map[string]string) (out, rule string, used map[string]string, ok bool) {
	return e.rules.rewriteTurn(Normalize(text), intent, slots)
}
