// Package agent holds prebuilt node sets for graphs. ReAct is the loop
// of a tool-using agent: the model decides, read tools run at once, write tools
// wait for a person's confirmation, malformed answers are fed back, and at
// the round budget the agent summarises, pauses, and goes on when resumed.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/loomkit/loom/contract"
	"github.com/loomkit/loom/convo"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/schema"
	"github.com/loomkit/loom/tool"
)

// State is the ReAct loop's state. Run it alone (New) or keep it in an
// app's state (AddTo with a lens).
type State struct {
	// Messages is the full history, kept whole for display.
	Messages []llm.Message `json:"messages"`
	// Summary caches the summary of messages older than the model's window.
	Summary convo.Summary `json:"summary"`
	// Pins are context blocks shown to the model first (plan, known tables).
	Pins convo.Pins `json:"pins,omitempty"`
	// Tools is which domains and packs of tools the model sees.
	Tools tool.View `json:"tools"`
	// Rounds counts model rounds on the thread. The round budget and the
	// malformed answers in a row are the graph's budgets (see AddTo), not
	// fields of the state.
	Rounds int `json:"rounds"`
	// Answer is the final answer of the last turn.
	Answer string `json:"answer,omitempty"`
	// PauseSummary is the progress summary of a pause waiting for an answer.
	PauseSummary string    `json:"pause_summary,omitempty"`
	Usage        llm.Usage `json:"usage"`
}

// Say returns an update for Invoke that adds a user message and starts a
// new turn with the earlier context kept.
func Say(text string) func(*State) {
	return func(s *State) { s.NewTurn(text) }
}

// NewTurn adds a user message and clears the last turn's answer.
func (s *State) NewTurn(text string) {
	s.Messages = append(s.Messages, llm.User(text))
	s.Answer, s.PauseSummary = "", ""
}

// Decision is what the model answers when it decides through the JSON
// contract rather than the provider's tool calls.
type Decision struct {
	// Thought is the model's short reasoning, kept in the history.
	Thought string `json:"thought,omitempty"`
	// Action is call_tool or finish.
	Action string `json:"action" jsonschema:"enum=call_tool,enum=finish"`
	// Tool and Args name the tool to call and its arguments.
	Tool string         `json:"tool,omitempty"`
	Args map[string]any `json:"args,omitempty"`
	// Answer is the final answer, with finish.
	Answer string `json:"answer,omitempty"`
}

// PauseRequest is the question asked at the round budget.
type PauseRequest struct {
	Summary string `json:"summary"`
	Rounds  int    `json:"rounds"`
}

// PauseAnswer answers a pause: go on (with an optional new instruction), or
// stop with the summary as the answer.
type PauseAnswer struct {
	Continue bool   `json:"continue"`
	Message  string `json:"message,omitempty"`
	// Accept and Note are Continue and Message as a confirm card answers
	// ({"accept": true, "note": "…"}), as the web page does.
	Accept bool   `json:"accept,omitempty"`
	Note   string `json:"note,omitempty"`
}

// Config configures a ReAct loop.
type Config struct {
	Model llm.Model
	// Tools is the registry; State.Tools says which of its tools are shown.
	Tools  *tool.Registry
	Policy tool.Policy
	// System is the system prompt.
	System string
	// Budget is how many model rounds run before the agent pauses
	// (default 30): the graph's budget "rounds" (after AddTo's prefix).
	Budget int
	// MaxCorrections is how many malformed answers in a row are fed back
	// (default 3): the graph's budget "corrections". One more goes to
	// the pause, which GiveUp answers when set.
	MaxCorrections int
	// View configures the model's copy of the history.
	View convo.Config
	// NativeTools makes the model decide through the provider's tool calls
	// instead of the JSON decision contract.
	NativeTools bool
	// Options are passed on every model call (temperature, thinking, …).
	Options []llm.Option
	// RoundStatus is the status line each model round streams (default
	// "round N"), for agents that speak another language.
	RoundStatus func(round int) string
	// Status, when set, is each model round's status line given the
	// loop's state (st.Rounds is the round), used instead of RoundStatus:
	// for agents that answer in the language of the user's question.
	Status func(st *State) string
	// SummaryRequest, when set, is the message that asks the model for
	// its progress summary at the round budget, given the loop's state
	// (default: an English request for what was done, found and left).
	SummaryRequest func(st *State) string
	// GiveUp, when set, ends a turn whose model answered malformed too
	// many times in a row with the text it returns as the answer,
	// instead of pausing to ask whether to go on.
	GiveUp func(ctx context.Context, st *State, err *MalformedError) string
	// ModelFailed, when set, ends a turn whose model call failed (the
	// endpoint unreachable, an error status after the client's retries)
	// with the text it returns as the answer, instead of failing the run
	// with the error. A run whose context ended still fails.
	ModelFailed func(ctx context.Context, st *State, err error) string
}

