package cabin

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/tool"
)

// step returns the step called id, or nil.
func (wf *Workflow) step(id string) *Step {
	for i := range wf.Steps {
		if wf.Steps[i].ID == id {
			return &wf.Steps[i]
		}
	}
	return nil
}

// newStep is step number n (from 1) of a workflow: intent with slots. It
// asks for a yes first when the tool policy says its tool does.
func (a *App) newStep(n int, intentID string, slots map[string]string) Step {
	in := a.cat.intents[intentID]
	return Step{
		ID: fmt.Sprintf("s%d", n), Intent: intentID, Label: in.Label,
		Plugin: in.action.Plugin, Action: in.action.ID, Risk: in.action.Risk,
		Status: stepPending, Slots: slots, RequiresConfirmation: a.asks(in.action.Plugin),
	}
}

// tool returns the tool that carries out plugin.
func (a *App) tool(plugin string) (tool.Tool, error) {
	t, _, ok := a.tools.Lookup(toolName(plugin))
	if !ok {
		return tool.Tool{}, fmt.Errorf("call %s: %w %s", plugin, tool.ErrUnknown, toolName(plugin))
	}
	return t, nil
}

// asks reports whether the tool policy asks for a yes before the tool
// of plugin runs.
func (a *App) asks(plugin string) bool {
	t, err := a.tool(plugin)
	return err == nil && a.policy.NeedsConfirm(t)
}

// stepArgs are the arguments of step st's tool, on behalf of the session.
func stepArgs(s *State, st *Step) Args {
	return Args{Intent: st.Intent, Action: st.Action, Slots: st.Slots, Session: s.Session.ID, User: s.Session.UserID, Vehicle: s.Session.VehicleID}
}

// confirmRequest is the request to confirm step st's call, as the tool
// package makes it: the tool, its checked arguments, and for summary the
// question the user is asked.
func (a *App) confirmRequest(ctx context.Context, s *State, st *Step) (tool.ConfirmRequest, error) {
	t, err := a.tool(st.Plugin)
	if err != nil {
		return tool.ConfirmRequest{}, err
	}
	req, err := t.ConfirmRequest(ctx, stepArgs(s, st).json())
	if err != nil {
		return tool.ConfirmRequest{}, err
	}
	req.Summary = a.confirmQuestion(s.Session.Workflow, st)
	return req, nil
}

// holds evaluates a condition on the result of its source step. A source
// without a result fails every condition.
func (wf *Workflow) holds(c *Condition) bool {
	src := wf.step(c.Step)
	if src == nil || src.Result == nil || len(c.Value) == 0 {
		return false
	}
	v := formatValue(src.Result.Data[c.Field])
	switch c.Operator {
	case opEquals:
		return v == c.Value[0]
	case opNotEquals:
		return v != c.Value[0]
	case opIn:
		return slices.Contains(c.Value, v)
	}
	return false
}

// blocked reports whether a step cannot run because a step it depends on
// did not succeed.
func (wf *Workflow) blocked(st *Step) bool {
	for _, id := range st.DependsOn {
		if dep := wf.step(id); dep == nil || dep.Status != stepDone {
			return true
		}
	}
	return false
}

// sharedSlots fills the slots of step i that its form uses but it lacks
// from the steps before it, latest first: "查订单A123,如果没发货就取消"
// cancels A123.
func (a *App) sharedSlots(wf *Workflow, i int) {
	st := &wf.Steps[i]
	if st.Slots == nil {
		st.Slots = map[string]string{}
	}
	for _, name := range a.slots.names(st.Intent) {
		if st.Slots[name] != "" {
			continue
		}
		for j := i - 1; j >= 0; j-- {
			if v := wf.Steps[j].Slots[name]; v != "" {
				st.Slots[name] = v
				break
			}
		}
	}
}

// run calls a step's tool and records the outcome.
func (a *App) run(ctx context.Context, s *State, st *Step) {
	st.Status = stepFailed
	if a.call(ctx, s, st, st.Plugin).Success {
		st.Status = stepDone
	}
}

// call calls the tool of plugin with step st's slots and keeps the
// result in st; slots and result fields go to the session's memory.
func (a *App) call(ctx context.Context, s *State, st *Step, plugin string) Result {
	start := time.Now()
	graph.Emit(ctx, graph.KindToolCall, map[string]any{"name": plugin, "arguments": st.Slots})
	t, err := a.tool(plugin)
	var res Result
	if err == nil {
		res, err = callTool(ctx, t, stepArgs(s, st))
	}
	if err != nil {
		a.log.WarnContext(ctx, "cabin: tool failed", "plugin", plugin, "session", s.Session.ID, "err", err)
		res = unavailable(err)
	}
	graph.Emit(ctx, graph.KindToolResult, map[string]any{"name": plugin, "result": res})
	st.Result = &res
	mem := s.Session.Memory
	if mem == nil {
		mem = map[string]string{}
	}
	maps.Copy(mem, st.Slots)
	for k, v := range res.Data {
		if k != "reason" {
			mem[k] = formatValue(v)
		}
	}
	s.Session.Memory = mem
	s.Reply.Latency.Tools += ms(time.Since(start))
	return res
}

// templateVars are the names a step's replies may use: the results of the
// steps it depends on and of its condition's source, under its own.
func (a *App) templateVars(wf *Workflow) func(*Step) map[string]string {
	return func(st *Step) map[string]string {
		extra := map[string]string{}
		deps := slices.Clone(st.DependsOn)
		if st.Condition != nil {
			deps = append(deps, st.Condition.Step)
		}
		for _, id := range deps {
			if d := wf.step(id); d != nil {
				maps.Copy(extra, a.replies.stepVars(d, nil))
			}
		}
		return a.replies.stepVars(st, extra)
	}
}
