package schedule

import (
	"slices"
	"strings"
	"unicode"
)

// Kinds of the agent's own questions. The agent also asks through
// agent.AddTo: a tool.ConfirmRequest (a tool card) and an
// agent.PauseRequest (the round budget).
const (
	// KindPlan is a plan card: accept to execute it, reject to plan again.
	KindPlan = "plan"
	// KindAskUser is a question whose answer is the person's text.
	KindAskUser = "ask_user"
)

// Interaction is a question the agent asks a person: the payload of its
// plan card and ask_user interrupts, and the pending interaction kept in
// State until it is answered.
type Interaction struct {
	Kind string `json:"kind"`
	// Text is the card or the question, for people.
	Text  string `json:"text"`
	Steps []Step `json:"steps,omitempty"`
	// Answer is set when the person has answered.
	Answer *Answer `json:"answer,omitempty"`
}

// Answer answers any question the agent asks. Its fields cover every
// kind, so one value resumes whatever is pending: Accept and Reason a plan
// or tool card (tool.ConfirmAnswer's fields), Text an ask_user question,
// Continue and Message the pause at the round budget (agent.PauseAnswer's).
type Answer struct {
	Accept   bool   `json:"accept"`
	Reason   string `json:"reason,omitempty"`
	Text     string `json:"text,omitempty"`
	Continue bool   `json:"continue,omitempty"`
	Message  string `json:"message,omitempty"`
}

// Words that accept or reject when a reply starts with them.
var (
	yesWords = []string{"确认", "同意", "好的", "可以", "继续", "没问题", "行", "好", "是", "对",
		"yes", "y", "ok", "okay", "accept", "approve", "confirm", "sure", "continue", "go"}
	noWords = []string{"取消", "拒绝", "不要", "不行", "不用", "算了", "停", "不", "否",
		"no", "n", "reject", "cancel", "deny", "stop"}
)

// ParseAnswer reads a chat reply as an answer: "确认", "yes", "accept" …
// accept (and continue); "取消", "no", "reject" … reject; the rest of the
// reply after such a word is the reason. Any other text rejects a card,
// with the text as the reason, and is the answer to an ask_user question.
func ParseAnswer(text string) Answer {
	t := strings.TrimSpace(text)
	a := Answer{Text: t, Reason: t}
	if rest, ok := cutWord(t, yesWords); ok {
		a.Accept, a.Continue, a.Reason = true, true, rest
	} else if rest, ok := cutWord(t, noWords); ok {
		a.Reason = rest
	}
	a.Message = a.Reason
	return a
}

// cutWord reports whether t starts with one of words (a Latin word must
// end there) and returns the rest, without leading punctuation.
func cutWord(t string, words []string) (string, bool) {
	lower := strings.ToLower(t)
	for _, w := range words {
		if !strings.HasPrefix(lower, w) {
			continue
		}
		rest := []rune(t[len(w):])
		if len(rest) > 0 && w[0] < 0x80 && (unicode.IsLetter(rest[0]) || unicode.IsDigit(rest[0])) {
			continue
		}
		return strings.TrimLeftFunc(string(rest), func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) }), true
	}
	return "", false
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