// Node names, after the prefix given to AddTo.
const (
	Think = "think"
	Act   = "act"
	Pause = "pause"
)

// Budget names, after the prefix given to AddTo: model rounds until the
// agent pauses (Config.Budget), and malformed answers in a row fed back
// (Config.MaxCorrections). Nodes read what is left with graph.Left.
const (
	Rounds      = "rounds"
	Corrections = "corrections"
)

// New returns a graph that runs the loop alone on State: each Invoke with
// Say(text) is a turn; the run ends with the answer in State.Answer.
func New(cfg Config) *graph.Graph[State] {
	g := graph.New[State]("react")
	AddTo(g, "", cfg, func(s *State) *State { return s }, graph.End)
	g.Edge(graph.Start, Think)
	return g
}

// AddTo adds the loop's nodes to g as prefix+"think", prefix+"act" and
// prefix+"pause", working on the State that lens finds in g's state. The
// loop is entered at prefix+"think" and leaves to exit with State.Answer
// set.
//
// Two budgets bound the loop, and the graph draws them: prefix+"rounds"
// counts model rounds (every entry into think from outside the loop
// starts it again at 1, the round it begins); once spent, the loop
// pauses to summarise and ask whether to go on. prefix+"corrections"
// counts malformed answers fed back in a row (a well-formed one starts it
// again); the answer after them goes to the pause too, where Config.GiveUp,
// when set, ends the turn instead.
func AddTo[S any](g *graph.Graph[S], prefix string, cfg Config, lens func(*S) *State, exit string) {
	r := newReact(cfg)
	think, act, pause := prefix+Think, prefix+Act, prefix+Pause
	r.corrections = prefix + Corrections
	on := func(fn func(context.Context, *State) error) graph.NodeFunc[S] {
		return func(ctx context.Context, s S) (S, error) {
			return s, fn(ctx, lens(&s))
		}
	}
	g.Node(think, on(r.think)).
		Node(act, on(r.act)).
		Node(pause, on(r.pause)).
		Route(think, func(s S) string {
			st := lens(&s)
			switch {
			case st.Answer != "":
				return exit
			case len(PendingCalls(st.Messages)) > 0:
				return act
			}
			return think // a correction round
		}, exit, act, think).
		// act answers every call of the model's message in one step (its
		// write calls each ask at once), so it always goes back to think.
		Edge(act, think).
		Route(pause, func(s S) string {
			if lens(&s).Answer != "" {
				return exit
			}
			return think
		}, think, exit).
		// pause → think runs once per "go on" in a turn.
		Loop(pause, think, 1000, exit)
	g.Budget(r.corrections, r.maxCorrections, pause).
		Count(think, think, 1).
		Reset(think, act).
		ResetEntering(think, 0)
	g.Budget(prefix+Rounds, r.budget, pause).
		Count(think, think, 1).
		Count(act, think, 1).
		ResetEntering(think, 1)
}

type react struct {
	Config
	budget, maxCorrections int
	corrections            string // the corrections budget's name
	view                   *convo.Builder
	format                 string
}

