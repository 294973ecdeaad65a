package intent

import (
	"cmp"
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Consent is what a reply to a pending question says. The zero value is
// Unclear, so a Verdict nobody filled in accepts nothing.
type Consent uint8

// The three answers to a yes-or-no question.
const (
	// Unclear: neither a clear yes nor a clear no (a question, a hedge,
	// both at once, or something else); ask again.
	Unclear Consent = iota
	// Accepted: a plain yes.
	Accepted
	// Rejected: a no.
	Rejected
)

// String returns "unclear", "accepted" or "rejected".
func (c Consent) String() string {
	switch c {
	case Accepted:
		return "accepted"
	case Rejected:
		return "rejected"
	}
	return "unclear"
}

// MarshalText writes the Consent as its String.
func (c Consent) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText reads "accepted", "rejected" or "unclear".
func (c *Consent) UnmarshalText(b []byte) error {
	for _, k := range []Consent{Unclear, Accepted, Rejected} {
		if string(b) == k.String() {
			*c = k
			return nil
		}
	}
	return fmt.Errorf("intent: consent %q: want accepted, rejected or unclear", b)
}

// Verdict is how ReadConsent reads a reply.
type Verdict struct {
	// Consent is the answer.
	Consent Consent `json:"consent"`
	// Note is the rest of the reply: without the yes or the no it opens
	// with ("取消，周三不行" → "周三不行"), else the whole reply.
	Note string `json:"note,omitempty"`
	// Cue says what decided, such as `deny "不同意"`, `question "?"` or
	// `affirm "没问题"`.
	Cue string `json:"cue"`
}

// ErrUnclear is what Verdict.Err wraps for a reply that is neither a yes
// nor a no: the caller asks again and keeps the question pending.
var ErrUnclear = errors.New("intent: the reply is neither a clear yes nor a clear no")

// Err returns nil for a yes or a no, and for an unclear reply an error
// wrapping ErrUnclear that says why.
func (v Verdict) Err() error {
	if v.Consent != Unclear {
		return nil
	}
	return fmt.Errorf("%w (%s)", ErrUnclear, v.Cue)
}

// ReadConsent reads a reply to a pending yes-or-no question, in Chinese or
// English. Its words are dialog acts (consent.yml), found by the longest
// phrase at each place, so "不同意" is a no and "对不起" is not a yes:
//
//   - a question anywhere ("可以吗？", "是不是搞错了", X不X, "?", "is
//     that right") makes it Unclear: never a yes, never a no;
//   - a refusal or a negation anywhere (不, 没, 别, 取消, 算了, 行不通,
//     not, don't, no way, go away) makes it Rejected, hedged or not
//     ("好像不对", "maybe not"), unless the reply also says a plain yes
//     ("ok no", "好的，不过别执行"), which makes it Unclear;
//   - a hedge ("好像", "可能", "maybe", "I guess", "…") makes it Unclear;
//   - a reply whose clauses hold nothing but yeses, fillers and polite
//     words ("好的", "那就执行吧", "没问题，谢谢", "yep", "sounds good to
//     me", 👍) is Accepted;
//   - anything else is Unclear: a yes with more in it ("好的，改到周三") or
//     inside other words ("可以改到周三") is not a yes.
func ReadConsent(text string) Verdict { return ReadConsentTo("", text) }

// ReadConsentTo is ReadConsent for a reply to question, which may name
// what it asks to do: a cancel word (取消, 停止, cancel, stop) that the
// question holds is then the thing asked about and not a no, so "确认取消"
// to "确认要取消订单吗？" and "yes, cancel it" to "Cancel order B456?" are
// yeses, while "不要取消" and "no" are still noes and "取消" alone asks
// again.
func ReadConsentTo(question, text string) Verdict {
	lex, err := consentLexicon()
	if err != nil {
		return Verdict{Note: strings.TrimSpace(text), Cue: err.Error()}
	}
	f := foldReply(text)
	r := lex.read(f, lex.named(question))
	v := Verdict{Consent: r.consent, Cue: r.cue, Note: strings.TrimSpace(text)}
	if v.Consent != Unclear && r.rest > 0 {
		v.Note = strings.TrimFunc(text[f.at[r.rest]:], func(c rune) bool {
			return unicode.IsSpace(c) || unicode.IsPunct(c) || c == '~' || c == '～'
		})
	}
	return v
}

// consentAct is what a phrase of consent.yml says.
type consentAct uint8

const (
	actFiller consentAct = iota
	actAffirm
	actNegate
	actDeny
	actCancel
	actQuestion
	actHedge
	actOther
)

var consentActs = map[string]consentAct{"filler": actFiller, "affirm": actAffirm, "negate": actNegate, "deny": actDeny,
	"cancel": actCancel, "question": actQuestion, "hedge": actHedge, "other": actOther}

// no reports whether act says no.
func (a consentAct) no() bool { return a == actNegate || a == actDeny || a == actCancel }

//go:embed consent.yml
var consentYAML []byte

// lexicon is consent.yml compiled: one automaton over every phrase.
type lexicon struct {
	ac   *automaton
	acts []consentAct // by pattern
	name []string     // act names, by consentAct
}

var consentLexicon = sync.OnceValues(func() (*lexicon, error) {
	var doc struct {
		Acts []ActRule `yaml:"acts"`
	}
	if err := yaml.Unmarshal(consentYAML, &doc); err != nil {
		return nil, fmt.Errorf("consent.yml: %w", err)
	}
	lex := &lexicon{name: make([]string, len(consentActs))}
	for name, a := range consentActs {
		lex.name[a] = name
	}
	var patterns []string
	seen := map[string]string{}
	for _, a := range doc.Acts {
		act, ok := consentActs[a.Act]
		if !ok || len(a.Exact) > 0 || len(a.Regex) > 0 {
			return nil, fmt.Errorf("consent.yml: act %q: want one of %v with contains only", a.Act, slices.Sorted(maps.Keys(consentActs)))
		}
		for _, p := range a.Contains {
			n := foldReply(p).s
			if prev, dup := seen[n]; dup || n == "" {
				return nil, fmt.Errorf("consent.yml: phrase %q of %s is empty or also in %s", p, a.Act, prev)
			}
			seen[n] = a.Act
			patterns = append(patterns, n)
			lex.acts = append(lex.acts, act)
		}
	}
	lex.ac = newAutomaton(patterns)
	return lex, nil
})

// folded is a reply as the lexicon reads it, with where each byte came
// from in the original.
type folded struct {
	s  string
	at []int // at[i]: offset in the original of byte i of s; at[len(s)] is its length
}

// foldReply folds a reply as Normalize does, and also curly apostrophes to
// straight ones and line breaks to commas, and drops emoji variation
// selectors and skin tones.
func foldReply(text string) folded {
	var b strings.Builder
	at := make([]int, 0, len(text)+1)
	space := true
	for o, r := range text {
		switch r = fold(r); {
		case r == '\u2019' || r == '\u2018':
			r = '\''
		case r == '\n' || r == '\r':
			r = ','
		case r == '\ufe0f' || r >= 0x1F3FB && r <= 0x1F3FF:
			continue
		}
		if unicode.IsSpace(r) {
			if space {
				continue
			}
			r, space = ' ', true
		} else {
			space = false
		}
		for range utf8.RuneLen(r) {
			at = append(at, o)
		}
		b.WriteRune(r)
	}
	s := b.String()
	for strings.HasSuffix(s, " ") {
		s, at = s[:len(s)-1], at[:len(at)-1]
	}
	return folded{s: s, at: append(at, len(text))}
}

// reading is what lexicon.read made of a folded reply.
type reading struct {
	consent Consent
	cue     string
	rest    int // where the note starts in the folded reply; 0: the whole reply
}

// clause is what one clause (text between punctuation) holds.
type clause struct {
	affirm, deny int
	yesThenNo    bool // a yes before a no ("ok no"); a no before a yes negates it ("don't go ahead")
	content      bool // a word that is no phrase
	end          int  // where it ends in the folded reply
}

// named returns the cancel phrases question holds.
func (l *lexicon) named(question string) map[int]bool {
	if question == "" {
		return nil
	}
	named := map[int]bool{}
	for _, m := range l.ac.find(foldReply(question).s) {
		if l.acts[m.pattern] == actCancel {
			named[m.pattern] = true
		}
	}
	return named
}

// read reads a folded reply; named are the cancel phrases the question
// holds.
func (l *lexicon) read(f folded, named map[int]bool) reading {
	s := f.s
	if strings.TrimFunc(s, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) }) == "" {
		return reading{cue: "empty"}
	}
	switch {
	case strings.ContainsAny(s, "?¿"):
		return reading{cue: `question "?"`}
	case strings.Contains(s, "...") || strings.ContainsRune(s, '…') || strings.Contains(s, "。。"):
		return reading{cue: `hedge "…"`}
	}
	if q := aNotA(s); q != "" {
		return reading{cue: fmt.Sprintf("question %q", q)}
	}
	// The longest phrase starting at each byte.
	best := make([]int, len(s)+1) // pattern+1, 0: none
	for _, m := range l.ac.find(s) {
		if b := best[m.start]; b == 0 || len(l.ac.patterns[b-1]) < m.end-m.start {
			best[m.start] = m.pattern + 1
		}
	}
	var (
		clauses                      []clause
		cur                          clause
		affirmCue, denyCue, hedgeCue string
	)
	phrase := func(act consentAct, p string) string { return fmt.Sprintf("%s %q", l.name[act], p) }
	for i := 0; i < len(s); {
		if b := best[i]; b > 0 {
			p := l.ac.patterns[b-1]
			switch act := l.acts[b-1]; act {
			case actQuestion:
				return reading{cue: phrase(act, p)}
			case actHedge:
				hedgeCue = cmp.Or(hedgeCue, phrase(act, p))
			case actAffirm:
				cur.affirm++
				affirmCue = cmp.Or(affirmCue, phrase(act, p))
			case actNegate, actDeny, actCancel:
				if named[b-1] {
					break // the thing the question asks about
				}
				cur.deny++
				cur.yesThenNo = cur.yesThenNo || cur.affirm > 0 && cur.deny == 1
				denyCue = cmp.Or(denyCue, phrase(act, p))
			}
			i += len(p)
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\'' || unicode.IsSpace(r):
		case unicode.IsPunct(r) || r == '~':
			cur.end = i
			clauses = append(clauses, cur)
			cur = clause{}
		default:
			cur.content = true
		}
		i += n
	}
	cur.end = len(s)
	clauses = append(clauses, cur)

	var yes, mixed, content bool
	for _, c := range clauses {
		yes = yes || c.affirm > 0 && c.deny == 0 && !c.content
		mixed = mixed || c.yesThenNo
		content = content || c.content
	}
	switch {
	case denyCue != "" && (yes || mixed):
		return reading{cue: affirmCue + " and " + denyCue}
	case denyCue != "":
		// A hedged no ("好像不对", "maybe not") is a no.
		return reading{consent: Rejected, cue: strings.TrimPrefix(hedgeCue+", ", ", ") + denyCue, rest: l.rest(s, best, clauses, false)}
	case hedgeCue != "":
		return reading{cue: hedgeCue}
	case yes && content:
		// "好的，改到周三" may be a yes to something else.
		return reading{cue: affirmCue + " with more than a yes"}
	case yes:
		return reading{consent: Accepted, cue: affirmCue, rest: l.rest(s, best, clauses, true)}
	case affirmCue != "":
		return reading{cue: affirmCue + " inside other words"}
	}
	return reading{cue: "no yes or no"}
}

