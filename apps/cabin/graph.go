package cabin

import (
	"cmp"
	"context"
	_ "embed"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/intent"
	"github.com/loomkit/loom/llm"
)

// The graph's nodes.
const (
	nodeUnderstand = "understand"
	nodePlan       = "plan"
	nodeExecute    = "execute"
	nodeWait       = "wait"
	// maxAnswers bounds the answers one run takes while it keeps waiting
	// (small talk, unclear replies); past it the run ends and the next
	// turn starts a new one, still on the pending task.
	maxAnswers = 50
)

// Graph returns the cabin graph, uncompiled: understand the turn; plan a
// workflow; execute its steps; wait for a slot or a confirmation, which
// the next turn answers.
func (a *App) Graph() *graph.Graph[State] {
	next := func(s State) string { return cmp.Or(s.Next, graph.End) }
	return graph.New[State]("cabin").
		Node(nodeUnderstand, a.understand).
		Node(nodePlan, a.planStep).
		Node(nodeExecute, a.execute).
		Node(nodeWait, a.wait).
		Edge(graph.Start, nodeUnderstand).
		Route(nodeUnderstand, next, nodePlan, nodeExecute, nodeWait, graph.End).
		Route(nodePlan, next, nodeExecute, graph.End).
		Route(nodeExecute, next, nodeWait, graph.End).
		Edge(nodeWait, nodeUnderstand).
		Loop(nodeWait, nodeUnderstand, maxAnswers, graph.End)
}

// turnInput is what a turn brings: text, slot values, a direct yes or no.
type turnInput struct {
	text   string
	fill   map[string]string
	accept *bool
}

// takeInput moves the input fields into the session and clears them, so
// that the next turn's input is decoded over empty fields.
func (a *App) takeInput(s *State) turnInput {
	t := turnInput{text: strings.TrimSpace(s.Text), fill: s.FillSlots, accept: s.Accept}
	sess := &s.Session
	sess.ID = cmp.Or(s.SessionID, sess.ID)
	sess.UserID = cmp.Or(s.UserID, sess.UserID, defaultUser)
	sess.VehicleID = cmp.Or(s.VehicleID, sess.VehicleID, a.vehicle)
	sess.Channel = cmp.Or(s.Channel, sess.Channel, defaultChannel)
	sess.Status = cmp.Or(sess.Status, StatusIdle)
	s.Text, s.FillSlots, s.Accept = "", nil, nil
	s.SessionID, s.UserID, s.VehicleID, s.Channel = "", "", "", ""
	s.Next = ""
	return t
}

// understand starts a turn: it answers what the session waits for, or
// reads a new request: dialog act, stop, social, rewrite, route.
func (a *App) understand(ctx context.Context, s State) (State, error) {
	t := a.takeInput(&s)
	s.Reply = Reply{Debug: Debug{Text: t.text}}
	s.Session.Turns++
	if t.text != "" {
		s.Session.LastUserText = t.text
	}
	var err error
	if s.Session.waiting() {
		err = a.continueTurn(ctx, &s, t)
	} else {
		err = a.newTurn(ctx, &s, t)
	}
	return s, err
}

// understandText runs the intent engine over text and records the debug
// and the times.
func (a *App) understandText(ctx context.Context, s *State, text string, active bool) (intent.Understanding, error) {
	sess := &s.Session
	slots := maps.Clone(sess.Memory)
	if slots == nil {
		slots = map[string]string{}
	}
	maps.Copy(slots, sess.Slots)
	u, err := a.engine.Understand(ctx, intent.Turn{Text: text, Intent: sess.Intent, Slots: slots, ActiveTask: active, LastSocial: sess.LastSocial})
	if err != nil {
		return u, fmt.Errorf("understand %q: %w", text, err)
	}
	d, lat := &s.Reply.Debug, &s.Reply.Latency
	d.DialogAct, d.Stop, d.Rewritten, d.RewriteRule = u.Act, u.Stop, u.Rewritten, u.RewriteRule
	if u.Social {
		d.Social = u.SocialReason
	}
	lat.DialogAct, lat.StopCheck, lat.SocialRoute, lat.Rewrite = ms(u.Times.DialogAct), ms(u.Times.StopCheck), ms(u.Times.SocialRoute), ms(u.Times.Rewrite)
	if r := u.Route; r != nil {
		d.Route = compact(r)
		lat.Route = ms(r.Elapsed)
		lat.Stages = map[string]float64{}
		var pipeline time.Duration
		for _, st := range r.Stages {
			pipeline += st.Elapsed
			lat.Stages[st.Stage] = ms(st.Elapsed)
		}
		lat.MatchPipeline = ms(pipeline)
	}
	if mi := u.Multi; mi != nil {
		d.ClauseKind = mi.Kind
		var took time.Duration
		for _, c := range mi.Clauses {
			d.Clauses = append(d.Clauses, ClauseRoute{Text: c.Text, Intent: c.Result.Intent, Decision: c.Result.Decision, Score: c.Result.Score})
			took += c.Result.Elapsed
		}
		lat.Clauses = ms(took)
	}
	return u, nil
}

