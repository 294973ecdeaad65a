package cabin

import (
	"cmp"
	"context"
	_ "embed"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/intent"
	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/tool"
)

// The graph's nodes, in the order a turn meets them.
const (
	nodeNormalize      = "normalize"
	nodeStopCheck      = "stop_check"
	nodeReadAnswer     = "read_answer"
	nodeSocialRoute    = "social_route"
	nodeContextRewrite = "context_rewrite"
	nodeUnderstand     = "understand"
	nodeFuseDecide     = "fuse_decide"
	nodePlanTemplate   = "plan_template"
	nodePlanHeuristic  = "plan_heuristic"
	nodePlanModel      = "plan_model"
	nodeExecute        = "execute"
	nodeClarify        = "clarify"
	nodeRouteToCloud   = "route_to_cloud"
	nodeReject         = "reject"
	nodeStop           = "stop"
	nodeSocial         = "social"
	nodeFallback       = "fallback"
	nodeRetry          = "retry"
	nodeNextStep       = "next_step"
	nodeFillSlots      = "fill_slots"
	nodeCondition      = "condition"
	nodeConfirm        = "confirm"
	nodeCallTool       = "call_tool"
	nodeRespond        = "respond"

	// maxAnswers bounds the answers one run takes while it keeps asking
	// (small talk, unclear replies); past it the run ends and the next
	// turn starts a new one, still on the pending task.
	maxAnswers = 50
	// maxSteps bounds the steps of a workflow run one after the other
	// without a question in between; the planners make no more.
	maxSteps = 32
)

// route is a declared route: the node it leaves, how it chooses, and
// every node it may choose.
type route struct {
	from    string
	choose  graph.RouteFunc[State]
	targets []string
}

// routes are the graph's routes. Each chooses from what the turn found
// out (Facts) and the session's workflow, never from a node name kept in
// the state.
func (a *App) routes() []route {
	decided := []string{nodeExecute, nodeClarify, nodeRouteToCloud, nodeReject}
	return []route{
		{nodeStopCheck, afterStopCheck, []string{nodeStop, nodeReadAnswer}},
		{nodeReadAnswer, afterReadAnswer, []string{nodeNextStep, nodeFallback, nodeSocialRoute}},
		{nodeSocialRoute, afterSocialRoute, []string{nodeSocial, nodeContextRewrite}},
		{nodeFuseDecide, afterFuseDecide, append([]string{nodePlanTemplate, nodeNextStep, nodeRetry}, decided...)},
		{nodePlanTemplate, afterTemplate, []string{nodeNextStep, nodePlanHeuristic}},
		{nodePlanHeuristic, a.afterHeuristic, append([]string{nodeNextStep, nodePlanModel}, decided...)},
		{nodePlanModel, afterModelPlan, append([]string{nodeNextStep}, decided...)},
		{nodeNextStep, afterNextStep, []string{nodeFillSlots, nodeCondition, nodeRespond}},
		{nodeCondition, afterCondition, []string{nodeNextStep, nodeConfirm, nodeCallTool}},
		{nodeSocial, afterSocial, []string{nodeFillSlots, nodeConfirm, nodeRespond}},
		{nodeRetry, askPending, []string{nodeFillSlots, nodeConfirm}},
	}
}

// Graph returns the cabin graph, uncompiled. A turn is normalized,
// checked for a stop phrase and for an answer to what the session waits
// for, routed to small talk or rewritten, understood by the matchers and
// decided; the decision goes to the planners (templates, heuristics, the
// model), to one intent's execution, or to a clarify question, the
// cloud's offer or a refusal. A workflow runs step by step: the next
// step, its missing slots asked for, its condition, a confirmation asked
// for, the tool call; then the reply. A question waits for the next
// turn, which comes back in at normalize.
func (a *App) Graph() *graph.Graph[State] {
	// Every step but the tool calls, the model's plan and the questions
	// only computes the next state: it is checkpointed with the next step
	// that is checkpointed.
	pure := graph.Pure()
	g := graph.New[State]("cabin").
		Node(nodeNormalize, a.inLocale((*App).normalize), pure).
		Node(nodeStopCheck, a.inLocale((*App).stopCheck), pure).
		Node(nodeReadAnswer, a.inLocale((*App).readAnswer), pure).
		Node(nodeSocialRoute, a.inLocale((*App).socialRoute), pure).
		Node(nodeContextRewrite, a.inLocale((*App).contextRewrite), pure).
		Node(nodeUnderstand, a.inLocale((*App).understand), pure).
		Node(nodeFuseDecide, a.inLocale((*App).fuseDecide), pure).
		Node(nodePlanTemplate, a.inLocale((*App).planTemplate), pure).
		Node(nodePlanHeuristic, a.inLocale((*App).planHeuristic), pure).
		Node(nodePlanModel, a.inLocale((*App).planModel)).
		Node(nodeExecute, a.inLocale((*App).execute), pure).
		Node(nodeClarify, a.inLocale((*App).clarify), pure).
		Node(nodeRouteToCloud, a.inLocale((*App).routeToCloud), pure).
		Node(nodeReject, a.inLocale((*App).reject), pure).
		Node(nodeStop, a.inLocale((*App).stop), pure).
		Node(nodeSocial, a.inLocale((*App).social), pure).
		Node(nodeFallback, a.inLocale((*App).fallback), pure).
		Node(nodeRetry, a.inLocale((*App).retry), pure).
		Node(nodeNextStep, a.inLocale((*App).nextStep), pure).
		Node(nodeFillSlots, a.inLocale((*App).fillSlots)).
		Node(nodeCondition, a.inLocale((*App).condition)).
		Node(nodeConfirm, a.inLocale((*App).confirm)).
		Node(nodeCallTool, a.inLocale((*App).callTool)).
		Node(nodeRespond, a.inLocale((*App).respond), pure).
		Edge(graph.Start, nodeNormalize).
		Edge(nodeNormalize, nodeStopCheck).
		Edge(nodeContextRewrite, nodeUnderstand).
		Edge(nodeUnderstand, nodeFuseDecide).
		Edge(nodeExecute, nodeNextStep).
		Edge(nodeCallTool, nodeNextStep)
	for _, n := range []string{nodeClarify, nodeRouteToCloud, nodeReject, nodeStop, nodeFallback} {
		g.Edge(n, nodeRespond)
	}
	g.Edge(nodeRespond, graph.End)
	for _, r := range a.routes() {
		g.Route(r.from, r.choose, r.targets...)
	}
	return g.
		Edge(nodeFillSlots, nodeNormalize).
		Loop(nodeFillSlots, nodeNormalize, maxAnswers, graph.End).
		Edge(nodeConfirm, nodeNormalize).
		Loop(nodeConfirm, nodeNormalize, maxAnswers, graph.End).
		Loop(nodeCallTool, nodeNextStep, maxSteps, nodeRespond).
		Loop(nodeCondition, nodeNextStep, maxSteps, nodeRespond)
}