func newReact(cfg Config) *react {
	r := &react{Config: cfg, budget: cfg.Budget, maxCorrections: cfg.MaxCorrections}
	if r.budget <= 0 {
		r.budget = 30
	}
	if r.maxCorrections <= 0 {
		r.maxCorrections = 3
	}
	if r.Tools == nil {
		r.Tools = tool.NewRegistry()
	}
	r.view = convo.New(cfg.View)
	if s, err := schema.For[Decision](); err == nil {
		r.format = s.Format()
	}
	return r
}

// messages builds what the model sees: the system prompt (with the
// decision contract unless tools are native), pins, summary and window.
func (r *react) messages(ctx context.Context, st *State, extra ...llm.Message) ([]llm.Message, error) {
	v, err := r.view.Build(ctx, st.Messages, st.Pins, &st.Summary)
	if err != nil {
		return nil, fmt.Errorf("react: build the model's view: %w", err)
	}
	sys := r.System
	if !r.NativeTools {
		sys += "\n\nAnswer every turn with one JSON object in a <DECISION></DECISION> block, of this form:\n" + r.format +
			"\nUse action call_tool with tool and args to call one of the tools, or finish with answer when done."
	}
	msgs := v.Messages
	if len(msgs) > 0 && msgs[0].Role == llm.RoleSystem {
		msgs[0].Content = strings.TrimSpace(sys + "\n\n" + msgs[0].Content)
	} else {
		msgs = append([]llm.Message{llm.System(strings.TrimSpace(sys))}, msgs...)
	}
	return append(msgs, extra...), nil
}

// ask streams one model answer, forwarding text and reasoning as events.
func (r *react) ask(ctx context.Context, st *State, msgs []llm.Message, stream bool, opts ...llm.Option) (*llm.Response, error) {
	opts = append(append([]llm.Option(nil), r.Options...), opts...)
	var acc llm.Accumulator
	for c, err := range r.Model.Stream(ctx, msgs, opts...) {
		if err != nil {
			return nil, fmt.Errorf("react: ask the model: %w", err)
		}
		if c.Reasoning != "" {
			graph.Emit(ctx, graph.KindReasoning, c.Reasoning)
		}
		if stream && c.Content != "" {
			graph.Emit(ctx, graph.KindToken, c.Content)
		}
		acc.Add(c)
	}
	resp := acc.Response()
	st.Usage = st.Usage.Add(resp.Usage)
	return resp, nil
}

// think asks the model for its next move.
func (r *react) think(ctx context.Context, st *State) error {
	st.Rounds++
	status := fmt.Sprintf("round %d", st.Rounds)
	switch {
	case r.Status != nil:
		status = r.Status(st)
	case r.RoundStatus != nil:
		status = r.RoundStatus(st.Rounds)
	}
	graph.Emit(ctx, graph.KindStatus, status)
	msgs, err := r.messages(ctx, st)
	if err != nil {
		return err
	}
	resp, err := r.ask(ctx, st, msgs, r.NativeTools, llm.WithTools(r.Tools.Definitions(st.Tools)...))
	if err != nil {
		if r.ModelFailed == nil || ctx.Err() != nil || graph.IsInterrupt(err) {
			return err
		}
		st.Answer = orDefault(r.ModelFailed(ctx, st, err), "(no answer)")
		st.Messages = append(st.Messages, llm.Assistant(st.Answer))
		graph.Emit(ctx, graph.KindToken, st.Answer)
		return nil
	}
	m := resp.Message
	if len(m.ToolCalls) > 0 || r.NativeTools {
		st.Messages = append(st.Messages, llm.Message{Role: llm.RoleAssistant, Content: m.Content, Reasoning: m.Reasoning, ToolCalls: m.ToolCalls})
		if len(m.ToolCalls) == 0 {
			st.Answer = m.Content
			if st.Answer == "" {
				st.Answer = "(no answer)"
			}
		}
		return nil
	}
	d, err := decodeDecision(m.Content)
	if err != nil {
		// Fed back; the corrections budget bounds how often in a row.
		st.Messages = append(st.Messages, llm.Message{Role: llm.RoleAssistant, Content: m.Content, Reasoning: m.Reasoning},
			llm.User(contract.Feedback[Decision](err)))
		return nil
	}
	msg := llm.Message{Role: llm.RoleAssistant, Content: m.Content, Reasoning: m.Reasoning}
	if d.Action == "finish" {
		st.Answer = d.Answer
		if st.Answer == "" {
			st.Answer = "(no answer)"
		}
		graph.Emit(ctx, graph.KindToken, st.Answer)
	} else {
		args, _ := json.Marshal(d.Args)
		if d.Args == nil {
			args = []byte("{}")
		}
		msg.ToolCalls = []llm.ToolCall{{ID: fmt.Sprintf("call_%d", st.Rounds), Name: d.Tool, Arguments: string(args)}}
	}
	st.Messages = append(st.Messages, msg)
	return nil
}

