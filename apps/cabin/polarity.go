package cabin

import (
	"cmp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/loomkit/loom/intent"
)

// The polarity guard. The matchers rank intents by the words they share
// with the examples, and an intent and its opposite share nearly all of
// them: "turn on seat heating" has more in common with the example "seat
// heating off" than with "turn on the seat heating", so the classifier
// ranked cabin_seat_heat_off first (1.56 against 0.96), on the first turn
// as on the fourth. The guard reads the words that carry the polarity —
// on or off, open or close, up or down, lock or unlock — and a car never
// does the opposite of what they say: a request whose words name only the
// opposite side is turned to it, and one whose words name both sides, or
// negate the side asked for ("不要打开车窗", "don't open the window"), is
// asked about instead of run.
//
// The cue words live here, not in the YAML files: they are a safety check
// that a configuration override must not be able to turn off, and they
// are the same for every locale (a driver mixes them: "帮我open the
// window").

// polarPair is an intent and its opposite with the words of each side.
type polarPair struct {
	pos, neg       string   // intent ids: the "on" side and the "off" side
	posCue, negCue []string // normalized cue words; English ones match whole words
}

var (
	onCues  = []string{"打开", "开启", "启动", "开一下", "开开", "开", "turn on", "switch on", "start", "activate", "enable", "put on", "on"}
	offCues = []string{"关闭", "关掉", "关上", "关了", "关一下", "关", "停止", "停掉", "停用", "turn off", "switch off", "shut off", "shut down", "stop", "disable", "deactivate", "kill", "off"}

	openCues  = []string{"打开", "开启", "开一下", "开", "降下", "降下来", "摇下", "放下", "open", "roll down", "wind down", "crack", "lower"}
	closeCues = []string{"关闭", "关上", "关掉", "关好", "关一下", "关", "升起", "升上", "摇上", "合上", "close", "shut", "roll up", "wind up", "raise"}

	upCues   = []string{"太小", "太低", "太轻", "太弱", "too quiet", "too low", "too weak", "too soft", "调大", "开大", "加大", "增大", "调高", "升高", "提高", "大一点", "大点", "大声", "大", "高", "加", "up", "increase", "raise", "louder", "higher", "stronger", "faster", "more", "boost"}
	downCues = []string{"太大", "太高", "太响", "太吵", "太强", "太猛", "too loud", "too high", "too strong", "too much", "too fast", "调小", "开小", "减小", "调低", "降低", "小一点", "小点", "小声", "小", "低", "减", "down", "decrease", "reduce", "quieter", "softer", "lower", "weaker", "slower", "less"}

	polarPairs = []polarPair{
		{"cabin_ac_on", "cabin_ac_off", onCues, offCues},
		{"cabin_lights_on", "cabin_lights_off", onCues, offCues},
		{"cabin_seat_heat_on", "cabin_seat_heat_off", onCues, offCues},
		{"cabin_wiper_on", "cabin_wiper_off", onCues, offCues},
		{"cabin_window_open", "cabin_window_close", openCues, closeCues},
		{"cabin_sunroof_open", "cabin_sunroof_close", openCues, closeCues},
		{"cabin_fan_up", "cabin_fan_down", upCues, downCues},
		{"cabin_volume_up", "cabin_volume_down", upCues, downCues},
		{"cabin_door_unlock", "cabin_door_lock",
			[]string{"解锁", "开锁", "解开", "打开", "开门", "unlock", "open"},
			[]string{"锁上", "上锁", "锁好", "锁住", "锁一下", "锁车", "锁门", "锁", "关上", "关好", "关", "lock", "close", "shut"}},
		{"cabin_mirror_unfold", "cabin_mirror_fold",
			[]string{"展开", "打开", "放下", "打开来", "unfold", "extend", "open"},
			[]string{"折叠", "收起", "收回", "收", "合上", "fold", "tuck", "retract", "close"}},
		{"cabin_play_music", "cabin_pause_music",
			[]string{"播放", "继续", "放", "来", "听", "play", "resume", "put on", "start"},
			[]string{"暂停", "停止", "停", "别放", "不要放", "pause", "stop", "halt"}},
	}

	// negators, right before a cue, turn it round: "不要打开", "don't open".
	negators = []string{"不要", "不用", "别", "甭", "勿", "不", "don't", "dont", "do not", "never", "no need to", "not"}
)

// opposite returns the pair intent id belongs to and whether it is the
// pair's "on" side.
func opposite(id string) (polarPair, bool, bool) {
	for _, p := range polarPairs {
		switch id {
		case p.pos:
			return p, true, true
		case p.neg:
			return p, false, true
		}
	}
	return polarPair{}, false, false
}

