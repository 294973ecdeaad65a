package schedule

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/llm"
)

// This file is the agent without a model: keyword intent, a plan from the
// pending items, and a chooser that drives the ReAct loop by taking the
// optimiser's best candidate.

// Plan actions: what a plan decision may say to do.
const (
	planContinue = "continue"
	planAskUser  = "ask_user"
	planDone     = "plan_done"
)

// stepSpec is a plan step as the model writes it.
type stepSpec struct {
	Content  string `json:"content"`
	DoneWhen string `json:"done_when,omitempty"`
}

// planDecision is the plan step's decision, from the model or the
// heuristic.
type planDecision struct {
	Speak        string     `json:"speak,omitempty"`
	Action       string     `json:"action" jsonschema:"enum=continue,enum=ask_user,enum=plan_done"`
	Reason       string     `json:"reason,omitempty"`
	Complexity   string     `json:"complexity,omitempty" jsonschema:"enum=simple,enum=moderate,enum=complex"`
	NeedThinking bool       `json:"need_thinking,omitempty"`
	Question     string     `json:"question,omitempty"`
	Steps        []stepSpec `json:"plan_steps,omitempty"`
}

func (d planDecision) steps() []Step {
	out := make([]Step, len(d.Steps))
	for i, s := range d.Steps {
		out[i] = Step{Content: s.Content, DoneWhen: s.DoneWhen}
	}
	return out
}

var taskWords = []string{"安排", "排", "复习", "优化", "调整", "计划", "规划", "挪", "移", "换", "放", "任务", "日程", "课表", "空闲", "时间",
	"schedule", "plan", "arrange", "optimi", "move", "swap", "place", "task", "free"}

// keywordIntent tells a task from a chat by its words.
func keywordIntent(msg string) bool {
	m := strings.ToLower(msg)
	return slices.ContainsFunc(taskWords, func(w string) bool { return strings.Contains(m, w) })
}

// chatReply is the reply to a chat without a model.
func chatReply(sch *Schedule) string {
	return fmt.Sprintf("你好！我是排程助手：把待安排的任务排进你的课表，再按健康度（节奏、松紧、学科画像、可行性）主动微调。"+
		"现在有 %d 个任务待安排，健康度 %.1f。试试说「帮我安排下周的复习」。", len(sch.Pending()), Measure(sch).Health())
}

// heuristicPlan plans from the pending items: place them (the rough
// schedule), then optimise until the optimiser stagnates. Days the person
// named in answers or rejections are kept free.
func heuristicPlan(sch *Schedule, s *State) planDecision {
	avoid := constraints(s)
	d := planDecision{Action: planDone, Complexity: "simple"}
	if pending := sch.Pending(); len(pending) > 0 {
		count := map[int]int{}
		var order []int
		slots := 0
		for _, it := range pending {
			if count[it.Class] == 0 {
				order = append(order, it.Class)
			}
			count[it.Class]++
			slots += it.Slots
		}
		var kinds []string
		for _, c := range order {
			name := "其他"
			if cl := sch.Class(c); cl != nil {
				name = cl.Name
			}
			kinds = append(kinds, fmt.Sprintf("%s×%d", name, count[c]))
		}
		content := fmt.Sprintf(roughMark+"把 %d 个待安排任务（%s，共 %d 节）放进 %d 天的窗口，遵守锁定课程和屏蔽日，每天任务不超过 %d 节并分散同类任务",
			len(pending), strings.Join(kinds, "、"), slots, sch.Window.Days, sch.Window.DailyMax)
		if len(avoid) > 0 {
			content += "；" + avoidMark + avoidList(avoid)
		}
		d.Steps = append(d.Steps, stepSpec{Content: content, DoneWhen: "每个待安排任务都有了位置，或者确认已没有可行的位置"})
		d.Complexity = "moderate"
		if len(pending) > 12 {
			d.Complexity = "complex"
		}
	}
	content := "主动优化：诊断节奏、松紧、学科画像和可行性，从优化器给出的移动或交换方案里挑选，逐项请你确认"
	if n := len(blocked(sch, avoid)); n > 0 {
		content = fmt.Sprintf("把 %d 个落在你要空出的时间（%s）里的任务挪开，再", n, avoidList(avoid)) + content
	}
	d.Steps = append(d.Steps, stepSpec{Content: content, DoneWhen: "优化器停滞：没有方案能再提升健康度"})
	return d
}