// stageCandidates is how many of a stage's candidates the debug keeps:
// the session's checkpoint holds the debug, and its size is read and
// written on every step.
const stageCandidates = 3

// compact is r with each stage's candidates cut to the best few.
func compact(r *intent.Result) *intent.Result {
	c := *r
	c.Stages = slices.Clone(r.Stages)
	for i := range c.Stages {
		c.Stages[i].Candidates = c.Stages[i].Candidates[:min(len(c.Stages[i].Candidates), stageCandidates)]
	}
	return &c
}

// newTurn reads a request when nothing is pending.
func (a *App) newTurn(ctx context.Context, s *State, t turnInput) error {
	sess, d := &s.Session, &s.Reply.Debug
	if t.text == "" {
		if len(t.fill) == 0 || sess.Intent == "" {
			d.Decision, d.DecisionReason = "fallback", "nothing to continue: no text and no current intent"
			a.say(s, TypeFallback, StatusFallback, a.replies.text("no_session", nil))
			return nil
		}
		// fill-slots on a finished task runs its intent again with the
		// new values.
		slots := maps.Clone(sess.Slots)
		if slots == nil {
			slots = map[string]string{}
		}
		maps.Copy(slots, a.slots.clean(t.fill))
		sess.Workflow = &Workflow{Kind: workflowSingle, Source: "fill-slots", Steps: []Step{a.newStep(1, sess.Intent, slots)}}
		d.Decision, d.Continuation = "execute", "fill-slots for the current intent "+sess.Intent
		s.Next = nodeExecute
		return nil
	}
	u, err := a.understandText(ctx, s, t.text, false)
	if err != nil {
		return err
	}
	if u.Social {
		a.social(ctx, s, t.text, u)
		return nil
	}
	if sess.Status == StatusClarify && len(sess.Clarify) == 1 && intent.ReadConsent(t.text).Consent == intent.Accepted {
		id := sess.Clarify[0]
		sess.Workflow = &Workflow{Kind: workflowSingle, Source: "clarify", Steps: []Step{a.newStep(1, id, a.slots.read(id, sess.ClarifyText))}}
		d.Decision, d.Continuation = "execute", "yes to the clarify question: "+id
		s.Next = nodeExecute
		return nil
	}
	s.Next = nodePlan
	return nil
}

