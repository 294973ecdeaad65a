package cabin

import (
	"cmp"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/loomkit/loom/intent"
)

// slotReader reads an intent's slots from text, as forms.yml says.
type slotReader struct {
	slots map[string]*slotType
	forms map[string]formSpec
}

// slotType is a compiled SlotSpec.
type slotType struct {
	slotSpec
	name     string
	patterns []*regexp.Regexp
	synonyms []synonym // longest word first
	ignore   map[string]bool
}

type synonym struct{ word, value string }

// newSlotReader compiles the slots of f; the config was validated, so the
// patterns compile.
func newSlotReader(f Forms) *slotReader {
	r := &slotReader{slots: map[string]*slotType{}, forms: f.Forms}
	for name, spec := range f.Slots {
		t := &slotType{slotSpec: spec, name: name, ignore: map[string]bool{}}
		if t.Type == "" {
			t.Type = slotText
		}
		for _, p := range spec.Patterns {
			t.patterns = append(t.patterns, regexp.MustCompile(p))
		}
		for value, words := range spec.Values {
			t.synonyms = append(t.synonyms, synonym{intent.Normalize(value), value})
			for _, w := range words {
				t.synonyms = append(t.synonyms, synonym{intent.Normalize(w), value})
			}
		}
		slices.SortFunc(t.synonyms, func(a, b synonym) int {
			return cmp.Or(cmp.Compare(len(b.word), len(a.word)), cmp.Compare(a.word, b.word))
		})
		for _, w := range spec.Ignore {
			t.ignore[intent.Normalize(w)] = true
		}
		r.slots[name] = t
	}
	return r
}

// names returns the slots of intent's form, required first.
func (r *slotReader) names(intentID string) []string {
	f := r.forms[intentID]
	return append(slices.Clone(f.Required), f.Optional...)
}

// read returns the slots of intent's form found in text.
// A temperature said as a change ("调低两度") is read as
// slotTemperatureChange, to be worked out from the car's.
func (r *slotReader) read(intentID, text string) map[string]string {
	names := r.names(intentID)
	out := r.extract(text, names)
	if slices.Contains(names, "temperature") {
		if d, ok := relativeChange(intent.Normalize(text)); ok {
			delete(out, "temperature")
			out[slotTemperatureChange] = strconv.FormatFloat(d, 'f', -1, 64)
		}
	}
	return out
}

// extract returns the named slots found in text.
func (r *slotReader) extract(text string, names []string) map[string]string {
	norm := intent.Normalize(text)
	out := map[string]string{}
	for _, n := range names {
		if t := r.slots[n]; t != nil {
			if v, ok := t.find(norm); ok {
				out[n] = v
			}
		}
	}
	return out
}

// answer reads slot name from a whole reply to the question for it: its
// patterns first, then, for a free-text slot, the reply itself.
func (r *slotReader) answer(name, text string) (string, bool) {
	t := r.slots[name]
	if t == nil {
		return "", false
	}
	norm := intent.Normalize(text)
	if v, ok := t.find(norm); ok {
		return v, true
	}
	if t.FreeText && !question(norm) {
		return t.normalize(norm)
	}
	return "", false
}

// questionWords make a reply a question, not a free-text value: asked
// "去哪里？", "今天天气怎么样" is no destination.
var questionWords = regexp.MustCompile(`[?？]|怎么样|怎么|什么|为什么|多少|几点|哪个|吗$|呢$|^(?:how|what|why|when|who|which|is|are|can|could|do|does)\b`)

// question reports whether a normalized reply is a question.
func question(norm string) bool { return questionWords.MatchString(strings.TrimSpace(norm)) }

// clean normalizes given values (from fill-slots or a model) by their slot
// types, dropping the ones that do not fit.
func (r *slotReader) clean(given map[string]string) map[string]string {
	out := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(given)) {
		t := r.slots[k]
		if t == nil {
			out[k] = strings.TrimSpace(given[k]) // a slot no form knows: kept for the tools
			continue
		}
		if v, ok := t.normalize(intent.Normalize(given[k])); ok {
			out[k] = v
		}
	}
	return out
}

// fresh reports whether slot name is not carried from one request to the
// next of the same intent.
func (r *slotReader) fresh(name string) bool {
	t := r.slots[name]
	return t != nil && t.Fresh
}

// missing lists the required slots of intent not in slots.
func (r *slotReader) missing(intentID string, slots map[string]string) []string {
	var out []string
	for _, s := range r.forms[intentID].Required {
		if slots[s] == "" {
			out = append(out, s)
		}
	}
	return out
}

// withDefaults fills the form's defaults for optional slots not given.
func (r *slotReader) withDefaults(intentID string, slots map[string]string) map[string]string {
	out := maps.Clone(slots)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range r.forms[intentID].Defaults {
		if out[k] == "" {
			out[k] = v
		}
	}
	return out
}

