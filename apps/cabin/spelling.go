package cabin

import (
	"slices"
	"strings"

	"github.com/hbollon/go-edlib"

	"github.com/loomkit/loom/intent"
)

// Near-miss words. A driver types in a hurry and a speech recognizer
// writes a homophone: "打开车创", "opne the windw". When a text is not
// understood as it is, the speller's correction is tried: Chinese
// homophones of the cabin's own nouns and verbs from a table, English
// words by edit distance to the words of the configuration. A correction
// that would name the opposite of what the words said (on for off, open
// for close) is never used.

// homophones map a near-miss, as a recognizer or a pinyin keyboard
// writes it, to the word meant; each is a whole compound, so "创业" or
// "床垫" are left alone.
var homophones = map[string]string{
	"车创": "车窗", "车床": "车窗", "车闯": "车窗", "车川": "车窗", "车穿": "车窗", "车框": "车窗",
	"天创": "天窗", "天床": "天窗", "天闯": "天窗", "天穿": "天窗",
	"控调": "空调", "空条": "空调", "孔调": "空调", "空吊": "空调",
	"坐椅": "座椅", "做椅": "座椅", "座以": "座椅", "坐以": "座椅",
	"导行": "导航", "倒航": "导航", "到航": "导航", "导杭": "导航",
	"因乐": "音乐", "音月": "音乐", "阴乐": "音乐", "音勒": "音乐",
	"阴量": "音量", "因量": "音量", "音亮": "音量",
	"车们": "车门", "车闷": "车门", "车扪": "车门",
	"后视境": "后视镜", "后市镜": "后视镜", "后事镜": "后视镜", "后视经": "后视镜",
	"雨挂": "雨刮", "语刷": "雨刷", "雨涮": "雨刷", "鱼刷": "雨刷",
	"除物": "除雾", "出雾": "除雾",
	"车等": "车灯", "车登": "车灯",
	"大开": "打开", "达开": "打开", "打凯": "打开",
	"关币": "关闭", "关比": "关闭", "官闭": "关闭", "管掉": "关掉", "官掉": "关掉",
	"订但": "订单", "定单": "订单", "订担": "订单",
	"退宽": "退款", "推款": "退款",
	"物留": "物流", "误流": "物流",
}

// commonWords are English words never corrected, though no example
// holds them.
var commonWords = []string{"please", "could", "would", "should", "thanks", "thank", "hello", "there", "where", "what", "when", "this", "that", "with", "from", "your", "just", "then", "also", "some", "like", "want", "need", "make", "more", "less", "much", "very", "really", "okay", "yeah", "sure", "mall", "home", "work", "school", "park", "hotel", "station", "airport"}

// speller corrects near-miss words.
type speller struct {
	words map[string]int // the English words of the configuration, with how often each is used
	list  []string       // the same, sorted, 4 letters or more
}

// newSpeller learns the English words of the configurations' labels,
// keywords, examples and slot values, and the polarity cue words.
func newSpeller(cfgs ...*Config) *speller {
	sp := &speller{words: map[string]int{}}
	add := func(s string) {
		for _, w := range latinWords(intent.Normalize(s)) {
			sp.words[w]++
		}
	}
	for _, c := range cfgs {
		if c == nil {
			continue
		}
		for _, in := range c.Domain.Intents {
			add(in.Label)
			for _, k := range append(slices.Clone(in.Keywords), in.Examples...) {
				add(k)
			}
		}
		for _, s := range c.Forms.Slots {
			for _, ws := range s.Values {
				for _, w := range ws {
					add(w)
				}
			}
		}
	}
	for _, w := range append(slices.Clone(allCues), commonWords...) {
		add(w)
	}
	for w := range sp.words {
		if len(w) >= 4 {
			sp.list = append(sp.list, w)
		}
	}
	slices.Sort(sp.list)
	return sp
}

// latinWords are the runs of ASCII letters in text.
func latinWords(text string) []string {
	return strings.FieldsFunc(text, func(r rune) bool { return !(r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '\'')) })
}

// homophone returns norm with the homophones of the table corrected, and
// what was changed ("车创 → 车窗"); norm itself when nothing was, or when
// the correction would turn what was asked round.
func homophone(norm string) (string, []string) {
	out := norm
	var fixes []string
	for _, wrong := range homophoneKeys {
		if strings.Contains(out, wrong) {
			out = strings.ReplaceAll(out, wrong, homophones[wrong])
			fixes = append(fixes, wrong+" → "+homophones[wrong])
		}
	}
	if out == norm || flipsPolarity(norm, out) {
		return norm, nil
	}
	return out, fixes
}

// homophoneKeys are the near-misses of homophones, longest first.
var homophoneKeys = sortedKeys(homophones)

// correct returns norm with its English near-miss words corrected, and
// what was changed ("opne → open"); norm itself when nothing was, or when
// the correction would turn what was asked round.
func (sp *speller) correct(norm string) (string, []string) {
	out := norm
	var fixes []string
	if sp != nil {
		var b strings.Builder
		last := 0
		for i := 0; i < len(out); {
			if !isASCIILetter(out[i]) {
				i++
				continue
			}
			j := i
			for j < len(out) && isASCIILetter(out[j]) {
				j++
			}
			if w := out[i:j]; len(w) >= 4 && sp.words[w] == 0 {
				if fix := sp.nearest(w); fix != "" {
					b.WriteString(out[last:i])
					b.WriteString(fix)
					last = j
					fixes = append(fixes, w+" → "+fix)
				}
			}
			i = j
		}
		b.WriteString(out[last:])
		out = b.String()
	}
	if out == norm || flipsPolarity(norm, out) {
		return norm, nil
	}
	return out, fixes
}

// nearest is the known word closest to w: at most one edit away (two
// for a word of eight letters or more); of words as close, the one the
// configuration uses most ("windw" is "window", not "wind"), none when
// that is a tie too.
func (sp *speller) nearest(w string) string {
	limit := 1
	if len(w) >= 8 {
		limit = 2
	}
	best, bestD, tie := "", limit+1, false
	for _, c := range sp.list {
		if d := len(c) - len(w); d > limit || -d > limit {
			continue
		}
		switch d := edlib.OSADamerauLevenshteinDistance(w, c); {
		case d < bestD, d == bestD && sp.words[c] > sp.words[best]:
			best, bestD, tie = c, d, false
		case d == bestD && sp.words[c] == sp.words[best]:
			tie = true
		}
	}
	if tie {
		return ""
	}
	return best
}

// flipsPolarity reports whether the corrected text names a side of a pair
// that the original did not, where the original named the other.
func flipsPolarity(orig, fixed string) bool {
	for _, p := range polarPairs {
		a, b := readPolarity(p, orig), readPolarity(p, fixed)
		if (b.pos && !a.pos && a.neg) || (b.neg && !a.neg && a.pos) || (b.negated != a.negated) {
			return true
		}
	}
	return false
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// sortedKeys are m's keys, longest first, then in order.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	return keys
}
