package cabin

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Conversations are labelled multi-turn cases by group, the format of
// testdata/understanding.yml: each group lists conversations, a
// conversation its turns, a turn "WHAT IS SAID => WHAT MUST HAPPEN":
//
//	intent_a+intent_b      these intents ran this turn (in any order), no other
//	intent_a|intent_b      one of them ran, no other
//	intent(slot=value;…)   … with these slots
//	?slot ?confirm ?clarify ?reject ?social ?stop ?text
//	                       nothing ran; the reply is a slot question, a
//	                       confirmation, a clarify question, a refusal,
//	                       small talk, a stopped task or a plain text
//	-                      nothing ran, whatever the reply
//
// A turn without "=>" sets the scene and is not judged. Each conversation
// starts on a fresh car and the sample orders.
type Conversations struct {
	groups map[string][][]evalTurn
}

// ConversationGroups are the groups of a set of conversations, in the
// order they are played and reported.
var ConversationGroups = []string{"zh", "en", "mixed", "multi", "slot", "service"}

//go:embed testdata/understanding.yml
var defaultConversations []byte

// DefaultConversations returns the cabin's own labelled set.
func DefaultConversations() *Conversations {
	c, err := ParseConversations(defaultConversations)
	if err != nil {
		panic("cabin: the embedded conversations do not parse: " + err.Error())
	}
	return c
}

// ParseConversations reads a set of conversations (YAML, see
// Conversations).
func ParseConversations(data []byte) (*Conversations, error) {
	var raw map[string][][]string
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("read conversations: %w", err)
	}
	c := &Conversations{groups: map[string][][]evalTurn{}}
	for g, convs := range raw {
		if !slices.Contains(ConversationGroups, g) {
			return nil, fmt.Errorf("read conversations: unknown group %q; the groups are %s", g, strings.Join(ConversationGroups, ", "))
		}
		for i, conv := range convs {
			var turns []evalTurn
			for _, s := range conv {
				tu, err := parseTurn(s)
				if err != nil {
					return nil, fmt.Errorf("read conversations: group %s, conversation %d: %w", g, i+1, err)
				}
				turns = append(turns, tu)
			}
			c.groups[g] = append(c.groups[g], turns)
		}
	}
	return c, nil
}

// Len is the number of conversations.
func (c *Conversations) Len() int {
	n := 0
	for _, convs := range c.groups {
		n += len(convs)
	}
	return n
}

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
	case t.say == "":
		return t, fmt.Errorf("%q: nothing is said", s)
	case exp == "-":
		t.none = true
	case strings.HasPrefix(exp, "?"):
		t.kind = exp[1:]
		if replyKinds[t.kind] == nil {
			return t, fmt.Errorf("%q: unknown reply kind ?%s", s, t.kind)
		}
	case exp == "":
		return t, fmt.Errorf("%q: nothing must happen after =>", s)
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

// replyKinds map a turn's expected kind to the reply it is.
var replyKinds = map[string]func(Reply) bool{
	"slot":    func(r Reply) bool { return r.Type == typeAskSlot },
	"confirm": func(r Reply) bool { return r.Type == typeAskConfirmation },
	"clarify": func(r Reply) bool { return r.Type == typeClarify },
	"reject":  func(r Reply) bool { return r.Type == typeReject || r.Type == typeFallback },
	"social":  func(r Reply) bool { return r.Status == statusSocial },
	"stop":    func(r Reply) bool { return r.Status == statusStopped },
	"text":    func(r Reply) bool { return r.Type == typeText },
}

// ranSteps are the steps of r's workflow that ran, by step id and intent.
func ranSteps(r Reply) map[string]Step {
	out := map[string]Step{}
	if r.Workflow != nil && (r.Type == typeWorkflowResult || r.Type == typeAskSlot || r.Type == typeAskConfirmation) {
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

// conversationReport is the outcome of playing a set of conversations.
type conversationReport struct {
	// Passed and Total count the conversations of each group; one passes
	// when every judged turn did what it must.
	Passed map[string]int `json:"passed"`
	Total  map[string]int `json:"total"`
	// Failures are the conversations that failed, each with every turn:
	// what was said, the reply, what ran.
	Failures []string `json:"failures"`
	// Opposites are the turns where an action ran whose opposite was
	// asked for (on for off, open for close).
	Opposites []string `json:"opposites"`
}

// Accuracy is the share of group's conversations that passed; group ""
// is all of them.
func (r *conversationReport) Accuracy(group string) float64 {
	p, t := r.Passed[group], r.Total[group]
	if group == "" {
		p, t = 0, 0
		for _, g := range ConversationGroups {
			p, t = p+r.Passed[g], t+r.Total[g]
		}
	}
	if t == 0 {
		return 0
	}
	return float64(p) / float64(t)
}

// Play plays every conversation, one session each, in group order: reset
// puts the car and the orders back before each, say runs one turn.
func (c *Conversations) Play(ctx context.Context, say func(ctx context.Context, session, text string) (Reply, error), reset func(ctx context.Context) error) (*conversationReport, error) {
	res := &conversationReport{Passed: map[string]int{}, Total: map[string]int{}}
	n := 0
	for _, g := range ConversationGroups {
		for _, conv := range c.groups[g] {
			n++
			session := fmt.Sprintf("eval-%s-%d", g, n)
			if err := reset(ctx); err != nil {
				return nil, fmt.Errorf("play conversations: reset: %w", err)
			}
			before := map[string]Step{}
			pass := true
			var log []string
			for _, tu := range conv {
				r, err := say(ctx, session, tu.say)
				if err != nil {
					return nil, fmt.Errorf("play conversations: %q: %w", tu.say, err)
				}
				ok, ran, opp := judge(tu, r, before)
				if opp != "" {
					res.Opposites = append(res.Opposites, fmt.Sprintf("%s: %q ran %s", g, tu.say, opp))
				}
				mark := "ok"
				if !ok {
					mark, pass = "FAIL", false
				}
				log = append(log, fmt.Sprintf("%q → %s/%s ran %v %q [%s]", tu.say, r.Type, r.Status, ran, r.Message, mark))
				switch {
				case r.Type == typeWorkflowResult: // finished: the next turn's workflow is a new one
					before = map[string]Step{}
				case r.Workflow != nil:
					before = ranSteps(r)
				}
			}
			res.Total[g]++
			if pass {
				res.Passed[g]++
			} else {
				res.Failures = append(res.Failures, g+": "+strings.Join(log, " | "))
			}
		}
	}
	return res, nil
}

// PlayConversations plays c on the app itself, without a server: each
// conversation on a session and a car of its own, after the store's
// reset.
func (a *App) PlayConversations(ctx context.Context, c *Conversations) (*conversationReport, error) {
	say := func(ctx context.Context, session, text string) (Reply, error) {
		r, err := a.Chat(ctx, ChatRequest{SessionID: session, VehicleID: session, Text: text})
		if err != nil {
			return Reply{}, err
		}
		return *r, nil
	}
	return c.Play(ctx, say, a.store.Reset)
}