// decodeDecision reads a decision from the model's answer.
func decodeDecision(text string) (Decision, error) {
	d, err := contract.Decode[Decision](text)
	if err == nil && d.Action == "call_tool" && d.Tool == "" {
		err = &contract.ValidationError{Problems: []contract.Problem{{Field: "tool", Message: "is required with action call_tool"}}}
	}
	return d, err
}

// MalformedError is what Config.GiveUp gets when the model answered
// malformed too many times in a row. It carries every rejected answer,
// oldest first.
type MalformedError struct {
	Answers []string
	Err     error
}

// Error names the last problem and quotes every answer, each cut at 300
// characters, so whoever reads the error sees what the model said.
func (e *MalformedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "react: the model gave %d malformed answers in a row; last problem: %v", len(e.Answers), e.Err)
	for i, a := range e.Answers {
		if r := []rune(a); len(r) > 300 {
			a = string(r[:300]) + "…"
		}
		fmt.Fprintf(&b, "; answer %d: %q", i+1, a)
	}
	return b.String()
}

func (e *MalformedError) Unwrap() error { return e.Err }

func lastAnswers(msgs []llm.Message, n int) []string {
	var out []string
	for i := len(msgs) - 2; i >= 0 && len(out) < n; i -= 2 {
		out = append([]string{msgs[i].Content}, out...)
	}
	return out
}

// PendingCalls returns the tool calls of the last assistant message that
// have no result yet: what the act node runs next.
func PendingCalls(msgs []llm.Message) []llm.ToolCall {
	i := len(msgs) - 1
	for i >= 0 && msgs[i].Role == llm.RoleTool {
		i--
	}
	if i < 0 || msgs[i].Role != llm.RoleAssistant || len(msgs[i].ToolCalls) == 0 {
		return nil
	}
	answered := map[string]bool{}
	for _, m := range msgs[i+1:] {
		answered[m.ToolCallID] = true
	}
	var out []llm.ToolCall
	for _, c := range msgs[i].ToolCalls {
		if !answered[c.ID] {
			out = append(out, c)
		}
	}
	return out
}