// continueTurn answers what the session waits for: a slot or a
// confirmation. A stop phrase stops the task, small talk gets
// a reply with a reminder, and a clear new request replaces the task.
func (a *App) continueTurn(ctx context.Context, s *State, t turnInput) error {
	wf := s.Session.Workflow
	p := wf.Pending
	st := wf.step(p.Step)
	if st.Slots == nil {
		st.Slots = map[string]string{}
	}
	d := &s.Reply.Debug
	var u intent.Understanding
	if t.text != "" {
		var err error
		if u, err = a.understandText(ctx, s, t.text, true); err != nil {
			return err
		}
		if u.Stop {
			a.stop(s)
			return nil
		}
	}
	question := ""
	if p.Kind == pendingConfirmation {
		question = a.confirmQuestion(wf, st)
	}
	consent := intent.ReadConsentTo(question, t.text).Consent
	switch p.Kind {
	case pendingConfirmation:
		switch {
		case (t.accept != nil && *t.accept) || (t.accept == nil && consent == intent.Accepted):
			st.Confirmed = true
			d.Decision, d.Continuation = "execute", "confirmed step "+st.ID
			s.Next = nodeExecute
			return nil
		case t.accept != nil || consent == intent.Rejected:
			st.Status = stepCancelled
			d.Decision, d.Continuation = "execute", "declined step "+st.ID
			s.Next = nodeExecute
			return nil
		}
	case pendingSlot:
		start := time.Now()
		got := a.slots.clean(t.fill)
		if t.text != "" {
			for k, v := range a.slots.read(st.Intent, t.text) {
				if _, given := got[k]; !given {
					got[k] = v
				}
			}
		}
		s.Reply.Latency.SlotExtract = ms(time.Since(start))
		if fills(got, p.Slots) {
			maps.Copy(st.Slots, got)
			d.Decision, d.Continuation = "execute", "filled "+strings.Join(slices.Sorted(maps.Keys(got)), ", ")
			s.Next = nodeExecute
			return nil
		}
	}
	switch {
	case u.Social:
		a.social(ctx, s, t.text, u)
		return nil
	case a.newRequest(u, st):
		for i := range wf.Steps {
			if wf.Steps[i].Status == stepPending {
				wf.Steps[i].Status, wf.Steps[i].Reported = stepCancelled, true
			}
		}
		wf.Pending = nil
		d.Continuation = "a new request replaced the pending " + st.Intent
		s.Next = nodePlan
		return nil
	case p.Kind == pendingSlot && t.text != "" && consent == intent.Unclear:
		for _, name := range p.Slots {
			if v, ok := a.slots.answer(name, t.text); ok {
				st.Slots[name] = v
				d.Decision, d.Continuation = "execute", "the reply is the "+name
				s.Next = nodeExecute
				return nil
			}
		}
	}
	// Not an answer: ask again.
	d.Decision, d.DecisionReason = "retry", "the reply did not answer the question"
	if p.Kind == pendingConfirmation {
		a.say(s, TypeAskConfirmation, StatusWaitingConfirmation, a.replies.text("confirm_retry", a.templateVars(wf)(st)))
	} else {
		a.say(s, TypeAskSlot, StatusWaitingSlot, a.replies.text("slot_retry", map[string]string{"ask": a.ask(wf, st, p.Slots[0])}))
	}
	s.Next = nodeWait
	return nil
}

// fills reports whether got holds one of the slots asked for.
func fills(got map[string]string, asked []string) bool {
	for _, k := range asked {
		if got[k] != "" {
			return true
		}
	}
	return false
}

// confirmQuestion is the question that asks to confirm step st.
func (a *App) confirmQuestion(wf *Workflow, st *Step) string {
	vars := a.templateVars(wf)(st)
	return a.replies.render(cmp.Or(a.replies.of(st, vars).Confirm, a.cfg.Responses.Templates["confirm"]), vars)
}

// newRequest reports whether a reply to a pending question is rather a
// new request: several requests, or one other intent routed to execute.
func (a *App) newRequest(u intent.Understanding, pending *Step) bool {
	if u.Multi != nil {
		return true
	}
	r := u.Route
	return r != nil && r.Decision == intent.Execute && a.cat.known(r.Intent) && r.Intent != pending.Intent
}

// stop ends the active task: its workflow and what it waited for.
func (a *App) stop(s *State) {
	wf := s.Session.Workflow
	for i := range wf.Steps {
		if wf.Steps[i].Status == stepPending {
			wf.Steps[i].Status, wf.Steps[i].Reported = stepCancelled, true
		}
	}
	wf.Pending = nil
	s.Reply.Debug.Decision, s.Reply.Debug.DecisionReason = "stop", "stop phrase with an active task"
	a.say(s, TypeText, StatusStopped, a.replies.text("task_stopped", nil))
}

//go:embed prompts/social.md
var socialPrompt string

// social answers small talk, with the model when there is one,
// and reminds the user of a pending task.
func (a *App) social(ctx context.Context, s *State, text string, u intent.Understanding) {
	start := time.Now()
	kind := "open"
	switch {
	case strings.HasPrefix(u.SocialReason, "capability"):
		kind = "capability"
	case len(a.cfg.Responses.Social[u.Act]) > 0:
		kind = u.Act
	}
	reply := ""
	if a.model != nil && kind == "open" {
		reply = a.modelSocial(ctx, text)
	}
	if reply == "" {
		reply = a.replies.social(kind, s.Session.Turns)
	}
	s.Reply.Debug.Decision, s.Reply.Debug.DecisionReason = "social", u.SocialReason
	msg := join(reply, a.replies.pendingHint(s.Session.Workflow))
	s.Reply.Latency.DecisionResponse += ms(time.Since(start))
	a.say(s, TypeText, StatusSocial, msg)
	if s.Session.waiting() {
		s.Next = nodeWait
	}
}

