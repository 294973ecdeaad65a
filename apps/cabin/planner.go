package cabin

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/loomkit/loom/contract"
	"github.com/loomkit/loom/intent"
	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/schema"
)

// planInput is what the planner sees of a turn.
type planInput struct {
	// text is the (rewritten) normalized text.
	text    string
	clauses []clauseRoute
	// kind is the clauses' kind: single, sequence or conditional.
	kind  string
	route *intent.Result
}

// plan is the planner's answer: a workflow when accepted.
type plan struct {
	debug      plannerDebug
	workflow   *Workflow
	outOfScope bool // the model said the request is out of scope
}

// clauseStep is an intent found in one clause, with the clause's slots.
type clauseStep struct {
	intent string
	slots  map[string]string
}

// clauseSteps are the clauses that route to a known intent, in order.
func (a *App) clauseSteps(in planInput) []clauseStep {
	var out []clauseStep
	for _, c := range in.clauses {
		if c.Decision != intent.Execute || !a.cat.known(c.Intent) {
			continue
		}
		out = append(out, clauseStep{c.Intent, a.slots.read(c.Intent, c.Text)})
	}
	return out
}

// templatePlan matches the fixed workflows of workflows.yml.
func (a *App) templatePlan(in planInput) (plan, bool) {
	cs := a.clauseSteps(in)
	if len(cs) < 2 {
		return plan{}, false
	}
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.intent
	}
	for _, t := range a.cfg.Workflows.Templates {
		if len(ids) < len(t.Intents) || !slices.Equal(ids[:len(t.Intents)], t.Intents) || !containsAny(in.text, t.Triggers) {
			continue
		}
		wf := &Workflow{Kind: t.Kind, Source: "template:" + t.ID}
		for i, c := range cs {
			st := a.newStep(i+1, c.intent, c.slots)
			if i < len(t.Steps) {
				spec := t.Steps[i]
				for _, d := range spec.DependsOn {
					st.DependsOn = append(st.DependsOn, fmt.Sprintf("s%d", d))
				}
				if cd := spec.Condition; cd != nil {
					st.Condition = &Condition{Step: fmt.Sprintf("s%d", cd.Step), Field: cd.Field, Operator: cd.Operator, Value: cd.Value}
				}
				st.RequiresConfirmation = st.RequiresConfirmation || spec.RequiresConfirmation
			}
			wf.Steps = append(wf.Steps, st)
		}
		return plan{workflow: wf, debug: plannerDebug{Backend: wf.Source, Accepted: true, Kind: wf.Kind, Reason: "template intents and trigger matched"}}, true
	}
	return plan{}, false
}

// containsAny reports whether text holds one of words; no words holds.
func containsAny(text string, words []string) bool {
	if len(words) == 0 {
		return true
	}
	for _, w := range words {
		if strings.Contains(text, intent.Normalize(w)) {
			return true
		}
	}
	return false
}

// heuristicPlan makes a workflow of the clauses' intents in order, with
// the conditions workflows.yml reads into a conditional text.
func (a *App) heuristicPlan(in planInput) plan {
	cs := a.clauseSteps(in)
	if len(cs) < 2 {
		return plan{debug: plannerDebug{Backend: "heuristic", Reason: fmt.Sprintf("%d clause(s) with a known intent; a workflow needs 2", len(cs))}}
	}
	kind := workflowSequence
	if in.kind == workflowConditional {
		kind = workflowConditional
	}
	wf := &Workflow{Kind: kind, Source: "heuristic"}
	for i, c := range cs {
		wf.Steps = append(wf.Steps, a.newStep(i+1, c.intent, c.slots))
	}
	conditioned := false
	for _, h := range a.cfg.Workflows.Conditions {
		if !containsAny(in.text, h.Phrases) {
			continue
		}
		for i := range wf.Steps {
			if wf.Steps[i].Intent != h.Source {
				continue
			}
			for j := i + 1; j < len(wf.Steps); j++ {
				if t := &wf.Steps[j]; t.Intent == h.Target && t.Condition == nil {
					t.DependsOn = append(t.DependsOn, wf.Steps[i].ID)
					t.Condition = &Condition{Step: wf.Steps[i].ID, Field: h.Field, Operator: h.Operator, Value: h.Value}
					t.RequiresConfirmation = t.RequiresConfirmation || h.RequiresConfirmation
					conditioned = true
				}
			}
		}
	}
	reason := fmt.Sprintf("%d clauses in order", len(wf.Steps))
	if kind == workflowConditional && !conditioned {
		// A condition no hint explains: later steps wait for the first to
		// succeed and for a yes.
		for j := 1; j < len(wf.Steps); j++ {
			wf.Steps[j].DependsOn = []string{wf.Steps[0].ID}
			wf.Steps[j].RequiresConfirmation = true
		}
		reason += "; conditional without a known condition: later steps need the first and a confirmation"
	}
	return plan{workflow: wf, debug: plannerDebug{Backend: "heuristic", Accepted: true, Kind: kind, Reason: reason}}
}

