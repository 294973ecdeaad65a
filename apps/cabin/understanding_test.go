package cabin

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// evalTurn is one turn of a labelled conversation: what is said and what
// must happen.
type evalTurn struct {
	say   string
	any   [][]string // each alternative: the intents that must run, no other
	slots map[string]map[string]string
	kind  string // ?slot, ?confirm, …: nothing runs and the reply is of this kind
	none  bool   // "-": nothing runs
	setup bool   // no "=>": a turn that sets the scene, not judged
}

// parseTurn reads "WHAT IS SAID => WHAT MUST HAPPEN".
func parseTurn(s string) (evalTurn, error) {
	say, exp, ok := strings.Cut(s, "=>")
	if !ok { // a turn that sets the scene: not judged
		return evalTurn{say: strings.TrimSpace(s), setup: true}, nil
	}
	t := evalTurn{say: strings.TrimSpace(say), slots: map[string]map[string]string{}}
	exp = strings.TrimSpace(exp)
	switch {
	case exp == "-":
		t.none = true
	case strings.HasPrefix(exp, "?"):
		t.kind = exp[1:]
	default:
		for _, alt := range strings.Split(exp, "|") {
			var ids []string
			for _, part := range strings.Split(alt, "+") {
				id, rest, _ := strings.Cut(strings.TrimSpace(part), "(")
				ids = append(ids, id)
				if rest = strings.TrimSuffix(rest, ")"); rest != "" {
					t.slots[id] = map[string]string{}
					for _, kv := range strings.Split(rest, ";") {
						k, v, _ := strings.Cut(kv, "=")
						t.slots[id][strings.TrimSpace(k)] = strings.TrimSpace(v)
					}
				}
			}
			t.any = append(t.any, ids)
		}
	}
	return t, nil
}

// evalGroups are the groups of testdata/understanding.yml, in order.
var evalGroups = []string{"zh", "en", "mixed", "multi", "slot", "service"}

// loadEvalSet reads the labelled conversations by group.
func loadEvalSet(t *testing.T) map[string][][]evalTurn {
	t.Helper()
	b, err := os.ReadFile("testdata/understanding.yml")
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string][][]string
	if err := yaml.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	out := map[string][][]evalTurn{}
	for g, convs := range raw {
		if !slices.Contains(evalGroups, g) {
			t.Fatalf("understanding.yml: unknown group %q", g)
		}
		for _, conv := range convs {
			var turns []evalTurn
			for _, s := range conv {
				tu, err := parseTurn(s)
				if err != nil {
					t.Fatalf("understanding.yml, group %s: %v", g, err)
				}
				turns = append(turns, tu)
			}
			out[g] = append(out[g], turns)
		}
	}
	return out
}

// replyKinds map a turn's expected kind to the reply it is.
var replyKinds = map[string]func(Reply) bool{
	"slot":    func(r Reply) bool { return r.Type == TypeAskSlot },
	"confirm": func(r Reply) bool { return r.Type == TypeAskConfirmation },
	"clarify": func(r Reply) bool { return r.Type == TypeClarify },
	"reject":  func(r Reply) bool { return r.Type == TypeReject || r.Type == TypeFallback },
	"social":  func(r Reply) bool { return r.Status == StatusSocial },
	"stop":    func(r Reply) bool { return r.Status == StatusStopped },
	"text":    func(r Reply) bool { return r.Type == TypeText },
}

// ranSteps are the steps of r's workflow that ran, by step id and intent.
func ranSteps(r Reply) map[string]Step {
	out := map[string]Step{}
	if r.Workflow != nil && (r.Type == TypeWorkflowResult || r.Type == TypeAskSlot || r.Type == TypeAskConfirmation) {
		for _, st := range r.Workflow.Steps {
			if st.Status == stepDone {
				out[st.ID+"|"+st.Intent] = st
			}
		}
	}
	return out
}