// Answered says how a turn answered what the session waited for.
type Answered uint8

// How a turn answered.
const (
	// answerNone: it is not an answer; it is understood as a request.
	answerNone Answered = iota
	// answerConfirmed and answerDeclined: a yes or a no to a confirmation.
	answerConfirmed
	answerDeclined
	// answerFilled: slot values for the step that asked.
	answerFilled
	// answerClarified: a yes to a clarify question with one option.
	answerClarified
	// answerRerun: slot values for the last task, which runs again.
	answerRerun
	// answerNothing: neither text nor anything to continue.
	answerNothing
)

// Verdict is what a turn decided once its text was understood.
type Verdict uint8

// Verdicts.
const (
	_ Verdict = iota // the zero Verdict: nothing decided yet
	// verdictExecute: one known intent, sure enough to run.
	verdictExecute
	// verdictClarify: two intents close; ask which.
	verdictClarify
	// verdictRouteToCloud: like a known intent, but not sure; offer it.
	verdictRouteToCloud
	// verdictReject: nothing the assistant does.
	verdictReject
	// verdictSlotAnswer: the reply to a slot question is the slot itself.
	verdictSlotAnswer
	// verdictRetry: the reply answers nothing; ask again.
	verdictRetry
)

// Facts are what a turn has found out so far. Nodes set them; the routes
// read them to choose the way on. The first node clears them.
type Facts struct {
	// Text, Fill, Accept and Reason are the turn's input; Normalized is
	// Text normalized.
	Text       string            `json:"text,omitempty"`
	Fill       map[string]string `json:"fill,omitempty"`
	Accept     *bool             `json:"accept,omitempty"`
	Reason     string            `json:"reason,omitempty"`
	Normalized string            `json:"normalized,omitempty"`
	// Stop is set for a stop phrase while a task is active.
	Stop bool `json:"stop,omitempty"`
	// Answer is how the turn answered what the session waited for.
	Answer Answered `json:"answer,omitempty"`
	// Social is set for small talk.
	Social bool `json:"social,omitempty"`
	// Verdict is the decision on the understood text; Plan is set when the
	// planners are to try first (several clauses, or a local decision
	// other than execute).
	Verdict Verdict `json:"verdict,omitempty"`
	Plan    bool    `json:"plan,omitempty"`
	// Planned is set when a planner made the workflow; OutOfScope when the
	// model planner found no intent for the text.
	Planned    bool `json:"planned,omitempty"`
	OutOfScope bool `json:"out_of_scope,omitempty"`
	// Step is the index of the workflow step at hand, -1 when none is left.
	Step int `json:"step"`
	// Note is said before the turn's question: a value out of range.
	Note string `json:"note,omitempty"`
}

// afterStopCheck stops an active task on a stop phrase.
func afterStopCheck(s State) string {
	if s.Turn.Stop {
		return nodeStop
	}
	return nodeReadAnswer
}

// afterReadAnswer continues the workflow with an answer, or understands
// the turn as a request.
func afterReadAnswer(s State) string {
	switch s.Turn.Answer {
	case answerConfirmed, answerDeclined, answerFilled, answerClarified, answerRerun:
		return nodeNextStep
	case answerNothing:
		return nodeFallback
	}
	return nodeSocialRoute
}

// afterSocialRoute answers small talk.
func afterSocialRoute(s State) string {
	if s.Turn.Social {
		return nodeSocial
	}
	return nodeContextRewrite
}

// afterFuseDecide goes by the verdict; the planners try first when the
// text asks for them.
func afterFuseDecide(s State) string {
	switch s.Turn.Verdict {
	case verdictSlotAnswer:
		return nodeNextStep
	case verdictRetry:
		return nodeRetry
	}
	if s.Turn.Plan {
		return nodePlanTemplate
	}
	return byVerdict(s.Turn.Verdict)
}