// roughMark starts the plan step that places the pending items.
const roughMark = "粗排："

// stepDone starts the result of a step the optimiser finished.
const stepDone = "本步完成。"

// avoidMark starts the list of times to keep free in plan steps and step
// instructions.
const avoidMark = "避开："

// avoidIn returns the times listed after avoidMark in text.
func avoidIn(text string) []Avoid {
	var avoid []Avoid
	for _, part := range strings.Split(text, avoidMark)[1:] {
		avoid = append(avoid, parseAvoids(strings.SplitN(part, "\n", 2)[0])...)
	}
	return normalizeAvoids(avoid)
}

// constraints returns the times the person wants kept free: the task's
// own (State.Avoid: the owner's saved ones, with what the request and the
// answers while planning said) and, since the plan started, what answers
// to ask_user and reasons for rejected writes said. They hold for every
// later step.
func constraints(s *State) []Avoid {
	avoid := normalizeAvoids(s.Avoid)
	for _, c := range turnCalls(s.Exec.Messages, s.MsgBase) {
		switch {
		case c.name == toolAskUser:
			avoid = readAnswer(c.result).apply(avoid)
		case isWrite(c.name) && c.rejected():
			avoid = readAnswer(c.reason()).apply(avoid)
		}
	}
	return avoid
}

// blocked returns the placed items of sch on a time avoid keeps free.
func blocked(sch *Schedule, avoid []Avoid) []Item {
	if len(avoid) == 0 {
		return nil
	}
	sc := newScoring("", avoid)
	var out []Item
	for _, it := range sch.Items {
		if it.Placed() && sc.blocks(sch.Window, it.Day, it.Start, it.Slots) {
			out = append(out, it)
		}
	}
	return out
}

// complexityNames say a plan's complexity in the plan card.
var complexityNames = map[string]string{"simple": "比较简单", "moderate": "难度中等", "complex": "比较复杂"}

// planCard is the plan as the person confirms it, with the times kept
// free.
func planCard(p Plan, avoid []Avoid) string {
	var b strings.Builder
	if len(avoid) > 0 {
		fmt.Fprintf(&b, "你的要求：%s 不排任务（之后的对话也会记住；说「%s可以了」或「清除限制」即可取消）。\n", avoidList(avoid), weekdayName(avoid[0].Day))
	}
	fmt.Fprintf(&b, "计划（共 %d 步", len(p.Steps))
	if c := complexityNames[p.Complexity]; c != "" {
		b.WriteString("，" + c)
	}
	b.WriteString("）：")
	for i, st := range p.Steps {
		fmt.Fprintf(&b, "\n%d. %s", i+1, st.Content)
		if st.DoneWhen != "" {
			fmt.Fprintf(&b, "\n   完成标准：%s", st.DoneWhen)
		}
	}
	return b.String()
}

// planText is the plan pinned for the model.
func planText(p Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "目标：%s\n计划：", p.Goal)
	for i, st := range p.Steps {
		mark := " "
		if st.Done {
			mark = "✓"
		}
		fmt.Fprintf(&b, "\n[%s] %d. %s（完成标准：%s）", mark, i+1, st.Content, st.DoneWhen)
	}
	return b.String()
}