// hasOpposite reports whether intent id has an opposite the guard knows.
func hasOpposite(id string) bool {
	_, _, ok := opposite(id)
	return ok
}

// polarity is what the guard read of a text for one pair.
type polarity struct {
	pos, neg bool // a cue of the side was said (not negated)
	negated  bool // a cue was said with a negator before it
}

// readPolarity finds the cues of pair p in the normalized text, longest
// first, each word once.
func readPolarity(p polarPair, text string) polarity {
	var out polarity
	type cue struct {
		word string
		pos  bool
	}
	var cues []cue
	for _, w := range p.posCue {
		cues = append(cues, cue{w, true})
	}
	for _, w := range p.negCue {
		cues = append(cues, cue{w, false})
	}
	slices.SortStableFunc(cues, func(a, b cue) int { return len(b.word) - len(a.word) })
	for i := 0; i < len(text); {
		matched := false
		for _, c := range cues {
			if !strings.HasPrefix(text[i:], c.word) || !wordAt(text, i, len(c.word)) {
				continue
			}
			if c.word == "on" && !lastWord(text[i+len(c.word):]) {
				continue // "on" is a switch only at the end: "turn the ac on", not "music on the radio"
			}
			if negatedAt(text, i) {
				out.negated = true
			} else if c.pos {
				out.pos = true
			} else {
				out.neg = true
			}
			i += len(c.word)
			matched = true
			break
		}
		if !matched {
			_, n := utf8.DecodeRuneInString(text[i:])
			i += n
		}
	}
	return out
}

// wordAt reports whether text[i:i+n] stands alone: a cue of Latin letters
// must not be part of a longer word ("lock" in "unlock", "on" in "song").
func wordAt(text string, i, n int) bool {
	first, _ := utf8.DecodeRuneInString(text[i:])
	if !isLatin(first) {
		return true
	}
	if i > 0 {
		if r, _ := utf8.DecodeLastRuneInString(text[:i]); isLatin(r) || r == '\'' {
			return false
		}
	}
	if i+n < len(text) {
		if r, _ := utf8.DecodeRuneInString(text[i+n:]); isLatin(r) {
			return false
		}
	}
	return true
}

// lastWord reports whether nothing but a courtesy follows a word.
func lastWord(rest string) bool {
	rest = strings.TrimSpace(rest)
	for _, w := range []string{"please", "now", "again", "for me"} {
		rest = strings.TrimSpace(strings.TrimPrefix(rest, w))
	}
	return strings.TrimRight(rest, ",.!?;，。！？；") == ""
}

func isLatin(r rune) bool { return r < unicode.MaxLatin1 && unicode.IsLetter(r) }

// negatedAt reports whether a negator ends right before text[i:] (a
// space between allowed: "don't open").
func negatedAt(text string, i int) bool {
	before := strings.TrimRight(text[:i], " ")
	for _, n := range negators {
		if strings.HasSuffix(before, n) && wordAt(before, len(before)-len(n), len(n)) {
			if n == "不" && (strings.HasSuffix(before, "要不") || strings.HasSuffix(before, "能不")) {
				continue // "要不开一下" is a suggestion, "能不能开" a question
			}
			return true
		}
	}
	return false
}

// Polarity verdicts.
const (
	polarityKeep = ""        // nothing said against the intent
	polaritySwap = "swapped" // the words name only the opposite: it is taken instead
	polarityAsk  = "ask"     // both sides, or a negated cue: ask which
	polaritySure = "sure"    // the words name the intent's side only
)

// guardPolarity checks intent id against the words of text: the intent
// to run instead of id (its opposite when the words say so) and the
// verdict.
func guardPolarity(id, text string) (string, string) {
	p, isPos, ok := opposite(id)
	if !ok {
		return id, polarityKeep
	}
	pol := readPolarity(p, intent.Normalize(text))
	same, other := pol.pos, pol.neg
	opp := p.neg
	if !isPos {
		same, other, opp = pol.neg, pol.pos, p.pos
	}
	switch {
	case pol.negated || (same && other):
		return id, polarityAsk
	case other:
		return opp, polaritySwap
	case same:
		return id, polaritySure
	}
	return id, polarityKeep
}