// find reads the slot from normalized text.
func (t *slotType) find(text string) (string, bool) {
	switch t.Type {
	case slotEnum:
		return t.word(text)
	case slotBool:
		for _, re := range t.patterns {
			if re.MatchString(text) {
				return "true", true
			}
		}
		return "", false
	}
	for _, re := range t.patterns {
		m := re.FindStringSubmatch(text)
		if m == nil {
			continue
		}
		if i := re.SubexpIndex(t.name); i > 0 && m[i] != "" {
			if v, ok := t.normalize(m[i]); ok {
				return v, true
			}
		}
	}
	return t.word(text) // a number may be said in words: "一半"
}

// word is the value of the longest of the slot's words in text.
func (t *slotType) word(text string) (string, bool) {
	for _, s := range t.synonyms {
		if containsWord(text, s.word) {
			return s.value, true
		}
	}
	return "", false
}

// normalize checks and canonicalizes a value of the slot.
func (t *slotType) normalize(v string) (string, bool) {
	v = strings.TrimFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) })
	if v == "" || t.ignore[v] {
		return "", false
	}
	switch t.Type {
	case slotNumber:
		n, ok := parseNumber(v)
		if !ok {
			for _, s := range t.synonyms {
				if s.word == v {
					n, ok = parseNumber(s.value)
					break
				}
			}
		}
		if !ok || (t.Min != nil && n < *t.Min) || (t.Max != nil && n > *t.Max) {
			return "", false
		}
		return strconv.FormatFloat(n, 'f', -1, 64), true
	case slotEnum:
		for _, s := range t.synonyms {
			if s.word == v {
				return s.value, true
			}
		}
		return "", false
	case slotBool:
		switch v {
		case "true", "yes", "1", "是", "对":
			return "true", true
		case "false", "no", "0", "否", "不":
			return "false", true
		}
		return "", false
	}
	if t.Upper {
		v = strings.ToUpper(v)
	}
	return v, true
}

// parseNumber reads an Arabic number or a Chinese one below 1000
// ("二十二", "两", "十五").
func parseNumber(s string) (float64, bool) {
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		return n, true
	}
	digits := map[rune]int{'零': 0, '一': 1, '二': 2, '两': 2, '三': 3, '四': 4, '五': 5, '六': 6, '七': 7, '八': 8, '九': 9}
	total, cur, seen := 0, 0, false
	for _, r := range s {
		seen = true
		if d, ok := digits[r]; ok {
			cur = d
			continue
		}
		unit := map[rune]int{'十': 10, '百': 100}[r]
		if unit == 0 {
			return 0, false
		}
		if cur == 0 {
			cur = 1
		}
		total += cur * unit
		cur = 0
	}
	return float64(total + cur), seen
}

// containsWord reports whether word occurs in text; where word starts or
// ends with a Latin letter or digit, only at a word boundary there ("rear"
// is not in "rearview", "后排" is in "把后排车窗关了").
func containsWord(text, word string) bool {
	if word == "" {
		return false
	}
	for from := 0; ; {
		i := strings.Index(text[from:], word)
		if i < 0 {
			return false
		}
		i += from
		end := i + len(word)
		if (!latin(word[0]) || i == 0 || !latin(text[i-1])) && (!latin(word[len(word)-1]) || end == len(text) || !latin(text[end])) {
			return true
		}
		from = i + 1
	}
}

func latin(b byte) bool {
	return b < 0x80 && (unicode.IsLetter(rune(b)) || unicode.IsDigit(rune(b)))
}

// outOfRange finds a number said for one of the named slots that is
// outside the slot's range ("35度" for a temperature of 16 to 32): the
// slot, the number and its bounds. A whole reply that is only a number
// counts for the first of names.
func (r *slotReader) outOfRange(text string, names []string) (name, value string, lo, hi float64, ok bool) {
	norm := intent.Normalize(text)
	if _, change := relativeChange(norm); change {
		return "", "", 0, 0, false // "调低两度": a change, not a value
	}
	for i, n := range names {
		t := r.slots[n]
		if t == nil || t.Type != slotNumber || t.Min == nil || t.Max == nil {
			continue
		}
		var said []string
		for _, re := range t.patterns {
			if m := re.FindStringSubmatch(norm); m != nil {
				if j := re.SubexpIndex(t.name); j > 0 && m[j] != "" {
					said = append(said, m[j])
				}
			}
		}
		if i == 0 {
			said = append(said, strings.TrimSpace(norm))
		}
		for _, v := range said {
			if x, okNum := parseNumber(v); okNum && (x < *t.Min || x > *t.Max) {
				return n, strconv.FormatFloat(x, 'f', -1, 64), *t.Min, *t.Max, true
			}
		}
	}
	return "", "", 0, 0, false
}
