package schedule

import (
	"slices"
	"strings"
	"unicode"

	"github.com/loomkit/loom/intent"
	"github.com/loomkit/loom/tool"
)

// Kinds of the agent's own questions. The agent also asks through
// agent.AddTo: a tool.ConfirmRequest (a tool card) and an
// agent.PauseRequest (the round budget).
const (
	// kindPlan is a plan card: accept to execute it, reject to plan again.
	kindPlan = "plan"
	// kindAskUser is a question whose answer is the person's text.
	kindAskUser = "ask_user"
)

// Interaction is a question the agent asks a person: the payload of its
// plan card and ask_user interrupts, and the pending interaction kept in
// State until it is answered.
type Interaction struct {
	Kind string `json:"kind"`
	// Text is the card or the question, for people.
	Text  string `json:"text"`
	Steps []Step `json:"steps,omitempty"`
	// Avoid is, on a plan card, the times the plan keeps free.
	Avoid []Avoid `json:"avoid,omitempty"`
	// Answer is set when the person has answered.
	Answer *Answer `json:"answer,omitempty"`
}

// Answer answers any question the agent asks. Its fields cover every
// kind, so one value resumes whatever is pending: the embedded
// tool.ConfirmAnswer (accept, reason) a plan or tool card, Text an
// ask_user question, Continue and Message the pause at the round budget
// (agent.PauseAnswer's). In JSON its fields are side by side.
type Answer struct {
	tool.ConfirmAnswer
	Text     string `json:"text,omitempty"`
	Continue bool   `json:"continue,omitempty"`
	Message  string `json:"message,omitempty"`
}

// parseAnswer reads a chat reply as an answer with intent.ReadConsent: a
// yes ("确认", "好的", "没问题", "yes" …) accepts a plan or tool card and
// continues at the round budget; a no ("取消", "不行", "no" …) rejects and
// ends the pause, with the rest of the reply as the reason ("取消，周三不行"
// → "周三不行"). Text is always the whole reply, the answer to an ask_user
// question. A reply that is neither (a question, a hedge, other text)
// accepts nothing, has the whole reply as the reason, and comes with an
// error wrapping intent.ErrUnclear: a card asks again rather than take it
// as a no.
func parseAnswer(text string) (Answer, error) {
	t := strings.TrimSpace(text)
	v := intent.ReadConsent(t)
	accept := v.Consent == intent.Accepted
	return Answer{ConfirmAnswer: tool.ConfirmAnswer{Accept: accept, Note: v.Note}, Continue: accept, Message: v.Note, Text: t}, v.Err()
}

// parseDays finds days of the week in a reply: 周三, 星期三, 礼拜三, 周末,
// Wednesday, wed. It returns them sorted, 1 = Monday … 7 = Sunday.
func parseDays(text string) []int {
	t := strings.ToLower(text)
	var days []int
	add := func(d int) {
		if !slices.Contains(days, d) {
			days = append(days, d)
		}
	}
	cn := map[rune]int{'一': 1, '二': 2, '三': 3, '四': 4, '五': 5, '六': 6, '日': 7, '天': 7, '七': 7}
	for _, p := range []string{"周", "星期", "礼拜"} {
		for rest := t; ; {
			i := strings.Index(rest, p)
			if i < 0 {
				break
			}
			rest = rest[i+len(p):]
			r := []rune(rest)
			if len(r) > 0 {
				if d, ok := cn[r[0]]; ok {
					add(d)
				} else if r[0] == '末' {
					add(6)
					add(7)
				}
			}
		}
	}
	for i, names := range [][]string{{"monday", "mon"}, {"tuesday", "tue"}, {"wednesday", "wed"}, {"thursday", "thu"}, {"friday", "fri"}, {"saturday", "sat"}, {"sunday", "sun"}} {
		for _, w := range strings.FieldsFunc(t, func(r rune) bool { return !unicode.IsLetter(r) || r > 0x7f }) {
			if w == names[0] || w == names[1] {
				add(i + 1)
			}
		}
	}
	if strings.Contains(t, "weekend") {
		add(6)
		add(7)
	}
	slices.Sort(days)
	return days
}