// bareName reports whether text only names the thing intent id acts on
// ("车窗", "the AC") and not what to do with it: a few words found in the
// intent's keywords or label.
func (a *App) bareName(id, text string) bool {
	t := " " + intent.Normalize(text) + " "
	for _, w := range []string{"帮我", "请", "把", "一下", " please ", " the ", " my "} {
		t = strings.ReplaceAll(t, w, " ")
	}
	t = strings.TrimSpace(strings.Trim(t, " ,.!?，。！？"))
	if t == "" || utf8.RuneCountInString(strings.ReplaceAll(t, " ", "")) > 12 || len(strings.Fields(t)) > 2 ||
		(detectLanguage(t) == localeChinese && utf8.RuneCountInString(t) > 3) {
		return false
	}
	in := a.cat.intents[id]
	for _, k := range append([]string{in.Label}, in.Keywords...) {
		if strings.Contains(intent.Normalize(k), t) || strings.Contains(intent.Normalize(k), strings.TrimSuffix(t, "s")) {
			return true
		}
	}
	return false
}

// guard checks the turn's routing against the words said: each clause
// of a text of several, else the whole text. An intent the words
// contradict is turned to its opposite; one they leave in doubt is asked
// about (a clause in doubt is not run); a clarify question between an
// intent and its opposite is not asked when the words name one side.
func (a *App) guard(d *Debug) {
	if len(d.Clauses) > 0 {
		for i := range d.Clauses {
			c := &d.Clauses[i]
			id, v := guardPolarity(c.Intent, c.Text)
			switch v {
			case polaritySwap:
				d.Polarity = append(d.Polarity, c.Text+": "+c.Intent+" → "+id)
				c.Intent = id
			case polarityAsk:
				d.Polarity = append(d.Polarity, c.Text+": "+c.Intent+" is in doubt")
				c.Decision = intent.Clarify
			}
		}
		return
	}
	r := d.Route
	if r == nil || !a.cat.known(r.Intent) || r.Decision == intent.Reject {
		return // nothing runs
	}
	text := cmp.Or(d.Rewritten, d.Corrected, d.Text)
	id, v := guardPolarity(r.Intent, text)
	p, _, _ := opposite(r.Intent)
	if v == polarityKeep && hasOpposite(r.Intent) && a.bareName(r.Intent, text) {
		v = polarityAsk // "车窗", "the AC": open or close?
	}
	switch v {
	case polaritySwap:
		d.Polarity = append(d.Polarity, r.Intent+" → "+id+": the words say so")
		r.Intent = id
		r.Candidates = first(r.Candidates, id)
		if r.Decision == intent.Clarify {
			r.Decision, r.Reason = intent.Execute, "the words name "+id
		}
	case polarityAsk:
		d.Polarity = append(d.Polarity, r.Intent+" is in doubt: both sides or a negation")
		other := p.pos
		if other == r.Intent {
			other = p.neg
		}
		r.Candidates = first(first(r.Candidates, other), r.Intent)
		r.Decision, r.Reason = intent.Clarify, "the words leave on or off in doubt"
	case polaritySure:
		if r.Decision == intent.Clarify && len(r.Candidates) > 1 && (r.Candidates[1].Intent == p.pos || r.Candidates[1].Intent == p.neg) {
			r.Decision, r.Reason = intent.Execute, "the words name "+id
		}
	}
}

// first is cands with id's candidate moved (or added) to the front.
func first(cands []intent.Candidate, id string) []intent.Candidate {
	out := []intent.Candidate{{Intent: id}}
	for _, c := range cands {
		if c.Intent == id {
			out[0] = c
			continue
		}
		out = append(out, c)
	}
	return out
}

// allCues are the cue words of every pair, longest first.
var allCues = func() []string {
	var out []string
	for _, p := range polarPairs {
		out = union(out, union(p.posCue, p.negCue))
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}()

// leadingCue is the cue word text starts with ("打开", "turn off"), or "".
func leadingCue(text string) string {
	t := intent.Normalize(text)
	for _, pre := range []string{"帮我", "请", "please "} {
		t = strings.TrimPrefix(t, pre)
	}
	for _, c := range allCues {
		if utf8.RuneCountInString(c) >= 2 && strings.HasPrefix(t, c) && wordAt(t, 0, len(c)) {
			return c
		}
	}
	return ""
}

// saysCue reports whether text holds a cue word of any pair.
func saysCue(text string) bool {
	t := intent.Normalize(text)
	for _, c := range allCues {
		if i := strings.Index(t, c); i >= 0 && utf8.RuneCountInString(c) >= 2 && wordAt(t, i, len(c)) {
			return true
		}
	}
	return false
}

// namesCue reports whether text holds any cue word, one character long
// included ("关窗" does, "温度" does not).
func namesCue(text string) bool {
	t := intent.Normalize(text)
	for _, c := range allCues {
		if i := strings.Index(t, c); i >= 0 && wordAt(t, i, len(c)) {
			return true
		}
	}
	return false
}