// judge says whether turn tu's reply r did what it must, given the steps
// that had run before in the same workflow; opposite names an action that
// ran whose opposite was asked for.
func judge(tu evalTurn, r Reply, before map[string]Step) (ok bool, ran []string, opp string) {
	var steps []Step
	for k, st := range ranSteps(r) {
		if _, old := before[k]; !old {
			steps = append(steps, st)
			ran = append(ran, st.Intent)
		}
	}
	slices.Sort(ran)
	var asked []string
	for _, alt := range tu.any {
		asked = append(asked, alt...)
	}
	for _, id := range ran {
		if p, _, has := opposite(id); has && !slices.Contains(asked, id) && (slices.Contains(asked, p.pos) || slices.Contains(asked, p.neg)) {
			opp = id
		}
	}
	switch {
	case tu.setup:
		return true, ran, opp
	case tu.none:
		return len(ran) == 0, ran, opp
	case tu.kind != "":
		return len(ran) == 0 && replyKinds[tu.kind](r), ran, opp
	}
	for _, alt := range tu.any {
		if !slices.Equal(slices.Sorted(slices.Values(alt)), ran) {
			continue
		}
		good := true
		for _, st := range steps {
			for k, v := range tu.slots[st.Intent] {
				if st.Slots[k] != v {
					good = false
				}
			}
		}
		if good {
			return true, ran, opp
		}
	}
	return false, ran, opp
}

// evalResult is the outcome of the labelled set.
type evalResult struct {
	passed, total map[string]int
	failures      []string
	opposites     []string
}

// runEvalSet plays every conversation of set on a, one session each.
func runEvalSet(a *api, set map[string][][]evalTurn) evalResult {
	res := evalResult{passed: map[string]int{}, total: map[string]int{}}
	n := 0
	for _, g := range evalGroups {
		for _, conv := range set[g] {
			n++
			session := fmt.Sprintf("eval-%s-%d", g, n)
			if code := a.do("POST", "/api/v1/cabin/reset", nil, nil); code != 200 {
				a.t.Fatalf("reset: HTTP %d", code)
			}
			before := map[string]Step{}
			pass := true
			var log []string
			for _, tu := range conv {
				r := a.chat(session, tu.say)
				ok, ran, opp := judge(tu, r, before)
				if opp != "" {
					res.opposites = append(res.opposites, fmt.Sprintf("%s: %q ran %s", g, tu.say, opp))
				}
				mark := "ok"
				if !ok {
					mark, pass = "FAIL", false
				}
				log = append(log, fmt.Sprintf("%q → %s/%s ran %v %q [%s]", tu.say, r.Type, r.Status, ran, r.Message, mark))
				switch {
				case r.Type == TypeWorkflowResult: // finished: the next turn's workflow is a new one
					before = map[string]Step{}
				case r.Workflow != nil:
					before = ranSteps(r)
				}
			}
			res.total[g]++
			if pass {
				res.passed[g]++
			} else {
				res.failures = append(res.failures, g+": "+strings.Join(log, " | "))
			}
		}
	}
	return res
}

// minAccuracy is each group's accuracy as measured, the floor a change
// may not go under.
var minAccuracy = map[string]float64{"zh": 1, "en": 1, "mixed": 1, "multi": 1, "slot": 1, "service": 1}

// TestUnderstanding plays the labelled conversations of
// testdata/understanding.yml against one default server (Chinese, English
// and both), logs each group's accuracy and every failure, and fails on
// any action whose opposite was asked for and on a group under its floor.
func TestUnderstanding(t *testing.T) {
	a := newAPI(t, Options{})
	set := loadEvalSet(t)
	res := runEvalSet(a, set)
	all, allTotal := 0, 0
	for _, g := range evalGroups {
		all, allTotal = all+res.passed[g], allTotal+res.total[g]
		acc := float64(res.passed[g]) / float64(max(res.total[g], 1))
		t.Logf("%-8s %3d/%-3d %.1f%%", g, res.passed[g], res.total[g], 100*acc)
		if acc < minAccuracy[g] {
			t.Errorf("group %s: accuracy %.1f%% is under its floor %.1f%%", g, 100*acc, 100*minAccuracy[g])
		}
	}
	t.Logf("all      %3d/%-3d %.1f%%", all, allTotal, 100*float64(all)/float64(max(allTotal, 1)))
	for _, f := range res.failures {
		t.Log("failed: " + f)
	}
	for _, o := range res.opposites {
		t.Error("opposite action: " + o)
	}
	if !slices.Equal(slices.Sorted(maps.Keys(res.total)), slices.Sorted(slices.Values(evalGroups))) {
		t.Errorf("groups played %v, want %v", slices.Sorted(maps.Keys(res.total)), evalGroups)
	}
}
