package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/convo"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/tool"
)

// Phases of a conversation; the routes follow them.
const (
	phaseChatting  = "chatting"        // a chat reply, no task
	phasePlanning  = "planning"        // Plan works on the plan
	phaseWaiting   = "waiting_confirm" // a plan waits for its card
	phaseExecuting = "executing"       // the plan's current step starts
	phaseActing    = "acting"          // back into the ReAct loop after an answer
	phaseDone      = "done"            // execution over, Deliver next
	phaseDelivered = "delivered"       // the summary is out
)

// Node names.
const (
	nodeChat      = "chat"
	nodePlan      = "plan"
	nodeConfirm   = "confirm"
	nodeInterrupt = "interrupt"
	nodeStep      = "step"
	nodeAdvance   = "advance"
	nodeDeliver   = "deliver"
	// execPrefix names the ReAct nodes: execute_think, execute_act,
	// execute_pause.
	execPrefix = "execute_"
)

// Bounds of the graph's loops.
const (
	maxPlanRounds   = 3  // plan → plan (continue)
	maxInteractions = 20 // interrupt → chat, answers in a row
	maxSteps        = 10 // advance → step, plan steps
	maxCorrections  = 3  // malformed model answers in a row
)

// Outcomes of execution, for Deliver.
const (
	outcomeDone   = "done"
	outcomeAbort  = "abort"
	outcomeBudget = "budget"
)

// Step is one step of a plan.
type Step struct {
	Content  string `json:"content"`
	DoneWhen string `json:"done_when,omitempty"`
	Done     bool   `json:"done,omitempty"`
	// Result is what execution reported at the step's end.
	Result string `json:"result,omitempty"`
}

// Plan is what the agent will do for a task.
type Plan struct {
	Goal       string `json:"goal"`
	Complexity string `json:"complexity,omitempty"`
	Steps      []Step `json:"steps"`
	Current    int    `json:"current"`
}

// State is the agent's graph state. A run's input is {"message": …}.
type State struct {
	// Message is the person's latest message.
	Message string `json:"message"`
	Phase   string `json:"phase,omitempty"`
	Plan    Plan   `json:"plan"`
	// Notes carry what planning learned: the person's answers, why a plan
	// was rejected, what the model said while planning.
	Notes []string `json:"notes,omitempty"`
	// Avoid is the times the person wants kept free for this task: the
	// owner's saved ones, changed by the request and by answers while
	// planning. Answers while executing add to it (see constraints), and
	// Deliver saves the result for the owner's next threads.
	Avoid []Avoid `json:"avoid,omitempty"`
	// Pending is the plan card or question waiting for an answer.
	Pending *Interaction `json:"pending,omitempty"`
	// Exec is the ReAct loop that executes the plan.
	Exec agent.State `json:"exec"`
	// RoundBase and MsgBase are Exec.Rounds and len(Exec.Messages) when
	// the plan started executing.
	RoundBase int     `json:"round_base,omitempty"`
	MsgBase   int     `json:"msg_base,omitempty"`
	Outcome   string  `json:"outcome,omitempty"`
	HealthAt  float64 `json:"health_at_start,omitempty"`
	// Reply is the turn's final text: a chat reply or the summary.
	Reply string `json:"reply,omitempty"`
}

// Config configures the agent.
type Config struct {
	// Store holds the schedules.
	Store *Store
	// Owner is whose schedule the agent works on (DefaultOwner if empty).
	Owner string
	// Model is the language model; nil runs on heuristics: keyword intent,
	// a plan from the pending items, the optimiser's best candidate.
	Model llm.Model
	// StreamDelay is the pause between pseudo-stream chunks; 0 sends them
	// at once.
	StreamDelay time.Duration
	// MaxRounds is the round budget of an execution (default 30).
	MaxRounds int
	// Logger receives the agent's logs (default slog.Default()).
	Logger *slog.Logger
}

// Agent is the scheduling agent: its tools and graph.
type Agent struct {
	cfg   Config
	tools *tool.Registry
	exec  agent.Config
	log   *slog.Logger
}