// executionContext is the current step pinned for the model.
func executionContext(s *State, maxRounds int) string {
	st := s.Plan.Steps[s.Plan.Current]
	out := fmt.Sprintf("当前：第 %d/%d 步：%s\n完成标准：%s\n轮次：已用 %d / %d",
		s.Plan.Current+1, len(s.Plan.Steps), st.Content, st.DoneWhen, s.Exec.Rounds-s.RoundBase, maxRounds)
	if avoid := constraints(s); len(avoid) > 0 {
		days, times := splitAvoids(avoid)
		args, _ := json.Marshal(healthArgs{Avoid: days, Times: times})
		out += "\n用户要求" + avoidMark + avoidList(avoid) + "（analyze_health 与 apply_candidate 的参数：" + string(args) + "）"
	}
	return out
}

// facts is what Deliver sums up.
type facts struct {
	Goal         string   `json:"goal"`
	Outcome      string   `json:"outcome"`
	Steps        []Step   `json:"steps"`
	Applied      []string `json:"applied"`
	Rejected     int      `json:"rejected"`
	HealthBefore float64  `json:"health_before"`
	HealthAfter  float64  `json:"health_after"`
	Metrics      Metrics  `json:"metrics"`
	Pending      int      `json:"pending"`
	Issues       []string `json:"issues,omitempty"`
	Verdict      string   `json:"verdict"`
}

func deliveryFacts(s *State, sch *Schedule) facts {
	days, times := splitAvoids(constraints(s))
	r := Analyze(sch, ScanOptions{Limit: 1, Avoid: days, Times: times})
	f := facts{Goal: s.Plan.Goal, Outcome: s.Outcome, Steps: s.Plan.Steps, HealthBefore: s.HealthAt, HealthAfter: r.Health,
		Metrics: r.Metrics, Pending: r.Pending, Issues: r.Issues, Verdict: r.Verdict}
	for _, c := range turnCalls(s.Exec.Messages, s.MsgBase) {
		switch {
		case !isWrite(c.name) || c.result == "":
		case c.rejected():
			f.Rejected++
		case !strings.HasPrefix(c.result, "error"):
			f.Applied = append(f.Applied, c.result)
		}
	}
	return f
}

func mechanicalSummary(f facts) string {
	var b strings.Builder
	switch f.Outcome {
	case outcomeAbort:
		fmt.Fprintf(&b, "已中止：%s\n", f.Goal)
	case outcomeBudget:
		fmt.Fprintf(&b, "轮次预算用完，先交付当前进度：%s\n", f.Goal)
	default:
		fmt.Fprintf(&b, "已完成：%s\n", f.Goal)
	}
	// A step's result says what the mark does not: not "本步完成", not
	// what an earlier step said, not a change listed below it, not the
	// verdict that closes the summary.
	said := map[string]bool{"": true, f.Verdict: true}
	for _, a := range f.Applied {
		said[a] = true
	}
	for i, st := range f.Steps {
		mark := "✗"
		if st.Done {
			mark = "✓"
		}
		fmt.Fprintf(&b, "%s %d. %s", mark, i+1, clipRunes(st.Content, 60))
		if r := strings.TrimSpace(strings.TrimPrefix(st.Result, stepDone)); !said[r] {
			fmt.Fprintf(&b, " — %s", clipRunes(r, 80))
			said[r] = true
		}
		b.WriteString("\n")
	}
	if len(f.Applied) == 0 {
		b.WriteString("日程没有改动。\n")
	} else {
		fmt.Fprintf(&b, "已执行 %d 项修改：\n", len(f.Applied))
		for _, a := range f.Applied {
			fmt.Fprintf(&b, "- %s\n", a)
		}
	}
	if f.Rejected > 0 {
		fmt.Fprintf(&b, "你拒绝了 %d 个方案。\n", f.Rejected)
	}
	m := f.Metrics
	fmt.Fprintf(&b, "健康度 %.1f → %.1f（节奏 %.2f，松紧 %.2f，画像 %.2f，可行性 %.2f）", f.HealthBefore, f.HealthAfter, m.Rhythm, m.Tightness, m.Profile, m.Feasibility)
	if f.Verdict != "" {
		b.WriteString("\n" + f.Verdict)
	}
	if len(f.Issues) > 0 {
		fmt.Fprintf(&b, "\n遗留问题：%s", strings.Join(f.Issues, "；"))
	}
	return b.String()
}

