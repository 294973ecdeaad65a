package cabin

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/loomkit/loom/graph"
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

// newStep is step number n (from 1) of a workflow: intent with slots.
func (a *App) newStep(n int, intentID string, slots map[string]string) Step {
	in := a.cat.intents[intentID]
	return Step{
		ID: fmt.Sprintf("s%d", n), Intent: intentID, Label: in.Label,
		Plugin: in.action.Plugin, Action: in.action.ID, Risk: in.action.Risk,
		Status: stepPending, Slots: slots, RequiresConfirmation: in.confirm,
	}
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

// run calls a step's plugin and records the outcome.
func (a *App) run(ctx context.Context, s *State, st *Step) {
	st.Status = stepFailed
	if a.call(ctx, s, st, st.Plugin).Success {
		st.Status = stepDone
	}
}

// call calls plugin with step st's slots and keeps the result in st;
// slots and result fields go to the session's memory.
func (a *App) call(ctx context.Context, s *State, st *Step, plugin string) Result {
	start := time.Now()
	graph.Emit(ctx, graph.KindToolCall, map[string]any{"name": plugin, "arguments": st.Slots})
	res, err := a.plugins.Call(ctx, Call{
		Plugin: plugin, Intent: st.Intent, Action: st.Action, Slots: st.Slots,
		Session: s.Session.ID, User: s.Session.UserID, Vehicle: s.Session.VehicleID,
	})
	if err != nil {
		a.log.WarnContext(ctx, "cabin: plugin failed", "plugin", plugin, "session", s.Session.ID, "err", err)
		res = Result{Success: false, Message: err.Error(), Data: map[string]any{"reason": "unavailable"}}
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
	s.Reply.Latency.Plugins += ms(time.Since(start))
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