// byVerdict is where the local decision goes when no planner made a
// workflow.
func byVerdict(v Verdict) string {
	switch v {
	case verdictExecute:
		return nodeExecute
	case verdictClarify:
		return nodeClarify
	case verdictRouteToCloud:
		return nodeRouteToCloud
	}
	return nodeReject
}

// afterTemplate runs a template's workflow, or tries the heuristics.
func afterTemplate(s State) string {
	if s.Turn.Planned {
		return nodeNextStep
	}
	return nodePlanHeuristic
}

// afterHeuristic runs the heuristic workflow, or asks the model when
// there is one, or goes by the local decision.
func (a *App) afterHeuristic(s State) string {
	switch {
	case s.Turn.Planned:
		return nodeNextStep
	case a.model != nil:
		return nodePlanModel
	}
	return byVerdict(s.Turn.Verdict)
}

// afterModelPlan runs the model's workflow, refuses what the model found
// out of scope, or goes by the local decision.
func afterModelPlan(s State) string {
	switch {
	case s.Turn.Planned:
		return nodeNextStep
	case s.Turn.OutOfScope:
		return nodeReject
	}
	return byVerdict(s.Turn.Verdict)
}

// afterNextStep asks for missing slots, checks the step's condition, or
// replies when no step is left.
func afterNextStep(s State) string {
	switch {
	case s.Turn.Step < 0:
		return nodeRespond
	case s.Session.Workflow.Pending != nil:
		return nodeFillSlots
	}
	return nodeCondition
}

// afterCondition moves past a step that cannot run, asks for a
// confirmation, or calls the tool.
func afterCondition(s State) string {
	wf := s.Session.Workflow
	switch {
	case wf.Steps[s.Turn.Step].Status != stepPending:
		return nodeNextStep
	case wf.Pending != nil:
		return nodeConfirm
	}
	return nodeCallTool
}

// afterSocial asks the pending question again after small talk, else
// ends the turn.
func afterSocial(s State) string {
	if !s.Session.waiting() {
		return nodeRespond
	}
	return askPending(s)
}

// askPending asks the question the session waits on: a confirmation or
// slots.
func askPending(s State) string {
	if s.Session.Workflow.Pending.Kind == pendingConfirmation {
		return nodeConfirm
	}
	return nodeFillSlots
}

// normalize starts a turn: it takes the input into the turn's facts and
// the session, normalizes the text and reads its dialog act.
func (a *App) normalize(ctx context.Context, s State) (State, error) {
	sess := &s.Session
	s.Turn = Facts{Text: strings.TrimSpace(s.Text), Fill: s.FillSlots, Accept: s.Accept, Reason: strings.TrimSpace(s.Reason), Step: -1}
	sess.ID = cmp.Or(s.SessionID, sess.ID)
	sess.UserID = cmp.Or(s.UserID, sess.UserID, defaultUser)
	sess.VehicleID = cmp.Or(s.VehicleID, sess.VehicleID, a.vehicle)
	sess.Channel = cmp.Or(s.Channel, sess.Channel, defaultChannel)
	sess.Status = cmp.Or(sess.Status, statusIdle)
	s.Text, s.FillSlots, s.Accept, s.Reason = "", nil, nil, ""
	s.SessionID, s.UserID, s.VehicleID, s.Channel = "", "", "", ""
	s.Reply = Reply{Debug: Debug{Text: s.Turn.Text}}
	sess.Turns++
	if s.Turn.Text == "" {
		return s, nil
	}
	sess.LastUserText = s.Turn.Text
	sess.Locale = a.speaks(s.Turn.Text, sess.Locale)
	var set Settings
	if err := server.RunConfig(ctx, &set); err != nil {
		return s, err
	}
	if set.Locale != "" && a.variants[set.Locale] != nil {
		sess.Locale = set.Locale // the assistant's or the run's choice
	}
	start := time.Now()
	s.Turn.Normalized = intent.Normalize(s.Turn.Text)
	s.Reply.Debug.DialogAct = a.engine.Act(s.Turn.Normalized)
	s.Reply.Latency.DialogAct = ms(time.Since(start))
	return s, nil
}

// stopCheck looks for a stop phrase; it stops only an active task.
func (a *App) stopCheck(_ context.Context, s State) (State, error) {
	if s.Turn.Text == "" {
		return s, nil
	}
	start := time.Now()
	s.Turn.Stop = s.Session.waiting() && (a.engine.IsStop(s.Turn.Normalized) ||
		(s.Session.Workflow.Pending.Kind == pendingSlot && abandons(s.Turn.Normalized)))
	s.Reply.Debug.Stop = s.Turn.Stop
	s.Reply.Latency.StopCheck = ms(time.Since(start))
	return s, nil
}