func isWrite(name string) bool {
	switch name {
	case toolPlace, toolMove, toolSwap, toolBatchMove, toolUnplace, toolUpsertClass, toolApplyCandidate:
		return true
	}
	return false
}

// call is a tool call of the history with its result ("" while open).
type call struct {
	name   string
	args   string
	result string
}

// rejected reports whether the person rejected the call (the result
// tool.ConfirmRequest.Rejected writes).
func (c call) rejected() bool { return strings.HasPrefix(c.result, "The user rejected ") }

// reason returns the reason the person gave with a rejection.
func (c call) reason() string {
	_, r, _ := strings.Cut(c.result, "Reason: ")
	return r
}

// turnCalls returns the tool calls of msgs[from:], in order, with their
// results.
func turnCalls(msgs []llm.Message, from int) []call {
	var out []call
	index := map[string]int{}
	for _, m := range msgs[min(from, len(msgs)):] {
		for _, c := range m.ToolCalls {
			index[c.ID] = len(out)
			out = append(out, call{name: c.Name, args: c.Arguments})
		}
		if m.Role == llm.RoleTool {
			if i, ok := index[m.ToolCallID]; ok {
				out[i].result = m.Content
			}
		}
	}
	return out
}

// chooser is the Execute model when no language model is configured: it
// reads the turn so far and takes the next step of a fixed procedure —
// look at the overview, run analyze_health, apply the best candidate not
// yet rejected, ask which days to avoid after rejections, and finish when
// the optimiser stagnates. It is an llm.Model so that the ReAct loop, with
// its confirm cards and events, runs the same with and without a model.
type chooser struct{ a *Agent }

var _ llm.Model = (*chooser)(nil)

// maxApplied bounds the candidates the chooser applies in one turn.
const maxApplied = 8

// Stream implements llm.Model: the decision, as the chunks of one answer.
func (c *chooser) Stream(ctx context.Context, msgs []llm.Message, opts ...llm.Option) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		resp, err := c.Generate(ctx, msgs, opts...)
		if err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		for _, ch := range llm.Chunks(resp) {
			if !yield(ch, nil) {
				return
			}
		}
	}
}

// Generate implements llm.Model: the next decision of the procedure, or a
// progress summary when no tools are offered (the pause at the budget).
func (c *chooser) Generate(ctx context.Context, msgs []llm.Message, opts ...llm.Option) (*llm.Response, error) {
	turn := 0
	for i, m := range msgs {
		if m.Role == llm.RoleUser {
			turn = i
		}
	}
	calls := turnCalls(msgs, turn)
	if len(llm.NewOptions(opts...).Tools) == 0 { // the progress summary of a pause
		return &llm.Response{Message: llm.Assistant(fmt.Sprintf("本步已调用 %d 次工具。", len(calls))), FinishReason: llm.FinishStop}, nil
	}
	sch, err := c.a.load(ctx)
	if err != nil {
		return nil, fmt.Errorf("chooser: %w", err)
	}
	d, why := decide(sch, msgs[turn].Content, calls)
	b, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("chooser: %w", err)
	}
	return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "<DECISION>" + string(b) + "</DECISION>", Reasoning: why}, FinishReason: llm.FinishStop}, nil
}