//go:embed prompts/planner.md
var plannerPrompt string

// modelPlanJSON is the model planner's answer: the steps, each an intent
// of the catalogue with its slots.
type modelPlanJSON struct {
	Kind  string          `json:"kind" jsonschema:"description=out_of_scope when no intent of the catalogue fits,enum=single,enum=sequence,enum=conditional,enum=out_of_scope"`
	Steps []modelStepJSON `json:"steps,omitempty"`
}

type modelStepJSON struct {
	Intent               string              `json:"intent" jsonschema:"description=an intent id from the catalogue"`
	Slots                map[string]string   `json:"slots,omitempty"`
	DependsOn            []int               `json:"depends_on,omitempty" jsonschema:"description=numbers (from 1) of earlier steps this one needs"`
	Condition            *modelConditionJSON `json:"condition,omitempty"`
	RequiresConfirmation bool                `json:"requires_confirmation,omitempty"`
}

type modelConditionJSON struct {
	Step     int      `json:"step" jsonschema:"description=number (from 1) of the earlier step whose result is tested"`
	Field    string   `json:"field"`
	Operator string   `json:"operator" jsonschema:"enum=equals,enum=not_equals,enum=in"`
	Value    []string `json:"value"`
}

// catalogue describes the intents for the model, each with the tool of
// the registry that carries it out and whether that tool only reads.
func (a *App) catalogue() string {
	var b strings.Builder
	for _, id := range a.cat.ids {
		in := a.cat.intents[id]
		f := a.cfg.Forms.Forms[id]
		fmt.Fprintf(&b, "- %s: %s (%s)", id, in.Label, in.Description)
		if len(f.Required) > 0 {
			fmt.Fprintf(&b, "; required slots: %s", strings.Join(f.Required, ", "))
		}
		if len(f.Optional) > 0 {
			fmt.Fprintf(&b, "; optional slots: %s", strings.Join(f.Optional, ", "))
		}
		if t, err := a.tool(in.action.Plugin); err == nil {
			fmt.Fprintf(&b, "; tool %s (%s)", t.Name(), t.Kind())
		}
		b.WriteByte('\n')
	}
	for _, name := range slices.Sorted(maps.Keys(a.cfg.Forms.Slots)) {
		if vals := a.cfg.Forms.Slots[name].Values; len(vals) > 0 {
			fmt.Fprintf(&b, "slot %s takes one of: %s\n", name, strings.Join(slices.Sorted(maps.Keys(vals)), ", "))
		}
	}
	b.WriteString("result field order_status is one of: pending_payment, pending_shipment, shipped, delivered, cancelled\n")
	return b.String()
}

// errPlanRejected is a model plan that fails the catalogue check.
var errPlanRejected = errors.New("plan does not fit the catalogue")