// readAnswer reads the turn as the answer to what the session waits for:
// a yes or a no, slot values, a yes to a clarify question; or slot
// values for the last task, which runs again.
func (a *App) readAnswer(ctx context.Context, s State) (State, error) {
	t, sess, d := &s.Turn, &s.Session, &s.Reply.Debug
	switch {
	case sess.waiting():
		t.Answer = a.answerPending(&s)
	case t.Text == "" && (len(t.Fill) == 0 || sess.Intent == ""):
		d.Decision, d.DecisionReason = "fallback", "nothing to continue: no text and no current intent"
		t.Answer = answerNothing
	case t.Text == "":
		slots := maps.Clone(sess.Slots)
		if slots == nil {
			slots = map[string]string{}
		}
		maps.Copy(slots, a.slots.clean(t.Fill))
		sess.Workflow = &Workflow{Kind: workflowSingle, Source: "fill-slots", Steps: []Step{a.newStep(1, sess.Intent, slots)}}
		d.Decision, d.Continuation = "execute", "fill-slots for the current intent "+sess.Intent
		t.Answer = answerRerun
	case sess.Status == statusClarify && len(sess.Clarify) == 1 && intent.ReadConsent(t.Text).Consent == intent.Accepted:
		id := sess.Clarify[0]
		sess.Workflow = &Workflow{Kind: workflowSingle, Source: "clarify", Steps: []Step{a.newStep(1, id, a.slots.read(id, sess.ClarifyText))}}
		d.Decision, d.Continuation = "execute", "yes to the clarify question: "+id
		t.Answer = answerClarified
	case sess.Status == statusClarify && len(sess.Clarify) > 0:
		// "车窗" / "打开": the reply picks one of the options.
		if id := a.pickOption(ctx, sess.Clarify, t.Normalized); id != "" {
			slots := a.slots.read(id, sess.ClarifyText)
			maps.Copy(slots, a.slots.read(id, t.Text))
			sess.Workflow = &Workflow{Kind: workflowSingle, Source: "clarify", Steps: []Step{a.newStep(1, id, slots)}}
			d.Decision, d.Continuation = "execute", "the reply picks an option of the clarify question: "+id
			t.Answer = answerClarified
		}
	}
	return s, nil
}

// answerPending reads the turn as the answer to the pending question.
func (a *App) answerPending(s *State) Answered {
	t, d := &s.Turn, &s.Reply.Debug
	wf := s.Session.Workflow
	p := wf.Pending
	st := wf.step(p.Step)
	if st.Slots == nil {
		st.Slots = map[string]string{}
	}
	switch p.Kind {
	case pendingConfirmation:
		consent := intent.ReadConsentTo(a.confirmQuestion(wf, st), t.Text).Consent
		switch {
		case (t.Accept != nil && *t.Accept) || (t.Accept == nil && consent == intent.Accepted):
			st.Confirmed = true
			d.Decision, d.Continuation = "execute", "confirmed step "+st.ID
			return answerConfirmed
		case t.Accept != nil || consent == intent.Rejected:
			st.Status = stepCancelled
			d.Decision, d.Continuation = "execute", "declined step "+st.ID
			if t.Reason != "" {
				d.Continuation += ": " + t.Reason
			}
			return answerDeclined
		}
	case pendingSlot:
		start := time.Now()
		got := a.slots.clean(t.Fill)
		if t.Text != "" {
			for k, v := range a.slots.read(st.Intent, t.Text) {
				if _, given := got[k]; !given {
					got[k] = v
				}
			}
		}
		s.Reply.Latency.SlotExtract = ms(time.Since(start))
		if fills(got, p.Slots) {
			maps.Copy(st.Slots, got)
			d.Decision, d.Continuation = "execute", "filled "+strings.Join(slices.Sorted(maps.Keys(got)), ", ")
			return answerFilled
		}
	}
	return answerNone
}

// contextSlots are the slots a request without them takes from what the
// conversation talked about: the order ("取消它", "cancel it" after
// "查订单A123"). A risky action on it still asks first, naming it.
var contextSlots = []string{"order_id"}

// abandonWords, said alone while a slot is asked for, abandon the
// pending action ("导航" / "取消"), rather than start one of their own.
var abandonWords = []string{"取消", "取消吧", "取消了", "算了", "算了吧", "不用了", "不用", "不要了", "不了", "不去了", "cancel", "cancel it", "never mind", "nevermind", "forget it", "no thanks"}

// abandons reports whether a normalized reply abandons the pending action.
func abandons(norm string) bool {
	return slices.Contains(abandonWords, strings.Trim(norm, " ,.!?，。！？~"))
}

// socialRoute decides whether the turn is small talk.
func (a *App) socialRoute(_ context.Context, s State) (State, error) {
	if s.Turn.Text == "" {
		return s, nil
	}
	start := time.Now()
	// While a slot is asked for, a short reply after small talk is the
	// answer ("导航" / "谢谢" / "天安门"), not more small talk.
	lastSocial := s.Session.LastSocial && !s.Session.waiting()
	social, reason := a.engine.Social(s.Turn.Normalized, lastSocial)
	s.Turn.Social = social
	if social {
		s.Reply.Debug.Social = reason
	}
	s.Reply.Latency.SocialRoute = ms(time.Since(start))
	return s, nil
}

// contextRewrite completes a short follow-up ("再低一点") from the
// session's intent, slots and memory.
func (a *App) contextRewrite(_ context.Context, s State) (State, error) {
	if s.Turn.Text == "" {
		return s, nil
	}
	start := time.Now()
	sess := &s.Session
	slots := maps.Clone(sess.Memory)
	if slots == nil {
		slots = map[string]string{}
	}
	maps.Copy(slots, sess.Slots)
	if out, rule, _, ok := a.engine.Rewrite(s.Turn.Normalized, sess.Intent, slots); ok {
		s.Reply.Debug.Rewritten, s.Reply.Debug.RewriteRule = out, rule
	}
	s.Reply.Latency.Rewrite = ms(time.Since(start))
	return s, nil
}