// New returns the agent for cfg.
func New(cfg Config) (*Agent, error) {
	if cfg.Owner == "" {
		cfg.Owner = DefaultOwner
	}
	if cfg.MaxRounds <= 0 {
		cfg.MaxRounds = 30
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	a := &Agent{cfg: cfg, log: cfg.Logger}
	var err error
	if a.tools, err = a.newTools(); err != nil {
		return nil, fmt.Errorf("schedule agent: tools: %w", err)
	}
	model := cfg.Model
	if model == nil {
		model = &chooser{a: a}
	}
	a.exec = agent.Config{
		Model: model, Tools: a.tools, System: prompt("execute"),
		Budget: cfg.MaxRounds, MaxCorrections: maxCorrections,
		View:        convo.Config{Window: 40, Counter: convo.Estimate{}, Observation: convo.Trim{MaxItems: 20, MaxChars: 6000}},
		RoundStatus: roundStatus,
	}
	return a, nil
}

// roundStatus is the status line of a round of execution.
func roundStatus(round int) string { return fmt.Sprintf("思考下一步（第 %d 轮）", round) }

// Graph builds the agent's graph:
//
//	chat → plan ⟲ → confirm → interrupt → chat (resume) → step → execute (ReAct) → advance → step … → deliver
func (a *Agent) Graph() *graph.Graph[State] {
	g := graph.New[State]("schedule")
	think := execPrefix + agent.Think
	g.Node(nodeChat, a.chat).
		Node(nodePlan, a.plan).
		Node(nodeConfirm, a.confirm).
		Node(nodeInterrupt, a.interrupt).
		Node(nodeStep, a.step).
		Node(nodeAdvance, a.advance).
		Node(nodeDeliver, a.deliver)
	agent.AddTo(g, execPrefix, a.exec, func(s *State) *agent.State { return &s.Exec }, nodeAdvance)
	g.Edge(graph.Start, nodeChat).
		Route(nodeChat, func(s State) string {
			switch s.Phase {
			case phasePlanning:
				return nodePlan
			case phaseExecuting:
				return nodeStep
			case phaseActing:
				return think
			case phaseDone:
				return nodeDeliver
			}
			return graph.End
		}, nodePlan, nodeStep, think, nodeDeliver, graph.End).
		Route(nodePlan, func(s State) string {
			switch {
			case s.Pending != nil:
				return nodeInterrupt
			case s.Phase == phasePlanning:
				return nodePlan
			}
			return nodeConfirm
		}, nodeInterrupt, nodePlan, nodeConfirm).
		Loop(nodePlan, nodePlan, maxPlanRounds, nodeConfirm).
		Edge(nodeConfirm, nodeInterrupt).
		Edge(nodeInterrupt, nodeChat).
		Loop(nodeInterrupt, nodeChat, maxInteractions, nodeDeliver).
		Edge(nodeStep, think).
		Route(nodeAdvance, func(s State) string {
			if s.Phase == phaseExecuting {
				return nodeStep
			}
			return nodeDeliver
		}, nodeStep, nodeDeliver).
		Loop(nodeAdvance, nodeStep, maxSteps, nodeDeliver).
		Edge(nodeDeliver, graph.End)
	return g
}

// chat is the entry: it resumes a pending interaction, or tells a chat
// from a task.
func (a *Agent) chat(ctx context.Context, s State) (State, error) {
	if s.Pending != nil {
		return a.resume(ctx, s)
	}
	if waiting(&s.Exec) {
		return a.resumeExecution(ctx, s)
	}
	s.Reply, s.Outcome = "", ""
	sch, err := a.load(ctx)
	if err != nil {
		return s, fmt.Errorf("chat: %w", err)
	}
	saved, err := a.cfg.Store.constraints(ctx, a.owner(ctx))
	if err != nil {
		return s, fmt.Errorf("chat: %w", err)
	}
	if a.manualEdit(ctx, &s, sch, saved) {
		return s, nil
	}
	change := readConstraints(s.Message)
	avoid := change.apply(saved)
	if !change.empty() {
		a.saveConstraints(ctx, avoid)
	}
	task, reply := a.intent(ctx, &s, sch)
	if !task && !change.empty() {
		// A message that only says when the person is busy: noted, and
		// the week is changed when it has tasks in those times.
		if len(blocked(sch, avoid)) > 0 {
			task = true
		} else {
			reply = constraintsNoted(change, avoid)
		}
	}
	if !task {
		s.Phase, s.Reply = phaseChatting, reply
		a.say(ctx, reply)
		return s, nil
	}
	graph.Emit(ctx, graph.KindStatus, "这是一个排程任务，开始规划")
	s.Phase, s.Plan, s.Notes, s.Avoid = phasePlanning, Plan{Goal: strings.TrimSpace(s.Message)}, nil, avoid
	return s, nil
}

// saveConstraints keeps the times the run's owner wants kept free for
// their next threads. A failure is logged: the task goes on with them.
func (a *Agent) saveConstraints(ctx context.Context, avoid []Avoid) {
	if err := a.cfg.Store.setConstraints(ctx, a.owner(ctx), avoid); err != nil {
		a.log.WarnContext(ctx, "schedule: constraints not saved", "err", err)
	}
}

// constraintsNoted is the reply to a message that changes the times kept
// free when no task is in them.
func constraintsNoted(c constraintChange, avoid []Avoid) string {
	var b strings.Builder
	switch {
	case len(c.add) > 0:
		fmt.Fprintf(&b, "记下了：%s 不排任务，之后的对话也会记住。", avoidList(c.add))
	case c.clear && len(avoid) == 0:
		b.WriteString("好的，已清除所有时间限制。")
	case len(c.drop) > 0:
		fmt.Fprintf(&b, "好的，%s 又可以排任务了。", avoidList(c.drop))
	}
	if len(avoid) > 0 {
		fmt.Fprintf(&b, "现在不排任务的时间：%s。", avoidList(avoid))
	}
	b.WriteString("现在的日程没有任务在这些时间，不用调整。")
	return b.String()
}

// resume applies the answer to the pending plan card or question (seed
// 001 §3.3, §4.1): accept a plan → execute it; reject it → plan again with
// the reason; an answer to a planning question → plan again with it. The
// answer comes from the interrupt, or is the new message when the person
// wrote instead of answering.
func (a *Agent) resume(ctx context.Context, s State) (State, error) {
	p := s.Pending
	s.Pending = nil
	ans, _ := parseAnswer(s.Message) // unclear: no yes; the message is feedback on the card
	if p.Answer != nil {
		ans = *p.Answer
	}
	switch {
	case p.Kind == kindPlan && ans.Accept:
		sch, err := a.load(ctx)
		if err != nil {
			return s, fmt.Errorf("chat: resume: %w", err)
		}
		s.Phase, s.Plan.Current, s.RoundBase, s.MsgBase = phaseExecuting, 0, s.Exec.Rounds, len(s.Exec.Messages)
		s.HealthAt = round1(Measure(sch).Health())
		s.Exec.Tools = defaultView()
		graph.Emit(ctx, graph.KindStatus, "计划已确认，开始执行")
	case p.Kind == kindPlan:
		s.Phase, s.Plan.Steps = phasePlanning, nil
		s.Notes = append(s.Notes, "用户拒绝了上一个计划"+reasonText(ans.Note))
		a.noteAnswer(ctx, &s, ans.Note)
		graph.Emit(ctx, graph.KindStatus, "计划被拒绝，重新规划")
	default:
		s.Phase = phasePlanning
		s.Notes = append(s.Notes, "问："+p.Text+"\n答："+ans.Text)
		a.noteAnswer(ctx, &s, ans.Text)
	}
	return s, nil
}

// noteAnswer applies what an answer while planning says about the times
// to keep free ("周三不行") to the task's, and saves them for the owner.
func (a *Agent) noteAnswer(ctx context.Context, s *State, text string) {
	if c := readAnswer(text); !c.empty() {
		s.Avoid = c.apply(s.Avoid)
		a.saveConstraints(ctx, s.Avoid)
	}
}

func reasonText(r string) string {
	if r = strings.TrimSpace(r); r != "" {
		return "，原因：" + r
	}
	return ""
}

// plan makes the plan: a quick assessment, and a deeper plan for complex
// tasks, by the model; from the pending items without one.
func (a *Agent) plan(ctx context.Context, s State) (State, error) {
	graph.Emit(ctx, graph.KindStatus, "正在规划")
	sch, err := a.load(ctx)
	if err != nil {
		return s, fmt.Errorf("plan: %w", err)
	}
	var d planDecision
	if a.cfg.Model != nil {
		if d, err = a.modelPlan(ctx, &s, sch); err != nil {
			a.log.WarnContext(ctx, "schedule: model plan failed; planning by heuristics", "err", err)
		}
	}
	if a.cfg.Model == nil || err != nil {
		d = heuristicPlan(sch, &s)
	}
	if d.Speak != "" {
		a.say(ctx, d.Speak+"\n")
	}
	switch d.Action {
	case planContinue:
		s.Phase = phasePlanning
		if d.Speak != "" {
			s.Notes = append(s.Notes, "规划中："+d.Speak)
		}
	case planAskUser:
		s.Phase = phaseWaiting
		s.Pending = &Interaction{Kind: kindAskUser, Text: d.Question}
	default:
		s.Phase = phaseWaiting
		s.Plan.Complexity, s.Plan.Steps, s.Plan.Current = d.Complexity, d.steps(), 0
	}
	return s, nil
}

// confirm makes the plan card.
func (a *Agent) confirm(ctx context.Context, s State) (State, error) {
	if len(s.Plan.Steps) == 0 {
		sch, err := a.load(ctx)
		if err != nil {
			return s, fmt.Errorf("confirm: %w", err)
		}
		s.Plan.Steps = heuristicPlan(sch, &s).steps()
	}
	s.Phase = phaseWaiting
	s.Pending = &Interaction{Kind: kindPlan, Text: planCard(s.Plan, s.Avoid), Steps: s.Plan.Steps, Avoid: s.Avoid}
	s.Exec.Pins = s.Exec.Pins.Set("plan", planText(s.Plan))
	return s, nil
}

// interrupt asks the pending question and keeps the answer for chat.
func (a *Agent) interrupt(ctx context.Context, s State) (State, error) {
	ans, err := graph.Ask[Answer](ctx, *s.Pending)
	if err != nil {
		return s, err
	}
	p := *s.Pending
	p.Answer = &ans
	s.Pending = &p
	return s, nil
}

// step starts the plan's current step as a turn of the ReAct loop, with the
// plan and the execution context pinned.
func (a *Agent) step(ctx context.Context, s State) (State, error) {
	n := len(s.Plan.Steps)
	if s.Plan.Current >= n {
		return s, fmt.Errorf("step: plan has %d steps, current is %d", n, s.Plan.Current+1)
	}
	st := s.Plan.Steps[s.Plan.Current]
	s.Exec.Pins = s.Exec.Pins.Set("plan", planText(s.Plan)).Set("execution_context", executionContext(&s, a.cfg.MaxRounds))
	instruction := fmt.Sprintf("执行第 %d/%d 步：%s\n完成标准：%s", s.Plan.Current+1, n, st.Content, st.DoneWhen)
	if avoid := constraints(&s); len(avoid) > 0 {
		instruction += "\n用户要求" + avoidMark + avoidList(avoid)
	}
	s.Exec.NewTurn(instruction)
	graph.Emit(ctx, graph.KindStatus, fmt.Sprintf("执行第 %d/%d 步：%s", s.Plan.Current+1, n, clipRunes(st.Content, 40)))
	return s, nil
}

// advance reads how the ReAct turn ended: next_plan moves to the next step
// (or Deliver after the last), done and abort go to Deliver, and so does
// an exhausted round budget.
func (a *Agent) advance(_ context.Context, s State) (State, error) {
	action, text := parseOutcome(s.Exec.Answer)
	if s.Plan.Current < len(s.Plan.Steps) {
		st := &s.Plan.Steps[s.Plan.Current]
		st.Result, st.Done = text, action != outcomeAbort
	}
	s.Phase = phaseDone
	switch {
	case action == outcomeAbort:
		s.Outcome = outcomeAbort
	case s.Exec.Rounds-s.RoundBase >= a.cfg.MaxRounds:
		s.Outcome = outcomeBudget
	case action == outcomeDone || s.Plan.Current+1 >= len(s.Plan.Steps):
		s.Outcome = outcomeDone
	default:
		s.Plan.Current++
		s.Phase = phaseExecuting
	}
	return s, nil
}

// actionNextPlan is the finish action of the execution contract that ends
// the current step; it is the default. A finish answer that starts with
// "done:" ends the whole task, one with "abort:" gives up.
const actionNextPlan = "next_plan"

// parseOutcome splits a finish answer into the action (next_plan, done or
// abort, from a leading "action:") and the text.
func parseOutcome(answer string) (string, string) {
	t := strings.TrimSpace(answer)
	for _, act := range []string{actionNextPlan, outcomeDone, outcomeAbort} {
		if rest, ok := strings.CutPrefix(strings.ToLower(t), act); ok && (rest == "" || strings.ContainsRune(":：] ", []rune(rest)[0])) {
			return act, strings.TrimSpace(strings.TrimLeft(t[len(act):], ":：] "))
		}
	}
	return actionNextPlan, t
}

// deliver sums up, by the model or mechanically, and ends the task.
func (a *Agent) deliver(ctx context.Context, s State) (State, error) {
	graph.Emit(ctx, graph.KindStatus, "正在总结")
	sch, err := a.load(ctx)
	if err != nil {
		return s, fmt.Errorf("deliver: %w", err)
	}
	if s.Outcome == "" { // a loop bound ended the task early
		s.Outcome = outcomeBudget
		if len(s.Plan.Steps) > 0 && !slices.ContainsFunc(s.Plan.Steps, func(st Step) bool { return !st.Done }) {
			s.Outcome = outcomeDone
		}
	}
	if avoid := constraints(&s); !slices.Equal(avoid, normalizeAvoids(s.Avoid)) {
		s.Avoid = avoid
		a.saveConstraints(ctx, avoid)
	}
	facts := deliveryFacts(&s, sch)
	text := ""
	if a.cfg.Model != nil {
		text, err = a.modelSummary(ctx, facts)
		if err != nil {
			a.log.WarnContext(ctx, "schedule: model summary failed; summing up mechanically", "err", err)
		}
	}
	if text == "" {
		text = mechanicalSummary(facts)
		a.say(ctx, "\n"+text)
	}
	s.Reply, s.Phase, s.Pending = text, phaseDelivered, nil
	return s, nil
}

// waiting reports whether the ReAct loop stopped on a question: an open
// tool call (a tool card or ask_user) or the pause at the round budget.
func waiting(st *agent.State) bool {
	return st.PauseSummary != "" || len(agent.PendingCalls(st.Messages)) > 0
}

// resumeExecution answers the question the ReAct loop stopped on with the
// new message, when the person wrote instead of resuming: a tool card runs on accept and is rejected with the message
// as the reason otherwise; ask_user gets the message as its answer; the
// pause goes on or, refused, ends in Deliver.
func (a *Agent) resumeExecution(ctx context.Context, s State) (State, error) {
	ans, _ := parseAnswer(s.Message) // unclear: no yes; the message is feedback on the card
	st := &s.Exec
	if st.PauseSummary != "" {
		st.PauseSummary = "" // chat → think starts the round budget again
		if !ans.Continue {
			s.Phase, s.Outcome = phaseDone, outcomeBudget
			return s, nil
		}
		st.Messages = append(st.Messages, llm.User(cmpText(ans.Message, "Continue.")))
		s.Phase = phaseActing
		return s, nil
	}
	vctx := tool.WithView(ctx, &st.Tools)
	for _, c := range agent.PendingCalls(st.Messages) {
		result, err := a.answerCall(vctx, c, ans)
		if err != nil {
			return s, fmt.Errorf("chat: resume %s: %w", c.Name, err)
		}
		st.Messages = append(st.Messages, llm.ToolResult(c.ID, result))
		graph.Emit(ctx, graph.KindToolResult, map[string]string{"id": c.ID, "tool": c.Name, "result": result})
	}
	s.Phase = phaseActing
	return s, nil
}

// answerCall answers one open tool call with the person's message:
// ask_user gets the text, a tool card is answered by agent.AnswerCall.
func (a *Agent) answerCall(ctx context.Context, c llm.ToolCall, ans Answer) (string, error) {
	if c.Name == toolAskUser {
		return answerText(ans), nil
	}
	out, err := agent.AnswerCall(ctx, a.tools, c, ans.ConfirmAnswer)
	if graph.IsInterrupt(err) {
		return "", errors.New("a tool asked a question while answering another")
	}
	return out, err
}

func cmpText(s, dflt string) string {
	if strings.TrimSpace(s) == "" {
		return dflt
	}
	return s
}

func clipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
