package schedule

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/loomkit/loom/apps/internal/decision"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/llm"
)

// This file is the agent with a model: intent, plan and summary.

//go:embed prompts/*.md
var prompts embed.FS

// prompt returns an embedded prompt; a missing one is a programming error.
func prompt(name string) string {
	b, err := prompts.ReadFile("prompts/" + name + ".md")
	if err != nil {
		panic(fmt.Sprintf("schedule: prompt %s: %v", name, err))
	}
	return strings.TrimSpace(string(b))
}

// chatDecision is Chat's contract.
type chatDecision struct {
	Intent string `json:"intent" jsonschema:"enum=chat,enum=task"`
	Reply  string `json:"reply,omitempty"`
}

// askJSON asks m for a JSON decision of type T, told in Chinese
// (decision.Ask).
func askJSON[T any](ctx context.Context, m llm.Model, system, user string, opts ...llm.Option) (T, error) {
	return decision.Ask[T](ctx, m, system, user, true, opts...)
}

// briefing describes the schedule for the model's chat and plan calls.
func briefing(sch *Schedule) string {
	r := Analyze(sch, ScanOptions{Limit: 1})
	var pending []string
	for _, it := range sch.Pending() {
		pending = append(pending, fmt.Sprintf("%s（%d节）", it.Name, it.Slots))
	}
	var classes []string
	for _, c := range sch.Classes {
		line := fmt.Sprintf("%s #%d：%s，难度 %d，偏好 %s，策略 %s", c.Name, c.ID, c.Profile.Subject, c.Profile.Difficulty, c.Profile.Prefer, c.Strategy)
		if len(c.ExcludedDays) > 0 {
			line += "，屏蔽 " + dayList(c.ExcludedDays)
		}
		classes = append(classes, line)
	}
	return fmt.Sprintf("窗口：从%s起 %d 天，每天 %d 节，每日任务上限 %d 节。\n任务类：%s\n待安排 %d 项：%s\n健康度 %.1f；%s",
		sch.DayName(0), sch.Window.Days, SlotsPerDay, sch.Window.DailyMax, strings.Join(classes, ";"),
		len(pending), strings.Join(pending, "、"), r.Health, r.Verdict)
}

// intent tells a task from a chat, and answers a chat.
func (a *Agent) intent(ctx context.Context, s *State, sch *Schedule) (task bool, reply string) {
	if a.cfg.Model != nil {
		d, err := askJSON[chatDecision](ctx, a.cfg.Model, prompt("chat"),
			"日程概况：\n"+briefing(sch)+"\n\n用户消息："+s.Message, llm.WithTemperature(0.2), llm.WithMaxTokens(600))
		if err == nil {
			return d.Intent == "task", cmpText(d.Reply, chatReply(sch))
		}
		a.log.WarnContext(ctx, "schedule: model intent failed; using keywords", "err", err)
	}
	if keywordIntent(s.Message) {
		return true, ""
	}
	return false, chatReply(sch)
}

// modelPlan is Plan with a model: a quick assessment, then for a complex
// task a deeper plan with thinking on.
func (a *Agent) modelPlan(ctx context.Context, s *State, sch *Schedule) (planDecision, error) {
	user := fmt.Sprintf("用户请求：%s\n\n日程概况：\n%s", s.Plan.Goal, briefing(sch))
	if len(s.Notes) > 0 {
		user += "\n\n之前的沟通：\n" + strings.Join(s.Notes, "\n")
	}
	d, err := askJSON[planDecision](ctx, a.cfg.Model, prompt("plan"), user,
		llm.WithTemperature(0.2), llm.WithMaxTokens(1600), llm.WithThinking(false))
	if err != nil {
		return d, fmt.Errorf("plan: %w", err)
	}
	if d.Action == planDone && (d.Complexity == "complex" || d.NeedThinking) {
		graph.Emit(ctx, graph.KindStatus, "任务较复杂，深入规划")
		deep, err := askJSON[planDecision](ctx, a.cfg.Model, prompt("plan")+"\n\n"+prompt("plan_deep"), user,
			llm.WithMaxTokens(3200), llm.WithThinking(true))
		if err == nil && deep.Action == planDone && len(deep.Steps) > 0 {
			deep.Complexity = d.Complexity
			d = deep
		} else if err != nil {
			a.log.WarnContext(ctx, "schedule: deep plan failed; keeping the quick plan", "err", err)
		}
	}
	switch {
	case d.Action == planDone && len(d.Steps) == 0:
		return d, fmt.Errorf("plan: plan_done without plan_steps")
	case d.Action == planAskUser && strings.TrimSpace(d.Question) == "":
		return d, fmt.Errorf("plan: ask_user without a question")
	}
	d.Steps = slices.DeleteFunc(d.Steps, func(st stepSpec) bool { return strings.TrimSpace(st.Content) == "" })
	return d, nil
}

// modelSummary streams the model's summary as token events and returns it.
func (a *Agent) modelSummary(ctx context.Context, f facts) (string, error) {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return "", err
	}
	msgs := []llm.Message{llm.System(prompt("deliver")), llm.User("执行记录：\n" + string(b))}
	var text strings.Builder
	for c, err := range a.cfg.Model.Stream(ctx, msgs, llm.WithTemperature(0.5), llm.WithMaxTokens(800)) {
		if err != nil {
			return "", fmt.Errorf("summary: %w", err)
		}
		if c.Reasoning != "" {
			graph.Emit(ctx, graph.KindReasoning, c.Reasoning)
		}
		if c.Content != "" {
			if text.Len() == 0 {
				graph.Emit(ctx, graph.KindToken, "\n")
			}
			graph.Emit(ctx, graph.KindToken, c.Content)
			text.WriteString(c.Content)
		}
	}
	return strings.TrimSpace(text.String()), nil
}