// understand runs the matchers (keyword, classifier, retrieval) and
// their fusion over the (rewritten) text, and routes each clause of a
// text of several.
func (a *App) understand(ctx context.Context, s State) (State, error) {
	if s.Turn.Text == "" {
		return s, nil
	}
	d, lat := &s.Reply.Debug, &s.Reply.Latency
	text := intent.Normalize(cmp.Or(d.Rewritten, s.Turn.Text))
	if fixed, fixes := homophone(text); len(fixes) > 0 { // "打开车创", "播放因乐"
		text, d.Corrected, d.Spelling = fixed, fixed, fixes
	}
	r, err := a.engine.Route(ctx, text)
	if err != nil {
		return s, fmt.Errorf("understand %q: %w", s.Turn.Text, err)
	}
	// "打开车创", "opne the windw": not understood as said, tried with
	// near-miss words corrected.
	if r.Decision != intent.Execute && d.Rewritten == "" {
		if fixed, fixes := a.spell.correct(text); len(fixes) > 0 {
			if again, err := a.engine.Route(ctx, fixed); err == nil && again.Decision == intent.Execute {
				r, text, d.Corrected, d.Spelling = again, fixed, fixed, append(d.Spelling, fixes...)
			}
		}
	}
	d.Route = compact(&r)
	lat.Route = ms(r.Elapsed)
	lat.Stages = map[string]float64{}
	var pipeline time.Duration
	for _, st := range r.Stages {
		pipeline += st.Elapsed
		lat.Stages[st.Stage] = ms(st.Elapsed)
	}
	lat.MatchPipeline = ms(pipeline)
	if len(a.engine.Split(text)) < 2 {
		return s, nil
	}
	mi, err := a.engine.RouteClauses(ctx, text)
	if err != nil {
		return s, fmt.Errorf("understand %q: %w", s.Turn.Text, err)
	}
	// The engine calls it single when fewer than two clauses are
	// understood on their own; "关闭车窗和天窗" is two once "天窗" takes
	// the verb before it, so the clauses are routed here in any case.
	kind := mi.Kind
	if kind == workflowSingle {
		kind = workflowSequence
	}
	var took time.Duration
	verb, subject := "", ""
	for i, c := range mi.Clauses {
		res := c.Result
		text := c.Text
		// "温度再调低两度": a first clause that only names a thing is the
		// subject of the next, not a request of its own.
		if subject != "" {
			text = subject + text
			if again, err := a.engine.Route(ctx, text); err == nil {
				res = again
			}
			subject = ""
		}
		if verb == "" && i < len(mi.Clauses)-1 && !namesCue(text) && utf8.RuneCountInString(text) <= 4 && detectLanguage(text) == localeChinese {
			subject = text
			continue
		}
		// "打开空调和座椅加热": a clause without a verb takes the one before.
		if v := leadingCue(text); v != "" {
			verb = v
		} else if verb != "" && !saysCue(text) {
			if again, err := a.engine.Route(ctx, verb+" "+text); err == nil {
				res = again
			}
		}
		d.Clauses = append(d.Clauses, clauseRoute{Text: text, Intent: res.Intent, Decision: res.Decision, Score: res.Score})
		took += res.Elapsed
	}
	lat.Clauses = ms(took)
	matched := 0
	for _, c := range d.Clauses {
		if c.Decision == intent.Execute || c.Decision == intent.Clarify {
			matched++
		}
	}
	if matched < 2 { // one request after all
		d.Clauses = nil
		return s, nil
	}
	d.ClauseKind = kind
	return s, nil
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

// fuseDecide decides on the understood text. While a question is
// pending, a clear new request replaces the pending task and is decided
// as any request; any other reply may be the pending slot itself, or is
// asked again.
func (a *App) fuseDecide(_ context.Context, s State) (State, error) {
	t, sess, d := &s.Turn, &s.Session, &s.Reply.Debug
	a.guard(d)
	if sess.waiting() {
		wf := sess.Workflow
		st := wf.step(wf.Pending.Step)
		if !a.newRequest(d, st) {
			t.Verdict = a.slotAnswer(&s, st)
			return s, nil
		}
		for i := range wf.Steps {
			if wf.Steps[i].Status == stepPending {
				wf.Steps[i].Status, wf.Steps[i].Reported = stepCancelled, true
			}
		}
		wf.Pending = nil
		d.Continuation = "a new request replaced the pending " + st.Intent
	}
	a.bareStop(d)
	r := d.Route
	if r == nil {
		t.Verdict = verdictReject
		return s, nil
	}
	d.Decision, d.DecisionReason = string(r.Decision), r.Reason
	switch {
	case r.Decision == intent.Execute && a.cat.known(r.Intent):
		t.Verdict = verdictExecute
	case r.Decision == intent.Clarify:
		t.Verdict = verdictClarify
	case r.Decision == intent.RouteToCloud:
		t.Verdict = verdictRouteToCloud
	default:
		t.Verdict = verdictReject
	}
	if trigger := plannerTrigger(a.planInput(s)); trigger != "" {
		t.Plan = true
		d.Planner = &plannerDebug{Trigger: trigger}
	}
	return s, nil
}

// slotAnswer reads a reply that is neither a yes nor a no as the value
// of a slot asked for ("公司" for the destination).
func (a *App) slotAnswer(s *State, st *Step) Verdict {
	t, d := &s.Turn, &s.Reply.Debug
	p := s.Session.Workflow.Pending
	if p.Kind == pendingSlot && t.Text != "" && intent.ReadConsentTo("", t.Text).Consent == intent.Unclear {
		for _, name := range p.Slots {
			if v, ok := a.slots.answer(name, t.Text); ok {
				st.Slots[name] = v
				d.Decision, d.Continuation = "execute", "the reply is the "+name
				return verdictSlotAnswer
			}
		}
	}
	return verdictRetry
}

// planInput is what the planners see of the turn.
func (a *App) planInput(s State) planInput {
	d := s.Reply.Debug
	return planInput{text: intent.Normalize(cmp.Or(d.Rewritten, d.Corrected, d.Text)), clauses: d.Clauses, kind: d.ClauseKind, route: d.Route}
}

// rangeNote says that value is out of slot name's range.
func (a *App) rangeNote(name, value string, lo, hi float64) string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	return a.replies.text("out_of_range", map[string]string{"slot_label": a.replies.slotLabels[name], "value": value, "min": f(lo), "max": f(hi)})
}

