package cabin

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"

	"github.com/loomkit/loom/intent"
	"github.com/loomkit/loom/tool"
)

// requiredTemplates are the keys responses.yml must define under templates.
var requiredTemplates = []string{
	"done", "failed", "summary", "summary_plain", "summary_separator", "confirm", "confirm_retry", "confirm_cancelled",
	"step_skipped", "slot_retry", "clarify", "clarify_or", "reject", "fallback", "no_session",
	"task_stopped", "pending_slot", "pending_confirmation", "ack", "ack_intent",
}

// Slot types.
const (
	slotText   = "text"
	slotNumber = "number"
	slotEnum   = "enum"
	slotBool   = "bool"
)

// Condition operators.
const (
	opEquals    = "equals"
	opNotEquals = "not_equals"
	opIn        = "in"
)

// maxToolName is the longest name a tool may have.
const maxToolName = 64

var (
	riskLevels = []string{"low", "medium", "high"}
	operators  = []string{opEquals, opNotEquals, opIn}
	slotTypes  = []string{slotText, slotNumber, slotEnum, slotBool}
)

// problems collects configuration errors with their lines.
type problems struct {
	c    *Config
	errs []error
}

// add records a problem at the node of file at path.
func (p *problems) add(file string, path []any, format string, args ...any) {
	p.errs = append(p.errs, &configError{File: file, Line: p.c.line(file, path...), Reason: fmt.Sprintf(format, args...)})
}

func at(path ...any) []any { return path }

// unique records a problem when entry i (a what, at path) has no id or the
// id of an earlier one, and reports whether its id is new; seen collects
// the ids.
func (p *problems) unique(file string, path []any, what string, i int, id string, seen map[string]bool) bool {
	switch {
	case id == "":
		p.add(file, path, "%s %d has no id", what, i+1)
		return false
	case seen[id]:
		p.add(file, append(slices.Clone(path), "id"), "duplicate %s %q", what, id)
		return false
	}
	seen[id] = true
	return true
}

// regex records a problem for each pattern that does not compile.
func (p *problems) regex(file string, path []any, patterns []string) {
	for i, s := range patterns {
		if _, err := regexp.Compile(s); err != nil {
			p.add(file, append(slices.Clone(path), i), "bad regular expression %q: %v", s, err)
		}
	}
}

func (p *problems) phrases(file string, path []any, ph intent.Phrases) {
	p.regex(file, append(slices.Clone(path), "regex"), ph.Regex)
}

// validate checks the files on their own and against each other.
func (c *Config) validate() error {
	p := &problems{c: c}
	intents := c.validateDomain(p)
	c.validateActions(p)
	c.validateForms(p, intents)
	c.validateResponses(p, intents)
	c.validateDialogActs(p)
	c.validateRules(p, intents)
	c.validateWorkflows(p, intents)
	return errors.Join(p.errs...)
}

// validateDomain checks the catalogue and returns the intent ids.
func (c *Config) validateDomain(p *problems) map[string]bool {
	ids := map[string]bool{}
	actions := map[string]bool{}
	for _, a := range c.Actions.Actions {
		actions[a.ID] = true
	}
	if len(c.Domain.Intents) == 0 {
		p.add(fileDomain, at("intents"), "no intents")
	}
	for i, in := range c.Domain.Intents {
		path := at("intents", i)
		if !p.unique(fileDomain, path, "intent", i, in.ID, ids) {
			continue
		}
		if in.Label == "" {
			p.add(fileDomain, path, "intent %q has no label", in.ID)
		}
		if len(in.Examples) == 0 {
			p.add(fileDomain, path, "intent %q has no examples", in.ID)
		}
		switch {
		case in.Action == "":
			p.add(fileDomain, path, "intent %q has no action", in.ID)
		case !actions[in.Action]:
			p.add(fileDomain, append(path, "action"), "intent %q: unknown action %q (not in %s)", in.ID, in.Action, fileActions)
		}
	}
	oos := c.Domain.OutOfScope
	switch {
	case oos.ID == "":
		p.add(fileDomain, at("out_of_scope"), "out_of_scope has no id")
	case ids[oos.ID]:
		p.add(fileDomain, at("out_of_scope", "id"), "out_of_scope id %q is also an intent", oos.ID)
	case len(oos.Examples) == 0:
		p.add(fileDomain, at("out_of_scope"), "out_of_scope has no examples")
	}
	return ids
}