// modelSocial asks the model for a short reply; "" when it fails.
func (a *App) modelSocial(ctx context.Context, text string) string {
	ctx, cancel := context.WithTimeout(ctx, a.modelTimeout)
	defer cancel()
	resp, err := a.model.Generate(ctx, []llm.Message{llm.System(socialPrompt), llm.User(text)}, llm.WithTemperature(0.6), llm.WithMaxTokens(120))
	if err != nil {
		a.log.WarnContext(ctx, "cabin: model small talk failed; using a template", "err", err)
		return ""
	}
	return strings.TrimSpace(resp.Message.Content)
}

// planStep makes the turn's workflow: the planner for a complex or
// unsure request, else the routed intent; or answers clarify, reject or
// fallback.
func (a *App) planStep(ctx context.Context, s State) (State, error) {
	s.Next = ""
	d, lat := &s.Reply.Debug, &s.Reply.Latency
	r := d.Route
	in := planInput{text: intent.Normalize(cmp.Or(d.Rewritten, d.Text)), clauses: d.Clauses, kind: d.ClauseKind, route: r}
	var p plan
	if trigger := plannerTrigger(in); trigger != "" {
		start := time.Now()
		p = a.plan(ctx, in)
		p.debug.Trigger = trigger
		d.Planner = &p.debug
		lat.Planner = ms(time.Since(start))
		if p.debug.Accepted {
			s.Session.Workflow = p.workflow
			d.Decision, d.DecisionReason = "workflow", p.debug.Reason
			s.Next = nodeExecute
			return s, nil
		}
	}
	start := time.Now()
	defer func() { lat.DecisionResponse += ms(time.Since(start)) }()
	d.Decision, d.DecisionReason = string(r.Decision), r.Reason
	switch {
	case p.outOfScope:
		d.Decision, d.DecisionReason = "reject", "the model planner found the request out of scope"
		a.say(&s, TypeReject, StatusRejected, a.replies.text("reject", nil))
	case r.Decision == intent.Execute && a.cat.known(r.Intent):
		slotStart := time.Now()
		slots := a.slots.read(r.Intent, in.text)
		lat.SlotExtract += ms(time.Since(slotStart))
		sess := &s.Session
		if r.Intent == sess.Intent {
			for k, v := range sess.Slots {
				if _, ok := slots[k]; !ok && !a.slots.fresh(k) {
					slots[k] = v
				}
			}
		}
		sess.Workflow = &Workflow{Kind: workflowSingle, Source: "single", Steps: []Step{a.newStep(1, r.Intent, slots)}}
		s.Next = nodeExecute
	case r.Decision == intent.Clarify || r.Decision == intent.RouteToCloud:
		if ids := a.clarifyOptions(r); len(ids) > 0 {
			s.Session.Clarify, s.Session.ClarifyText = ids, in.text
			a.say(&s, TypeClarify, StatusClarify, a.replies.clarify(ids))
			break
		}
		a.say(&s, TypeFallback, StatusFallback, a.replies.text("fallback", nil))
	default:
		a.say(&s, TypeReject, StatusRejected, a.replies.text("reject", nil))
	}
	return s, nil
}

// plannerTrigger says why the planner should run (a text of several
// clauses, a local decision other than execute), or "".
func plannerTrigger(in planInput) string {
	switch {
	case len(in.clauses) > 1:
		return fmt.Sprintf("%s text of %d clauses", in.kind, len(in.clauses))
	case in.route != nil && in.route.Decision != intent.Execute:
		return "local decision " + string(in.route.Decision)
	}
	return ""
}