// retry asks the pending question again: the reply did not answer it.
func (a *App) retry(_ context.Context, s State) (State, error) {
	wf := s.Session.Workflow
	st := wf.step(wf.Pending.Step)
	s.Reply.Debug.Decision, s.Reply.Debug.DecisionReason = "retry", "the reply did not answer the question"
	if wf.Pending.Kind == pendingConfirmation {
		a.say(&s, typeAskConfirmation, statusWaitingConfirmation, a.replies.text("confirm_retry", a.templateVars(wf)(st)))
	} else if name, v, lo, hi, ok := a.slots.outOfRange(s.Turn.Text, wf.Pending.Slots); ok {
		a.say(&s, typeAskSlot, statusWaitingSlot, join(a.rangeNote(name, v, lo, hi), a.ask(wf, st, wf.Pending.Slots[0])))
	} else {
		a.say(&s, typeAskSlot, statusWaitingSlot, a.replies.text("slot_retry", map[string]string{"ask": a.ask(wf, st, wf.Pending.Slots[0])}))
	}
	return s, nil
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
func (a *App) newRequest(d *Debug, pending *Step) bool {
	if len(d.Clauses) > 0 {
		return true
	}
	r := d.Route
	return r != nil && r.Decision == intent.Execute && a.cat.known(r.Intent) && r.Intent != pending.Intent
}

// stop ends the active task: its workflow and what it waited for.
func (a *App) stop(_ context.Context, s State) (State, error) {
	wf := s.Session.Workflow
	for i := range wf.Steps {
		if wf.Steps[i].Status == stepPending {
			wf.Steps[i].Status, wf.Steps[i].Reported = stepCancelled, true
		}
	}
	wf.Pending = nil
	s.Reply.Debug.Decision, s.Reply.Debug.DecisionReason = "stop", "stop phrase with an active task"
	a.say(&s, typeText, statusStopped, a.replies.text("task_stopped", nil))
	return s, nil
}

// fallback answers a turn with nothing to continue.
func (a *App) fallback(_ context.Context, s State) (State, error) {
	a.say(&s, typeFallback, statusFallback, a.replies.text("no_session", nil))
	return s, nil
}

//go:embed prompts/social.md
var socialPrompt string

// social answers small talk, with the model when there is one,
// and reminds the user of a pending task.
func (a *App) social(ctx context.Context, s State) (State, error) {
	start := time.Now()
	d := &s.Reply.Debug
	kind := "open"
	switch {
	case strings.HasPrefix(d.Social, "capability"):
		kind = "capability"
	case len(a.cfg.Responses.Social[d.DialogAct]) > 0:
		kind = d.DialogAct
	}
	reply := ""
	if a.model != nil && kind == "open" {
		reply = a.modelSocial(ctx, s.Turn.Text)
	}
	if reply == "" {
		reply = a.replies.social(kind, s.Session.Turns)
	}
	d.Decision, d.DecisionReason = "social", d.Social
	msg := join(reply, a.replies.pendingHint(s.Session.Workflow))
	s.Reply.Latency.DecisionResponse += ms(time.Since(start))
	a.say(&s, typeText, statusSocial, msg)
	return s, nil
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

// planned records a planner's answer: its workflow when it made one.
func (a *App) planned(s *State, p plan, start time.Time) {
	d := &s.Reply.Debug
	p.debug.Trigger = d.Planner.Trigger
	d.Planner = &p.debug
	s.Reply.Latency.Planner += ms(time.Since(start))
	s.Turn.OutOfScope = p.outOfScope
	if p.debug.Accepted {
		s.Session.Workflow = p.workflow
		s.Turn.Planned = true
		d.Decision, d.DecisionReason = "workflow", p.debug.Reason
	}
}

// planTemplate matches the fixed workflows.
func (a *App) planTemplate(_ context.Context, s State) (State, error) {
	start := time.Now()
	if p, ok := a.templatePlan(a.planInput(s)); ok {
		a.planned(&s, p, start)
	} else {
		s.Reply.Latency.Planner += ms(time.Since(start))
	}
	return s, nil
}

// planHeuristic makes a workflow of the clauses in order.
func (a *App) planHeuristic(_ context.Context, s State) (State, error) {
	a.planned(&s, a.heuristicPlan(a.planInput(s)), time.Now())
	return s, nil
}

// planModel asks the model for a workflow; a model that fails leaves the
// local answer.
func (a *App) planModel(ctx context.Context, s State) (State, error) {
	start := time.Now()
	p, err := a.modelPlan(ctx, a.planInput(s))
	if err != nil {
		a.log.WarnContext(ctx, "cabin: model planner failed; keeping the local answer", "err", err)
		p = plan{debug: *s.Reply.Debug.Planner}
		p.debug.Backend, p.debug.Error = "model-fallback", err.Error()
	}
	a.planned(&s, p, start)
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

// execute makes the workflow of the one intent the text was routed to,
// with the slots read from it.
func (a *App) execute(_ context.Context, s State) (State, error) {
	lat, sess := &s.Reply.Latency, &s.Session
	in := a.planInput(s)
	id := in.route.Intent
	start := time.Now()
	slots := a.slots.read(id, in.text)
	lat.SlotExtract += ms(time.Since(start))
	bad := ""
	if name, v, lo, hi, ok := a.slots.outOfRange(in.text, a.slots.names(id)); ok && slots[name] == "" {
		bad = name // said, but out of range: asked again, with the range
		s.Turn.Note = a.rangeNote(name, v, lo, hi)
	}
	if id == sess.Intent {
		for k, v := range sess.Slots {
			if _, ok := slots[k]; !ok && !a.slots.fresh(k) && k != bad {
				slots[k] = v
			}
		}
	}
	// "查订单A123" / "取消它": the order talked about is the one meant.
	for _, k := range contextSlots {
		if v := sess.Memory[k]; v != "" && slots[k] == "" && slices.Contains(a.slots.names(id), k) {
			slots[k] = v
		}
	}
	sess.Workflow = &Workflow{Kind: workflowSingle, Source: "single", Steps: []Step{a.newStep(1, id, slots)}}
	return s, nil
}

// clarify asks which of the two best intents was meant.
func (a *App) clarify(_ context.Context, s State) (State, error) {
	a.offer(&s, 2)
	return s, nil
}

// routeToCloud offers the best intent the local stages were not sure of.
func (a *App) routeToCloud(_ context.Context, s State) (State, error) {
	a.offer(&s, 1)
	return s, nil
}

// offer asks whether one of the n best in-scope intents was meant; with
// none, it falls back.
func (a *App) offer(s *State, n int) {
	start := time.Now()
	defer func() { s.Reply.Latency.DecisionResponse += ms(time.Since(start)) }()
	var ids []string
	for _, c := range s.Reply.Debug.Route.Candidates {
		if len(ids) < n && a.cat.known(c.Intent) {
			ids = append(ids, c.Intent)
		}
	}
	if len(ids) == 0 {
		a.say(s, typeFallback, statusFallback, a.replies.text("fallback", nil))
		return
	}
	s.Session.Clarify, s.Session.ClarifyText = ids, a.planInput(*s).text
	a.say(s, typeClarify, statusClarify, a.replies.clarify(ids))
}

// reject refuses what the assistant does not do.
func (a *App) reject(_ context.Context, s State) (State, error) {
	start := time.Now()
	if s.Turn.OutOfScope {
		s.Reply.Debug.Decision, s.Reply.Debug.DecisionReason = "reject", "the model planner found the request out of scope"
	}
	if sess := &s.Session; sess.Status == statusClarify && len(sess.Clarify) > 1 && intent.ReadConsent(s.Turn.Text).Consent != intent.Rejected {
		// "车门" / "是的": a yes or an unclear reply to "lock or unlock?"
		// picks neither; the question is asked again.
		s.Reply.Debug.Decision, s.Reply.Debug.DecisionReason = "clarify", "the reply picked none of the options"
		a.say(&s, typeClarify, statusClarify, a.replies.clarify(sess.Clarify))
		s.Reply.Latency.DecisionResponse += ms(time.Since(start))
		return s, nil
	}
	a.say(&s, typeReject, statusRejected, a.replies.text("reject", nil))
	s.Reply.Latency.DecisionResponse += ms(time.Since(start))
	return s, nil
}

// nextStep finds the workflow's next step to run, skipping those whose
// dependencies did not succeed, fills its slots from the steps before it,
// and notes the slots it still misses.
func (a *App) nextStep(ctx context.Context, s State) (State, error) {
	wf := s.Session.Workflow
	wf.Pending = nil
	s.Turn.Step = -1
	for i := range wf.Steps {
		st := &wf.Steps[i]
		if st.Status != stepPending {
			continue
		}
		if wf.blocked(st) {
			st.Status = stepSkipped
			continue
		}
		a.sharedSlots(wf, i)
		if st.Slots[slotTemperatureChange] != "" {
			a.applyChange(ctx, &s, st)
		}
		s.Turn.Step = i
		if missing := a.slots.missing(st.Intent, st.Slots); len(missing) > 0 {
			wf.Pending = &Pending{Step: st.ID, Kind: pendingSlot, Slots: missing}
		} else {
			st.Slots = a.slots.withDefaults(st.Intent, st.Slots)
		}
		break
	}
	return s, nil
}

// condition tests the step's condition on an earlier result; a step
// that asks for a confirmation first runs its action's check (an order
// already delivered is not asked about), then waits for the yes to the
// tool's confirm request.
func (a *App) condition(ctx context.Context, s State) (State, error) {
	wf := s.Session.Workflow
	st := &wf.Steps[s.Turn.Step]
	if st.Condition != nil && !wf.holds(st.Condition) {
		st.Status = stepSkipped
		return s, nil
	}
	if !st.RequiresConfirmation || st.Confirmed {
		return s, nil
	}
	if check := a.cat.intents[st.Intent].action.Check; check != "" {
		if !a.call(ctx, &s, st, check).Success {
			st.Status = stepFailed // it could not run: nothing to confirm
			return s, nil
		}
		st.Checked, st.Result = st.Result.Data, nil // the step has not run yet
	}
	req, err := a.confirmRequest(ctx, &s, st)
	if err != nil { // a call the tool does not take is not put to the user
		st.Status, st.Result = stepFailed, new(unavailable(err))
		return s, nil
	}
	wf.Pending = &Pending{Step: st.ID, Kind: pendingConfirmation, Tool: &req}
	return s, nil
}

// callTool runs the step's tool.
func (a *App) callTool(ctx context.Context, s State) (State, error) {
	a.run(ctx, &s, &s.Session.Workflow.Steps[s.Turn.Step])
	return s, nil
}

// fillSlots asks for the step's missing slots and waits for the answer,
// which the next turn brings.
func (a *App) fillSlots(ctx context.Context, s State) (State, error) {
	if s.Reply.Type == "" {
		wf := s.Session.Workflow
		st := wf.step(wf.Pending.Step)
		a.question(&s, st, typeAskSlot, statusWaitingSlot, join(s.Turn.Note, a.ask(wf, st, wf.Pending.Slots[0])))
	}
	return a.await(ctx, s)
}

// confirm asks for a yes to the step and waits for the answer, which the
// next turn brings.
func (a *App) confirm(ctx context.Context, s State) (State, error) {
	if s.Reply.Type == "" {
		wf := s.Session.Workflow
		st := wf.step(wf.Pending.Step)
		a.question(&s, st, typeAskConfirmation, statusWaitingConfirmation, a.confirmQuestion(wf, st))
	}
	return a.await(ctx, s)
}

// question says what the steps finished this turn did, then asks the
// question of step st.
func (a *App) question(s *State, st *Step, typ, status, ask string) {
	start := time.Now()
	wf := s.Session.Workflow
	news := a.replies.report(wf, a.templateVars(wf))
	s.Session.Intent, s.Session.Slots = st.Intent, st.Slots
	s.Reply.Debug.Decision = cmp.Or(s.Reply.Debug.Decision, "execute")
	a.say(s, typ, status, join(news, ask))
	s.Reply.Latency.ResponseBuild += ms(time.Since(start))
}

// respond tells the outcome of a finished workflow; a turn answered
// otherwise (small talk, a refusal, …) is left as it is.
func (a *App) respond(_ context.Context, s State) (State, error) {
	if s.Reply.Type != "" {
		return s, nil
	}
	start := time.Now()
	wf, sess := s.Session.Workflow, &s.Session
	news := a.replies.report(wf, a.templateVars(wf))
	for i := len(wf.Steps) - 1; i >= 0; i-- {
		if st := &wf.Steps[i]; st.Result != nil {
			sess.Intent, sess.Slots = st.Intent, st.Slots
			break
		}
	}
	s.Reply.Debug.Decision = cmp.Or(s.Reply.Debug.Decision, "execute")
	a.say(&s, typeWorkflowResult, outcome(wf), news)
	s.Reply.Latency.ResponseBuild += ms(time.Since(start))
	return s, nil
}

// outcome is a finished workflow's status: failed when steps failed and
// none was done, else completed.
func outcome(wf *Workflow) string {
	failed := false
	for _, st := range wf.Steps {
		switch st.Status {
		case stepDone:
			return statusCompleted
		case stepFailed:
			failed = true
		}
	}
	if failed {
		return statusFailed
	}
	return statusCompleted
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
	// Tool is, for a confirmation, the call to confirm, as every agent
	// asks it; a tool.ConfirmAnswer is an Answer.
	Tool *tool.ConfirmRequest `json:"tool,omitempty"`
}

// await asks the user the turn's reply and takes the answer as the next
// turn's input. On resume the node runs again with the reply already
// said, so nothing is said twice.
func (a *App) await(ctx context.Context, s State) (State, error) {
	q := Question{Type: s.Reply.Type, Message: s.Reply.Message, Intent: s.Session.Intent, PendingSlots: s.Session.PendingSlots}
	if wf := s.Session.Workflow; wf != nil && wf.Pending != nil {
		q.Step, q.Tool = wf.Pending.Step, wf.Pending.Tool
	}
	ans, err := graph.Ask[Answer](ctx, q)
	if err != nil {
		return s, err
	}
	s.Text, s.FillSlots, s.Accept, s.Reason = ans.Text, ans.Slots, ans.Accept, ans.Note
	return s, nil
}

// say sets the turn's reply and what the session remembers of it.
func (a *App) say(s *State, typ, status, msg string) {
	start := time.Now()
	sess := &s.Session
	s.Reply.Type, s.Reply.Status, s.Reply.Message = typ, status, msg
	sess.LastAgentText = msg
	sess.LastSocial = status == statusSocial
	if status != statusClarify {
		sess.Clarify, sess.ClarifyText = nil, ""
	}
	switch {
	case sess.waiting() && sess.Workflow.Pending.Kind == pendingConfirmation:
		sess.Status, sess.PendingSlots = statusWaitingConfirmation, []string{"confirmation"}
	case sess.waiting():
		sess.Status, sess.PendingSlots = statusWaitingSlot, slices.Clone(sess.Workflow.Pending.Slots)
	default:
		sess.Status, sess.PendingSlots = status, nil
	}
	sess.History = append(sess.History, turnRecord{User: sess.LastUserText, Agent: msg, Type: typ, Intent: sess.Intent, At: time.Now().UTC()})
	if n := len(sess.History); n > historyLimit {
		sess.History = slices.Delete(sess.History, 0, n-historyLimit)
	}
	s.Reply.Latency.RecordTurn += ms(time.Since(start))
}