func (c *Config) validateActions(p *problems) {
	seen := map[string]bool{}
	for i, a := range c.Actions.Actions {
		path := at("actions", i)
		if !p.unique(fileActions, path, "action", i, a.ID, seen) {
			continue
		}
		if a.Plugin == "" {
			p.add(fileActions, path, "action %q has no plugin", a.ID)
		}
		for _, f := range [][2]string{{"plugin", a.Plugin}, {"check", a.Check}} {
			if len(toolName(f[1])) > maxToolName {
				p.add(fileActions, append(at("actions", i), f[0]), "action %q: %s %q is longer than a tool name may be (%d characters)", a.ID, f[0], f[1], maxToolName)
			}
		}
		if a.Risk != "" && !slices.Contains(riskLevels, a.Risk) {
			p.add(fileActions, append(path, "risk"), "action %q: risk %q is not one of %v", a.ID, a.Risk, riskLevels)
		}
		if w := a.Webhook; w != nil {
			if u, err := url.Parse(w.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				p.add(fileActions, append(path, "webhook", "url"), "action %q: webhook url %q is not an http(s) URL", a.ID, w.URL)
			}
			if w.Timeout < 0 {
				p.add(fileActions, append(path, "webhook", "timeout"), "action %q: negative webhook timeout", a.ID)
			}
			if w.Kind != "" && w.Kind != tool.Read && w.Kind != tool.Write {
				p.add(fileActions, append(at("actions", i), "webhook", "kind"), "action %q: webhook kind %q is not read or write", a.ID, w.Kind)
			}
		}
	}
}