// modelPlan asks the model for a workflow, decoded through contract and
// checked against the catalogue; a plan that does not fit goes back to
// the model once with the problems.
func (a *App) modelPlan(ctx context.Context, in planInput) (plan, error) {
	sch, err := schema.For[modelPlanJSON]()
	if err != nil {
		return plan{}, err
	}
	msgs := []llm.Message{
		llm.System(plannerPrompt + "\n\nIntent catalogue:\n" + a.catalogue() + "\nAnswer with one JSON object in <DECISION></DECISION>, in this format:\n" + sch.Format()),
		llm.User(in.text),
	}
	ask := contract.Chat(a.model, &msgs, llm.WithTemperature(0), llm.WithMaxTokens(800))
	for attempt := 1; ; attempt++ {
		mp, err := contract.Ask[modelPlanJSON](ctx, ask, contract.WithRetries(1), contract.WithLogger(a.log))
		if err != nil {
			return plan{}, fmt.Errorf("model plan: %w", err)
		}
		problems := a.checkModelPlan(mp)
		if len(problems) == 0 {
			return a.modelWorkflow(in, mp), nil
		}
		if attempt == 2 {
			return plan{}, fmt.Errorf("model plan: %w: %s", errPlanRejected, strings.Join(problems, "; "))
		}
		msgs = append(msgs, llm.User("The plan does not fit the catalogue: "+strings.Join(problems, "; ")+". Answer again with intent ids from the catalogue only."))
	}
}

// checkModelPlan lists what in a model's plan does not fit the catalogue.
func (a *App) checkModelPlan(mp modelPlanJSON) []string {
	var problems []string
	if mp.Kind != "out_of_scope" && len(mp.Steps) == 0 {
		problems = append(problems, "no steps")
	}
	for i, st := range mp.Steps {
		n := i + 1
		if !a.cat.known(st.Intent) {
			problems = append(problems, fmt.Sprintf("step %d: unknown intent %q", n, st.Intent))
		}
		for _, d := range st.DependsOn {
			if d < 1 || d >= n {
				problems = append(problems, fmt.Sprintf("step %d: depends_on %d is not an earlier step", n, d))
			}
		}
		if c := st.Condition; c != nil && (c.Step < 1 || c.Step >= n || len(c.Value) == 0) {
			problems = append(problems, fmt.Sprintf("step %d: condition must test an earlier step against a value", n))
		}
	}
	return problems
}

// modelWorkflow turns a checked model plan into a workflow: the model's
// slots, normalized, over the slots read from the text.
func (a *App) modelWorkflow(in planInput, mp modelPlanJSON) plan {
	if mp.Kind == "out_of_scope" {
		return plan{outOfScope: true, debug: plannerDebug{Backend: "model", Kind: mp.Kind, Reason: "the model found no intent for the request"}}
	}
	kind := mp.Kind
	if kind == "" || (kind == workflowSingle && len(mp.Steps) > 1) {
		kind = workflowSequence
	}
	wf := &Workflow{Kind: kind, Source: "model"}
	for i, ms := range mp.Steps {
		slots := a.slots.read(ms.Intent, in.text)
		maps.Copy(slots, a.slots.clean(ms.Slots))
		st := a.newStep(i+1, ms.Intent, slots)
		for _, d := range ms.DependsOn {
			st.DependsOn = append(st.DependsOn, fmt.Sprintf("s%d", d))
		}
		if c := ms.Condition; c != nil {
			st.Condition = &Condition{Step: fmt.Sprintf("s%d", c.Step), Field: c.Field, Operator: c.Operator, Value: c.Value}
			if !slices.Contains(st.DependsOn, st.Condition.Step) {
				st.DependsOn = append(st.DependsOn, st.Condition.Step)
			}
		}
		st.RequiresConfirmation = st.RequiresConfirmation || ms.RequiresConfirmation
		wf.Steps = append(wf.Steps, st)
	}
	return plan{workflow: wf, debug: plannerDebug{Backend: "model", Accepted: true, Kind: kind, Reason: fmt.Sprintf("%d step(s) from the model", len(wf.Steps))}}
}
