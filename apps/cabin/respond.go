package cabin

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// replies renders the templates of responses.yml.
type replies struct {
	r          Responses
	cat        *catalog
	slotLabels map[string]string
}

func newReplies(c *Config, cat *catalog) *replies {
	p := &replies{r: c.Responses, cat: cat, slotLabels: map[string]string{}}
	for name, s := range c.Forms.Slots {
		p.slotLabels[name] = cmp.Or(s.Label, name)
	}
	return p
}

var placeholderRE = regexp.MustCompile(`\{[A-Za-z_][A-Za-z0-9_]*\}`)

// render fills tmpl: {name} from vars; {name_label} from the labels of
// name's value (empty for a value without one), or the value itself when
// name has no labels. Unknown names become empty.
func (p *replies) render(tmpl string, vars map[string]string) string {
	return placeholderRE.ReplaceAllStringFunc(tmpl, func(m string) string {
		name := m[1 : len(m)-1]
		if v, ok := vars[name]; ok {
			return v
		}
		if field, ok := strings.CutSuffix(name, "_label"); ok {
			if labels, ok := p.r.Labels[field]; ok {
				return labels[vars[field]] // a value with no label says nothing
			}
			return vars[field]
		}
		return ""
	})
}

// text renders the general template key.
func (p *replies) text(key string, vars map[string]string) string {
	return p.render(p.r.Templates[key], vars)
}

// stepVars are the names a step's templates may use: its label, slots,
// result data and message, over extra.
func (p *replies) stepVars(st *Step, extra map[string]string) map[string]string {
	vars := maps.Clone(extra)
	if vars == nil {
		vars = map[string]string{}
	}
	maps.Copy(vars, st.Slots)
	for k, v := range st.Checked {
		vars[k] = formatValue(v)
	}
	if st.Result != nil {
		for k, v := range st.Result.Data {
			vars[k] = formatValue(v)
		}
		vars["message"] = st.Result.Message
	}
	vars["label"] = st.Label
	vars["intent"] = st.Intent
	return vars
}

// formatValue is a result value as text: numbers without trailing zeros.
func formatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'f', -1, 32)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}

// finished reports whether a step has an outcome to tell.
func finished(st *Step) bool {
	switch st.Status {
	case stepDone, stepFailed, stepSkipped, stepCancelled:
		return true
	}
	return false
}

// part is a finished step's part of a summary; first selects the summary
// form of a done step over summary_also.
func (p *replies) part(st *Step, first bool, vars map[string]string) string {
	ir := p.of(st, vars)
	switch st.Status {
	case stepDone:
		t := ir.SummaryAlso
		if first || t == "" {
			t = ir.Summary
		}
		if t == "" {
			return trimEnd(p.render(cmp.Or(ir.Done, p.r.Templates["done"]), vars))
		}
		return p.render(t, vars)
	case stepFailed:
		if st.Result != nil {
			if t, ok := p.r.Errors[formatValue(st.Result.Data["reason"])]; ok {
				return trimEnd(p.render(t, vars))
			}
		}
		return trimEnd(p.text("failed", vars))
	case stepSkipped:
		return trimEnd(p.render(cmp.Or(ir.Skipped, p.r.Templates["step_skipped"]), vars))
	case stepCancelled:
		return trimEnd(p.text("confirm_cancelled", vars))
	}
	return ""
}

// of are the replies of st's intent, with the variants of its With whose
// field vars has, in name order.
func (p *replies) of(st *Step, vars map[string]string) intentResponses {
	in := p.cat.intents[st.Intent]
	if in == nil {
		return intentResponses{}
	}
	ir := in.replies
	for _, name := range slices.Sorted(maps.Keys(ir.With)) {
		if vars[name] == "" {
			continue
		}
		w := ir.With[name]
		ir.Done, ir.Summary, ir.SummaryAlso = cmp.Or(w.Done, ir.Done), cmp.Or(w.Summary, ir.Summary), cmp.Or(w.SummaryAlso, ir.SummaryAlso)
		ir.Confirm, ir.Skipped = cmp.Or(w.Confirm, ir.Confirm), cmp.Or(w.Skipped, ir.Skipped)
	}
	return ir
}