// rest returns where the note starts: after the leading clauses that say
// only the decision, else after the leading phrases of the decision; 0
// when the reply does not open with it.
func (l *lexicon) rest(s string, best []int, clauses []clause, yes bool) int {
	start := 0
	for _, c := range clauses {
		pure := !c.content && (yes && c.affirm > 0 && c.deny == 0 || !yes && c.deny > 0 && c.affirm == 0)
		if !pure {
			break
		}
		start = c.end
	}
	if start > 0 {
		return start
	}
	// No whole clause: the phrases of the decision it opens with ("不要 太贵了").
	for i := 0; i < len(s); {
		if s[i] == ' ' {
			i++
			continue
		}
		b := best[i]
		if b == 0 || yes != (l.acts[b-1] == actAffirm) || !yes && !l.acts[b-1].no() {
			break
		}
		i += len(l.ac.patterns[b-1])
		start = i
	}
	return start
}

// aNotA finds a question of the form X不X or X没X (好不好, 是不是, 有没有),
// where X is no negation or particle (不不不 and 不了不了 are noes).
func aNotA(s string) string {
	rs := []rune(s)
	for i := 1; i+1 < len(rs); i++ {
		if (rs[i] == '不' || rs[i] == '没') && rs[i-1] == rs[i+1] && !strings.ContainsRune("不没了的吧啊呀呢嘛", rs[i-1]) && isHan(rs[i-1]) {
			return string(rs[i-1 : i+2])
		}
	}
	return ""
}