// clarifyOptions are the in-scope intents a clarify question offers: the
// top two for clarify, the top one for route_to_cloud.
func (a *App) clarifyOptions(r *intent.Result) []string {
	n := 2
	if r.Decision == intent.RouteToCloud {
		n = 1
	}
	var ids []string
	for _, c := range r.Candidates {
		if len(ids) < n && a.cat.known(c.Intent) {
			ids = append(ids, c.Intent)
		}
	}
	return ids
}

// execute runs the workflow until it finishes or waits, and replies.
func (a *App) execute(ctx context.Context, s State) (State, error) {
	a.advance(ctx, &s)
	start := time.Now()
	wf, sess := s.Session.Workflow, &s.Session
	vars := a.templateVars(wf)
	news := a.replies.report(wf, vars)
	if p := wf.Pending; p != nil {
		st := wf.step(p.Step)
		sess.Intent, sess.Slots = st.Intent, st.Slots
		if p.Kind == pendingSlot {
			a.say(&s, TypeAskSlot, StatusWaitingSlot, join(news, a.ask(wf, st, p.Slots[0])))
		} else {
			a.say(&s, TypeAskConfirmation, StatusWaitingConfirmation, join(news, a.confirmQuestion(wf, st)))
		}
		s.Reply.Debug.Decision = cmp.Or(s.Reply.Debug.Decision, "execute")
		s.Next = nodeWait
		s.Reply.Latency.ResponseBuild += ms(time.Since(start))
		return s, nil
	}
	for i := len(wf.Steps) - 1; i >= 0; i-- {
		if st := &wf.Steps[i]; st.Result != nil {
			sess.Intent, sess.Slots = st.Intent, st.Slots
			break
		}
	}
	s.Reply.Debug.Decision = cmp.Or(s.Reply.Debug.Decision, "execute")
	a.say(&s, TypeWorkflowResult, StatusCompleted, news)
	s.Next = graph.End
	s.Reply.Latency.ResponseBuild += ms(time.Since(start))
	return s, nil
}

// ask is the question for a missing slot of a step.
func (a *App) ask(wf *Workflow, st *Step, slot string) string {
	return a.replies.render(a.cfg.Forms.Forms[st.Intent].Ask[slot], a.templateVars(wf)(st))
}

// Question is what the session asks while it waits: the payload of the
// graph's interrupt.
type Question struct {
	Type         string   `json:"type"`
	Message      string   `json:"message"`
	Intent       string   `json:"intent,omitempty"`
	Step         string   `json:"step_id,omitempty"`
	PendingSlots []string `json:"pending_slots,omitempty"`
}

// wait asks the user and takes the answer as the next turn's input.
func (a *App) wait(ctx context.Context, s State) (State, error) {
	q := Question{Type: s.Reply.Type, Message: s.Reply.Message, Intent: s.Session.Intent, PendingSlots: s.Session.PendingSlots}
	if wf := s.Session.Workflow; wf != nil && wf.Pending != nil {
		q.Step = wf.Pending.Step
	}
	ans, err := graph.Ask[Answer](ctx, q)
	if err != nil {
		return s, err
	}
	s.Text, s.FillSlots, s.Accept = ans.Text, ans.Slots, ans.Accept
	return s, nil
}

// say sets the turn's reply and what the session remembers of it.
func (a *App) say(s *State, typ, status, msg string) {
	start := time.Now()
	sess := &s.Session
	s.Reply.Type, s.Reply.Status, s.Reply.Message = typ, status, msg
	sess.LastAgentText = msg
	sess.LastSocial = status == StatusSocial
	if status != StatusClarify {
		sess.Clarify, sess.ClarifyText = nil, ""
	}
	switch {
	case sess.waiting() && sess.Workflow.Pending.Kind == pendingConfirmation:
		sess.Status, sess.PendingSlots = StatusWaitingConfirmation, []string{"confirmation"}
	case sess.waiting():
		sess.Status, sess.PendingSlots = StatusWaitingSlot, slices.Clone(sess.Workflow.Pending.Slots)
	default:
		sess.Status, sess.PendingSlots = status, nil
	}
	sess.History = append(sess.History, TurnRecord{User: sess.LastUserText, Agent: msg, Type: typ, Intent: sess.Intent, At: time.Now().UTC()})
	if n := len(sess.History); n > historyLimit {
		sess.History = slices.Delete(sess.History, 0, n-historyLimit)
	}
	s.Reply.Latency.RecordTurn += ms(time.Since(start))
}