func (c *Config) validateForms(p *problems, intents map[string]bool) {
	for _, name := range slices.Sorted(maps.Keys(c.Forms.Slots)) {
		s := c.Forms.Slots[name]
		path := at("slots", name)
		typ := s.Type
		if typ == "" {
			typ = slotText
		}
		if !slices.Contains(slotTypes, typ) {
			p.add(fileForms, append(path, "type"), "slot %q: type %q is not one of %v", name, s.Type, slotTypes)
		}
		if typ == slotEnum && len(s.Values) == 0 {
			p.add(fileForms, path, "slot %q: an enum needs values", name)
		}
		for _, v := range slices.Sorted(maps.Keys(s.Values)) {
			if _, ok := parseNumber(v); typ == slotNumber && !ok {
				p.add(fileForms, append(path, "values", v), "slot %q: value %q is not a number", name, v)
			}
		}
		if s.Min != nil && s.Max != nil && *s.Min > *s.Max {
			p.add(fileForms, append(path, "min"), "slot %q: min %v above max %v", name, *s.Min, *s.Max)
		}
		p.regex(fileForms, append(path, "patterns"), s.Patterns)
		for i, pat := range s.Patterns {
			re, err := regexp.Compile(pat)
			if err != nil {
				continue
			}
			named := false
			for _, g := range re.SubexpNames() {
				if g == "" {
					continue
				}
				named = true
				if g != name {
					p.add(fileForms, append(path, "patterns", i), "slot %q: pattern group %q is not the slot's name", name, g)
				}
			}
			if !named && typ != slotBool {
				p.add(fileForms, append(path, "patterns", i), "slot %q: pattern %q has no named group", name, pat)
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.Forms.Forms)) {
		if !intents[id] {
			p.add(fileForms, at("forms", id), "form for unknown intent %q", id)
		}
		f := c.Forms.Forms[id]
		for _, list := range []struct {
			key   string
			slots []string
		}{{"required", f.Required}, {"optional", f.Optional}} {
			for i, s := range list.slots {
				if _, ok := c.Forms.Slots[s]; !ok {
					p.add(fileForms, at("forms", id, list.key, i), "form %q: unknown slot %q", id, s)
				}
			}
		}
		for _, s := range f.Required {
			if f.Ask[s] == "" {
				p.add(fileForms, at("forms", id), "form %q: no question (ask) for required slot %q", id, s)
			}
		}
		for _, s := range slices.Sorted(maps.Keys(f.Defaults)) {
			if !slices.Contains(f.Optional, s) {
				p.add(fileForms, at("forms", id, "defaults", s), "form %q: default for %q, which is not an optional slot", id, s)
			}
		}
	}
	for i, in := range c.Domain.Intents {
		if _, ok := c.Forms.Forms[in.ID]; !ok && in.ID != "" {
			p.add(fileForms, at("forms"), "missing form for intent %q (%s:%d); give it one, {} when it needs no slot", in.ID, fileDomain, c.line(fileDomain, "intents", i))
		}
	}
}

func (c *Config) validateResponses(p *problems, intents map[string]bool) {
	for _, k := range requiredTemplates {
		if c.Responses.Templates[k] == "" {
			p.add(fileResponses, at("templates"), "missing template %q", k)
		}
	}
	if len(c.Responses.Social["open"]) == 0 {
		p.add(fileResponses, at("social"), "missing social replies for \"open\"")
	}
	for _, id := range slices.Sorted(maps.Keys(c.Responses.Intents)) {
		if !intents[id] {
			p.add(fileResponses, at("intents", id), "replies for unknown intent %q", id)
		}
	}
}

// validateDialogActs checks the acts.
func (c *Config) validateDialogActs(p *problems) {
	acts := map[string]bool{}
	for i, a := range c.DialogActs.Acts {
		path := at("acts", i)
		switch {
		case a.Act == "":
			p.add(fileDialogActs, path, "act %d has no name", i+1)
		case acts[a.Act]:
			p.add(fileDialogActs, append(path, "act"), "duplicate act %q", a.Act)
		}
		acts[a.Act] = true
		p.phrases(fileDialogActs, path, a.Phrases)
	}
}

func (c *Config) validateRules(p *problems, intents map[string]bool) {
	r := c.Rules
	p.phrases(fileRules, at("stop"), r.Stop)
	for _, k := range []struct {
		key string
		ph  intent.Phrases
	}{{"task", r.Social.Task}, {"short", r.Social.Short}, {"capability", r.Social.Capability}, {"open", r.Social.Open}} {
		p.phrases(fileRules, at("social", k.key), k.ph)
	}
	for i, id := range r.Confirmation.Intents {
		if !intents[id] {
			p.add(fileRules, at("confirmation", "intents", i), "confirmation: unknown intent %q", id)
		}
	}
	for i, lv := range r.Confirmation.RiskLevels {
		if !slices.Contains(riskLevels, lv) {
			p.add(fileRules, at("confirmation", "risk_levels", i), "confirmation: risk %q is not one of %v", lv, riskLevels)
		}
	}
	for i, rw := range r.Rewrite {
		path := at("rewrite", i)
		if rw.Name == "" || rw.Template == "" {
			p.add(fileRules, path, "rewrite rule %d needs a name and a template", i+1)
		}
		for j, id := range rw.Intents {
			if !intents[id] {
				p.add(fileRules, append(path, "intents", j), "rewrite %q: unknown intent %q", rw.Name, id)
			}
		}
		p.phrases(fileRules, append(path, "when"), rw.When)
	}
	c.validateRouting(p)
}

// validateRouting checks the fusion thresholds, with intent's defaults
// for what the file leaves out.
func (c *Config) validateRouting(p *problems) {
	f := c.Rules.Routing
	d := intent.DefaultConfig().Fusion
	for _, t := range []struct {
		key string
		v   float64
		max float64 // 0: no upper bound
	}{
		{"execute_threshold", f.ExecuteThreshold, 0},
		{"route_to_cloud_threshold", f.RouteToCloudThreshold, 0},
		{"clarify_margin_threshold", f.ClarifyMargin, 1},
		{"classifier_execute_score_threshold", f.ClassifierExecuteScore, 1},
		{"classifier_execute_margin_threshold", f.ClassifierExecuteMargin, 1},
		{"model_execute_score_threshold", f.ModelExecuteScore, 1},
	} {
		if t.v < 0 || (t.max > 0 && t.v > t.max) {
			p.add(fileRules, at("routing", t.key), "routing: %s %v out of range", t.key, t.v)
		}
	}
	exec, cloud := cmp.Or(f.ExecuteThreshold, d.ExecuteThreshold), cmp.Or(f.RouteToCloudThreshold, d.RouteToCloudThreshold)
	if cloud >= exec {
		p.add(fileRules, at("routing", "route_to_cloud_threshold"), "routing: route_to_cloud_threshold %v must be below execute_threshold %v", cloud, exec)
	}
	if rc := c.Rules.RemoteClassifier; rc != nil {
		if err := rc.Check(); err != nil {
			p.add(fileRules, at("remote_classifier"), "%v", err)
		}
	}
	if f.MinSupport < 0 {
		p.add(fileRules, at("routing", "min_support"), "routing: negative min_support")
	}
	for _, name := range slices.Sorted(maps.Keys(f.Stages)) {
		if _, ok := d.Stages[name]; !ok {
			p.add(fileRules, at("routing", "stages", name), "routing: unknown stage %q", name)
		}
		if s := f.Stages[name]; s.Weight < 0 || s.AcceptScore < 0 || s.AcceptMargin < 0 || s.Bonus < 0 {
			p.add(fileRules, at("routing", "stages", name), "routing: stage %q has a negative weight, score, margin or bonus", name)
		}
	}
}

func (c *Config) validateWorkflows(p *problems, intents map[string]bool) {
	seen := map[string]bool{}
	for i, t := range c.Workflows.Templates {
		path := at("templates", i)
		p.unique(fileWorkflows, path, "template", i, t.ID, seen)
		if t.Kind != "sequence" && t.Kind != "conditional" {
			p.add(fileWorkflows, append(path, "kind"), "template %q: kind %q is not sequence or conditional", t.ID, t.Kind)
		}
		if len(t.Intents) < 2 {
			p.add(fileWorkflows, append(path, "intents"), "template %q: needs two intents or more", t.ID)
		}
		for j, id := range t.Intents {
			if !intents[id] {
				p.add(fileWorkflows, append(path, "intents", j), "template %q: unknown intent %q", t.ID, id)
			}
		}
		if len(t.Steps) > 0 && len(t.Steps) != len(t.Intents) {
			p.add(fileWorkflows, append(path, "steps"), "template %q: %d steps for %d intents", t.ID, len(t.Steps), len(t.Intents))
		}
		for j, st := range t.Steps {
			sp := append(slices.Clone(path), "steps", j)
			if j < len(t.Intents) && st.Intent != t.Intents[j] {
				p.add(fileWorkflows, append(sp, "intent"), "template %q: step %d is %q, intents say %q", t.ID, j+1, st.Intent, t.Intents[j])
			}
			for k, d := range st.DependsOn {
				if d < 1 || d > j {
					p.add(fileWorkflows, append(sp, "depends_on", k), "template %q: step %d depends on step %d, which is not before it", t.ID, j+1, d)
				}
			}
			if cd := st.Condition; cd != nil {
				if cd.Step < 1 || cd.Step > j {
					p.add(fileWorkflows, append(sp, "condition", "step"), "template %q: step %d tests step %d, which is not before it", t.ID, j+1, cd.Step)
				}
				p.condition(append(sp, "condition"), cd.Field, cd.Operator, cd.Value)
			}
		}
	}
	for i, h := range c.Workflows.Conditions {
		path := at("conditions", i)
		for _, k := range []string{h.Source, h.Target} {
			if !intents[k] {
				p.add(fileWorkflows, path, "condition %d: unknown intent %q", i+1, k)
			}
		}
		if len(h.Phrases) == 0 {
			p.add(fileWorkflows, path, "condition %d: no phrases", i+1)
		}
		p.condition(path, h.Field, h.Operator, h.Value)
	}
}

func (p *problems) condition(path []any, field, op string, value Values) {
	if field == "" {
		p.add(fileWorkflows, path, "condition has no field")
	}
	if !slices.Contains(operators, op) {
		p.add(fileWorkflows, append(slices.Clone(path), "operator"), "condition operator %q is not one of %v", op, operators)
	}
	if len(value) == 0 || (op != opIn && len(value) != 1) {
		p.add(fileWorkflows, append(slices.Clone(path), "value"), "condition %s needs %s", op, map[bool]string{true: "a list of values", false: "one value"}[op == opIn])
	}
}