// trimEnd drops trailing punctuation, so a part fits inside a summary.
func trimEnd(s string) string {
	return strings.TrimRightFunc(s, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) })
}

// report tells the outcomes of the workflow's finished steps not yet
// reported, and marks them reported: a lone done step with its own reply,
// several as a summary. vars maps a step id to its template
// names.
func (p *replies) report(wf *Workflow, vars func(*Step) map[string]string) string {
	var news []*Step
	for i := range wf.Steps {
		if st := &wf.Steps[i]; finished(st) && !st.Reported {
			news = append(news, st)
			st.Reported = true
		}
	}
	if len(news) == 0 {
		return ""
	}
	if len(news) == 1 && news[0].Status == stepDone {
		st := news[0]
		v := vars(st)
		st.Message = p.render(cmp.Or(p.of(st, v).Done, p.r.Templates["done"]), v)
		return st.Message
	}
	type told struct {
		text string
		done bool
	}
	var parts []told
	anyDone := false
	for _, st := range news {
		st.Message = p.part(st, !anyDone, vars(st))
		if st.Status == stepDone {
			anyDone = true
		}
		if st.Message != "" {
			parts = append(parts, told{st.Message, st.Status == stepDone})
		}
	}
	// A part that another one repeats says nothing of its own: "订单 B456
	// 当前已发货" beside "订单 B456 当前已发货，没有取消"; so does a part
	// said already.
	var texts []string
	key := ""
	for i, x := range parts {
		repeated := slices.ContainsFunc(parts, func(y told) bool { return y.text != x.text && strings.Contains(y.text, x.text) })
		if repeated || slices.ContainsFunc(parts[:i], func(y told) bool { return y.text == x.text }) {
			continue
		}
		if key == "" {
			key = "summary_plain"
			if x.done {
				key = "summary"
			}
		}
		texts = append(texts, x.text)
	}
	if len(texts) == 0 {
		return ""
	}
	return upperFirst(p.text(key, map[string]string{"items": strings.Join(texts, p.r.Templates["summary_separator"])}))
}

// upperFirst starts a sentence with a capital ("Order C789 was
// delivered…"); a Chinese one is unchanged.
func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// social is a small-talk reply of kind; n picks among several.
func (p *replies) social(kind string, n int) string {
	list := p.r.Social[kind]
	if len(list) == 0 {
		list = p.r.Social["open"]
	}
	return list[n%len(list)]
}

// pendingHint reminds the user what the session waits for.
func (p *replies) pendingHint(wf *Workflow) string {
	if wf == nil || wf.Pending == nil {
		return ""
	}
	st := wf.step(wf.Pending.Step)
	if st == nil {
		return ""
	}
	vars := map[string]string{"label": st.Label}
	if wf.Pending.Kind == pendingConfirmation {
		return p.text("pending_confirmation", vars)
	}
	var labels []string
	for _, s := range wf.Pending.Slots {
		labels = append(labels, p.slotLabels[s])
	}
	vars["slot_label"] = strings.Join(labels, "、")
	return p.text("pending_slot", vars)
}

// clarify asks which of the intents was meant.
func (p *replies) clarify(ids []string) string {
	labels := make([]string, len(ids))
	for i, id := range ids {
		labels[i] = p.cat.label(id)
	}
	return p.text("clarify", map[string]string{"options": strings.Join(labels, p.r.Templates["clarify_or"])})
}

// join puts replies one after the other, with a space after a Latin full
// stop.
func join(parts ...string) string {
	var b strings.Builder
	for _, s := range parts {
		if s == "" {
			continue
		}
		if b.Len() > 0 {
			if r := []rune(b.String()); r[len(r)-1] < 0x80 {
				b.WriteByte(' ')
			}
		}
		b.WriteString(s)
	}
	return b.String()
}