// act answers every pending tool call of the model's last message in one
// step. Calls that need no confirmation run first, in order: read tools,
// and calls that fail before anything is asked (an unknown tool, bad
// arguments). Then each write call asks its own question at once, from a
// fan-out branch of its own (act[0], act[1], … in the order of the write
// calls), and the run stops with all of them pending, each with its id.
// Answered by id, in any order and any subset, they run nothing until
// none is pending (LangGraph's one HumanInterrupt per tool call, resumed
// together); then each accepted call runs, one at a time, and each
// rejected one is reported to the model as rejected, the others
// unaffected. The results join the history in the order of the calls.
//
// With a saver, a write call that ran is kept as its branch's result (see
// graph.Map), so a crash before the step's end does not run it again; its
// graph.StepKey names the branch, different for every call.
func (r *react) act(ctx context.Context, st *State) error {
	ctx = tool.WithView(ctx, &st.Tools)
	var writes []confirmCall
	for _, c := range PendingCalls(st.Messages) {
		w, result, err := r.prepare(ctx, c)
		if err != nil {
			return err // an interrupt: the results so far are kept
		}
		if w != nil {
			writes = append(writes, *w)
			continue
		}
		r.record(ctx, st, c, result)
	}
	if len(writes) > 0 {
		var mu sync.Mutex // approved calls run one at a time
		confirm := func(ctx context.Context, w confirmCall) (string, error) {
			ans, err := graph.Ask[tool.ConfirmAnswer](ctx, w.req)
			if err != nil {
				return "", err
			}
			mu.Lock()
			defer mu.Unlock()
			return answer(ctx, w.tool, w.call, w.req, ans)
		}
		results, err := graph.Map(func([]string) []confirmCall { return writes }, confirm,
			func(_ []string, rs []string) ([]string, error) { return rs, nil })(ctx, nil)
		if err != nil {
			return err // the questions: the read calls' results are kept
		}
		for i, w := range writes {
			r.record(ctx, st, w.call, results[i])
		}
	}
	inCallOrder(st.Messages)
	return nil
}

// confirmCall is a write call waiting for a person's confirmation.
type confirmCall struct {
	call llm.ToolCall
	tool tool.Tool
	req  tool.ConfirmRequest
}

// prepare runs call c when it needs no confirmation, and returns its
// result. A call that must be confirmed is returned instead, with its
// request. A bad call and a failing tool are results for the model, not
// errors; only an interrupt is an error.
func (r *react) prepare(ctx context.Context, c llm.ToolCall) (*confirmCall, string, error) {
	t, err := r.Tools.Resolve(*tool.ViewFrom(ctx), c.Name)
	if err != nil {
		return nil, "error: " + err.Error(), nil
	}
	if !r.Policy.NeedsConfirm(t) {
		result, err := run(ctx, t, c, json.RawMessage(c.Arguments))
		return nil, result, err
	}
	req, err := t.ConfirmRequest(ctx, json.RawMessage(c.Arguments))
	if err != nil {
		return nil, "error: " + err.Error(), nil
	}
	return &confirmCall{call: c, tool: t, req: req}, "", nil
}

// record adds the result of call c to the history and streams it.
func (r *react) record(ctx context.Context, st *State, c llm.ToolCall, result string) {
	st.Messages = append(st.Messages, llm.ToolResult(c.ID, result))
	graph.Emit(ctx, graph.KindToolResult, map[string]string{"id": c.ID, "tool": c.Name, "result": result})
}

// inCallOrder puts the tool results that follow the last assistant
// message with tool calls in the order of its calls: act records the
// calls that need no confirmation before the confirmed ones.
func inCallOrder(msgs []llm.Message) {
	i := len(msgs) - 1
	for i >= 0 && msgs[i].Role == llm.RoleTool {
		i--
	}
	if i < 0 || len(msgs[i].ToolCalls) == 0 {
		return
	}
	pos := make(map[string]int, len(msgs[i].ToolCalls))
	for k, c := range msgs[i].ToolCalls {
		pos[c.ID] = k
	}
	slices.SortStableFunc(msgs[i+1:], func(a, b llm.Message) int { return pos[a.ToolCallID] - pos[b.ToolCallID] })
}