// decide is the chooser's procedure. instruction is the turn's user
// message; calls are the turn's tool calls so far.
func decide(sch *Schedule, instruction string, calls []call) (agent.Decision, string) {
	callTool := func(name string, args any, why string) (agent.Decision, string) {
		b, _ := json.Marshal(args)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return agent.Decision{Action: "call_tool", Tool: name, Args: m, Thought: why}, why
	}
	finish := func(answer, why string) (agent.Decision, string) {
		return agent.Decision{Action: "finish", Answer: answer, Thought: why}, why
	}
	if op, args, ok := editCall(instruction, sch); ok { // a manual edit: its move, confirmed on a card
		for _, c := range calls {
			switch {
			case c.name != op || c.result == "":
			case c.rejected():
				return finish(outcomeAbort+"：你没有确认这次调整，日程没有改动。\n", "用户没有确认这次移动。")
			case strings.HasPrefix(c.result, "error"):
				return finish(outcomeAbort+"：这次调整没能完成（那个时间已经被占用或日程刚刚变了），日程没有改动。\n", "移动失败。")
			default:
				return finish(stepDone+c.result+"\n", "调整完成。")
			}
		}
		return callTool(op, args, "按用户的要求手动调整这一个任务。")
	}
	if len(calls) == 0 {
		return callTool(toolOverview, noArgs{}, "先看一眼整个窗口的概况。")
	}
	// Times to keep free: named in the step, in rejections, in answers.
	avoid := avoidIn(instruction)
	lastScan, lastChange, applied, asked := -1, -1, 0, false
	for i, c := range calls {
		switch {
		case c.name == toolAnalyzeHealth:
			lastScan = i
		case c.name == toolAskUser:
			asked = true
			avoid = readAnswer(c.result).apply(avoid)
		case isWrite(c.name) && c.rejected():
			avoid = readAnswer(c.reason()).apply(avoid)
		case isWrite(c.name):
			lastChange = i
			if !strings.HasPrefix(c.result, "error") {
				applied++
			}
		}
	}
	avoid = normalizeAvoids(avoid)
	days, times := splitAvoids(avoid)
	var scanned healthArgs
	if lastScan >= 0 {
		_ = json.Unmarshal([]byte(calls[lastScan].args), &scanned)
	}
	if lastScan < 0 || lastChange > lastScan || !slices.Equal(joinAvoids(scanned.Avoid, scanned.Times), avoid) {
		why := "诊断当前日程，拿到后端候选。"
		if len(avoid) > 0 {
			why = "按要求避开" + avoidList(avoid) + "，重新诊断。"
		}
		return callTool(toolAnalyzeHealth, healthArgs{Avoid: days, Times: times}, why)
	}
	r := Analyze(sch, ScanOptions{Avoid: days, Times: times})
	if strings.Contains(instruction, roughMark) && applied > 0 && r.Pending == 0 {
		// The rough step is done when everything has a place; improving
		// it is the next step's work, and its text.
		return finish(fmt.Sprintf("%s全部任务都有了位置，健康度 %.1f。\n", stepDone, r.Health), "待安排的任务都放好了，这一步完成。")
	}
	if applied >= maxApplied {
		return finish(fmt.Sprintf("本步已应用 %d 个候选。%s\n", applied, r.Verdict), "本步改动已经不少，先收尾。")
	}
	rejected := map[int]bool{}
	for _, c := range calls[lastScan+1:] {
		var a applyArgs
		if c.name == toolApplyCandidate && c.rejected() && json.Unmarshal([]byte(c.args), &a) == nil && a.Revision == r.Revision {
			rejected[a.Index] = true
		}
	}
	for _, cand := range r.Candidates {
		if !rejected[cand.Index] {
			why := fmt.Sprintf("候选 #%d 增益 +%.2f（%s），是未被拒绝的候选中最好的。", cand.Index, cand.Gain, cand.Summary)
			return callTool(toolApplyCandidate, applyArgs{Index: cand.Index, Revision: r.Revision, Avoid: days, Times: times}, why)
		}
	}
	switch {
	case len(rejected) > 0 && !asked:
		return callTool(toolAskUser, askArgs{Question: "这几个方案你都不满意。哪几天不方便安排？（例如「周三不行」；说「算了」就保持现状）"},
			"候选都被拒绝了，问问用户的约束。")
	case len(rejected) > 0:
		return finish(outcomeAbort+"：用户拒绝了所有候选，保持当前安排。\n", "没有可接受的候选，结束。")
	}
	return finish(stepDone+r.Verdict+"\n", "优化器已停滞，这一步完成。")
}