// AnswerCall answers an open tool call c, one the model made and a person
// was asked to confirm, and returns the text the model gets back as the
// call's result. It resolves c.Name in the view tool.WithView put in ctx
// (without one, the zero View: core tools only), builds the call's
// tool.ConfirmRequest, and then either returns req.Rejected(ans.Note)
// without calling the tool, or emits a graph.KindToolCall event and calls
// the tool with the checked arguments.
//
// This is what the ReAct loop does once graph.Ask returns the answer; an
// app calls it when the answer arrives another way (a chat message read
// as a yes or a no). An unknown tool, bad arguments and a failing tool
// are results ("error: …") for the model, not errors; only an interrupt
// from the tool (graph.IsInterrupt) is returned as an error.
func AnswerCall(ctx context.Context, reg *tool.Registry, c llm.ToolCall, ans tool.ConfirmAnswer) (string, error) {
	var v tool.View
	if p := tool.ViewFrom(ctx); p != nil {
		v = *p
	}
	t, err := reg.Resolve(v, c.Name)
	if err != nil {
		return "error: " + err.Error(), nil
	}
	req, err := t.ConfirmRequest(ctx, json.RawMessage(c.Arguments))
	if err != nil {
		return "error: " + err.Error(), nil
	}
	return answer(ctx, t, c, req, ans)
}

// answer rejects the confirmed call c of t or runs it, as ans says.
func answer(ctx context.Context, t tool.Tool, c llm.ToolCall, req tool.ConfirmRequest, ans tool.ConfirmAnswer) (string, error) {
	if !ans.Accept {
		return req.Rejected(ans.Note), nil
	}
	return run(ctx, t, c, req.Args)
}

// run emits the call event and calls t with args. A failing tool is a
// result for the model; an interrupt is returned.
func run(ctx context.Context, t tool.Tool, c llm.ToolCall, args json.RawMessage) (string, error) {
	graph.Emit(ctx, graph.KindToolCall, map[string]any{"id": c.ID, "tool": c.Name, "args": args})
	out, err := t.Call(ctx, args)
	if err != nil {
		if graph.IsInterrupt(err) {
			return "", err
		}
		return "error: " + err.Error(), nil
	}
	return out, nil
}

// pause summarises progress and asks whether to go on. The summary is
// made once: it is kept in the state returned with the question, so the
// node's run on resume does not ask the model again. When the run came
// here because the corrections were spent, GiveUp (when set) answers
// instead.
func (r *react) pause(ctx context.Context, st *State) error {
	if left, ok := graph.Left(ctx, r.corrections); ok && left == 0 && r.GiveUp != nil {
		answers := lastAnswers(st.Messages, r.maxCorrections+1)
		_, err := decodeDecision(answers[len(answers)-1])
		st.Answer = orDefault(r.GiveUp(ctx, st, &MalformedError{Answers: answers, Err: err}), "(no answer)")
		st.Messages = append(st.Messages, llm.Assistant(st.Answer))
		graph.Emit(ctx, graph.KindToken, st.Answer)
		return nil
	}
	if st.PauseSummary == "" {
		sum, err := r.summarise(ctx, st)
		if err != nil {
			return err
		}
		st.PauseSummary = sum
		st.Messages = append(st.Messages, llm.Assistant("Progress so far: "+sum))
	}
	ans, err := graph.Ask[PauseAnswer](ctx, PauseRequest{Summary: st.PauseSummary, Rounds: st.Rounds})
	if err != nil {
		return err
	}
	sum := st.PauseSummary
	st.PauseSummary = ""
	if !ans.Continue && !ans.Accept {
		st.Answer = sum
		return nil
	}
	st.Messages = append(st.Messages, llm.User(orDefault(ans.Message, orDefault(ans.Note, "Continue."))))
	return nil
}

func (r *react) summarise(ctx context.Context, st *State) (string, error) {
	request := "You have used your step budget for now. Summarise in a few sentences what you did, what you found, and what is left to do. Answer in plain text, not JSON."
	if r.SummaryRequest != nil {
		request = r.SummaryRequest(st)
	}
	msgs, err := r.messages(ctx, st, llm.User(request))
	if err != nil {
		return "", err
	}
	resp, err := r.ask(ctx, st, msgs, false)
	if err != nil {
		return "", err
	}
	if s := strings.TrimSpace(resp.Message.Content); s != "" {
		return s, nil
	}
	return "", errors.New("react: the model gave an empty progress summary")
}

func orDefault(s, d string) string {
	if strings.TrimSpace(s) == "" {
		return d
	}
	return s
}
