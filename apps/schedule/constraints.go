package schedule

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Avoid is a time the student wants kept free of tasks: a day of the week,
// whole or a range of its slots ("周三晚上" is Wednesday, slots 9–12).
// Avoids are soft for the optimiser's objective (a task already there is
// penalised, so moving it off gains) and hard for its proposals (no
// candidate puts a task there).
type Avoid struct {
	// Day is the day of the week: 1 = Monday … 7 = Sunday.
	Day int `json:"day_of_week" jsonschema:"minimum=1,maximum=7"`
	// From and To are the first and last slot kept free, from 1 to 12;
	// both 0 (or 1 and 12) mean the whole day.
	From int `json:"from_slot,omitempty" jsonschema:"minimum=0,maximum=12"`
	To   int `json:"to_slot,omitempty" jsonschema:"minimum=0,maximum=12"`
}

// span returns the slots kept free, from 0, half open.
func (a Avoid) span() (int, int) {
	from, to := a.From, a.To
	if from <= 0 && to <= 0 {
		return 0, SlotsPerDay
	}
	from = min(max(from, 1), SlotsPerDay)
	to = min(max(to, from), SlotsPerDay)
	return from - 1, to
}

// whole reports whether the whole day is kept free.
func (a Avoid) whole() bool {
	f, t := a.span()
	return f == 0 && t == SlotsPerDay
}

// mask is the avoided slots of the day as bits (slot k, from 0, is bit k).
func (a Avoid) mask() uint16 {
	f, t := a.span()
	var m uint16
	for k := f; k < t; k++ {
		m |= 1 << k
	}
	return m
}

// String says the avoid for people: "周三晚上", "周五第3-5节", "周日全天".
// parseAvoids reads a list of them back as they were.
func (a Avoid) String() string {
	day := weekdayName(a.Day)
	if a.whole() {
		return day + "全天"
	}
	f, t := a.span()
	for _, p := range periods {
		if p.from == f && p.to == t {
			return day + p.name
		}
	}
	if t-f == 1 {
		return fmt.Sprintf("%s第%d节", day, f+1)
	}
	return fmt.Sprintf("%s第%d-%d节", day, f+1, t)
}

func weekdayName(d int) string {
	if d >= 1 && d <= 7 {
		return weekdayNames[d]
	}
	return fmt.Sprintf("第%d天", d)
}

// periods are the parts of a day people name, with their slots (from 0,
// half open).
var periods = []struct {
	name     string
	from, to int
}{{"上午", 0, 4}, {"下午", 4, 8}, {"晚上", 8, 12}, {"白天", 0, 8}}

// avoidMasks folds avoids into one mask of slots per day of the week.
func avoidMasks(avoid []Avoid) [8]uint16 {
	var m [8]uint16
	for _, a := range avoid {
		if a.Day >= 1 && a.Day <= 7 {
			m[a.Day] |= a.mask()
		}
	}
	return m
}

// normalizeAvoids merges avoids into the fewest, one run of slots each,
// ordered by day and slot: overlapping or adjacent ranges of a day join,
// and a whole day swallows the rest.
func normalizeAvoids(avoid []Avoid) []Avoid {
	masks := avoidMasks(avoid)
	var out []Avoid
	for d := 1; d <= 7; d++ {
		m := masks[d]
		if m == 0 {
			continue
		}
		if m == 1<<SlotsPerDay-1 {
			out = append(out, Avoid{Day: d})
			continue
		}
		for k := 0; k < SlotsPerDay; {
			if m&(1<<k) == 0 {
				k++
				continue
			}
			j := k
			for j < SlotsPerDay && m&(1<<j) != 0 {
				j++
			}
			out = append(out, Avoid{Day: d, From: k + 1, To: j})
			k = j
		}
	}
	return out
}

// removeAvoids takes from avoid the slots of drop.
func removeAvoids(avoid, drop []Avoid) []Avoid {
	masks, off := avoidMasks(avoid), avoidMasks(drop)
	var rest []Avoid
	for d := 1; d <= 7; d++ {
		m := masks[d] &^ off[d]
		for k := range SlotsPerDay {
			if m&(1<<k) != 0 {
				rest = append(rest, Avoid{Day: d, From: k + 1, To: k + 1})
			}
		}
	}
	return normalizeAvoids(rest)
}

// avoidList says avoids for people: "周三晚上、周日".
func avoidList(avoid []Avoid) string {
	names := make([]string, len(avoid))
	for i, a := range avoid {
		names[i] = a.String()
	}
	return strings.Join(names, "、")
}

// splitAvoids separates whole days (analyze_health's avoid_days_of_week)
// from ranges of slots (its avoid_times).
func splitAvoids(avoid []Avoid) (days []int, times []Avoid) {
	for _, a := range normalizeAvoids(avoid) {
		if a.whole() {
			days = append(days, a.Day)
		} else {
			times = append(times, a)
		}
	}
	return days, times
}

// joinAvoids is the inverse of splitAvoids.
func joinAvoids(days []int, times []Avoid) []Avoid {
	out := slices.Clone(times)
	for _, d := range days {
		out = append(out, Avoid{Day: d})
	}
	return normalizeAvoids(out)
}

// Tokens of a message that constraints are read from.
var (
	reDayCN    = regexp.MustCompile(`(?:周|星期|礼拜)([一二三四五六日天七末])`)
	reDayEN    = regexp.MustCompile(`\b(mon|tue|wed|thu|fri|sat|sun)(?:day|nesday|rsday|urday|sday|s|rs)?s?\b|\b(weekend)s?\b`)
	reEveryDay = regexp.MustCompile(`每天|天天|每日|every ?day|daily`)
	reSlots    = regexp.MustCompile(`(?:第\s*)?(\d{1,2})\s*(?:-|–|~|～|到|至)\s*(?:第\s*)?(\d{1,2})\s*节|第\s*(\d{1,2})\s*节|\b(?:slots?|periods?)\s*(\d{1,2})(?:\s*(?:-|–|to)\s*(\d{1,2}))?`)
	reClock    = regexp.MustCompile(`(\d{1,2})(?:[:：](\d{2})|点(半)?)?\s*(am|pm)?\s*(?:-|–|~|～|到|至|to|until)\s*(\d{1,2})(?:[:：](\d{2})|点(半)?)?\s*(am|pm)?`)
	rePeriod   = regexp.MustCompile(`全天|整天|一整天|\ball day\b|\bwhole day\b|上午|早上|早晨|清早|下午|午后|晚上|晚间|夜晚|傍晚|夜里|晚自习|白天|每晚|晚|\bmornings?\b|\bafternoons?\b|\bevenings?\b|\bnights?\b|\btonight\b`)
	reCNNum    = regexp.MustCompile(`([一二两三四五六七八九十]{1,3})(点|节)`)
)

var dayCN = map[string]int{"一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "日": 7, "天": 7, "七": 7}
var dayEN = map[string]int{"mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6, "sun": 7}

// cnNumber reads a Chinese number from 1 to 99 ("七", "十二", "二十").
func cnNumber(s string) int {
	digits := map[rune]int{'一': 1, '二': 2, '两': 2, '三': 3, '四': 4, '五': 5, '六': 6, '七': 7, '八': 8, '九': 9}
	r := []rune(s)
	n, tens := 0, false
	for i, c := range r {
		if c == '十' {
			tens = true
			if i == 0 {
				n = 1
			}
			n *= 10
			continue
		}
		n += digits[c]
	}
	if !tens && len(r) > 1 {
		return 0
	}
	return n
}

// token is a day, part of a day or time range found in a message.
type token struct {
	pos      int
	days     []int // a day token: its days
	from, to int   // a time token: slots from 0, half open
	period   bool  // the time is a part of the day (上午, evening)
}

// slotStarts are the minutes past midnight each slot starts at (a
// Chinese university's usual day: four in the morning, four in the
// afternoon, four in the evening); each lasts 45 minutes.
var slotStarts = [SlotsPerDay]int{8 * 60, 8*60 + 55, 10 * 60, 10*60 + 55, 14 * 60, 14*60 + 55, 16 * 60, 16*60 + 55, 19 * 60, 19*60 + 55, 20*60 + 50, 21*60 + 45}

// clockSlots returns the slots that overlap [a, b) minutes.
func clockSlots(a, b int) (int, int, bool) {
	from, to := -1, -1
	for k, st := range slotStarts {
		if st < b && st+45 > a {
			if from < 0 {
				from = k
			}
			to = k + 1
		}
	}
	return from, to, from >= 0
}

// tokens finds the days and times of text, in order.
func tokens(text string) []token {
	t := strings.ToLower(text)
	t = reCNNum.ReplaceAllStringFunc(t, func(m string) string {
		sub := reCNNum.FindStringSubmatch(m)
		if n := cnNumber(sub[1]); n > 0 {
			return strconv.Itoa(n) + sub[2]
		}
		return m
	})
	var out []token
	taken := make([]bool, len(t)+1)
	mark := func(loc []int) bool {
		for i := loc[0]; i < loc[1]; i++ {
			if taken[i] {
				return false
			}
		}
		for i := loc[0]; i < loc[1]; i++ {
			taken[i] = true
		}
		return true
	}
	for _, m := range reDayCN.FindAllStringSubmatchIndex(t, -1) {
		c := t[m[2]:m[3]]
		if c == "末" {
			out = append(out, token{pos: m[0], days: []int{6, 7}})
		} else {
			out = append(out, token{pos: m[0], days: []int{dayCN[c]}})
		}
		mark(m[:2])
	}
	for _, m := range reDayEN.FindAllStringSubmatchIndex(t, -1) {
		if m[2] < 0 { // weekend
			out = append(out, token{pos: m[0], days: []int{6, 7}})
		} else {
			out = append(out, token{pos: m[0], days: []int{dayEN[t[m[2]:m[3]]]}})
		}
		mark(m[:2])
	}
	for _, m := range reEveryDay.FindAllStringIndex(t, -1) {
		out = append(out, token{pos: m[0], days: []int{1, 2, 3, 4, 5, 6, 7}})
		mark(m)
	}
	for _, m := range reSlots.FindAllStringSubmatchIndex(t, -1) {
		num := func(k int) int {
			if m[2*k] < 0 {
				return 0
			}
			n, _ := strconv.Atoi(t[m[2*k]:m[2*k+1]])
			return n
		}
		a, b := num(1), num(2)
		switch {
		case num(3) > 0:
			a, b = num(3), num(3)
		case num(4) > 0:
			a, b = num(4), cmp.Or(num(5), num(4))
		}
		if a < 1 || b < a || b > SlotsPerDay || !mark(m[:2]) {
			continue
		}
		out = append(out, token{pos: m[0], from: a - 1, to: b})
	}
	for _, m := range rePeriod.FindAllStringIndex(t, -1) {
		w := t[m[0]:m[1]]
		tk := token{pos: m[0], period: true}
		switch {
		case strings.Contains("上午早上早晨清早", w) || strings.HasPrefix(w, "morning"):
			tk.from, tk.to = 0, 4
		case strings.Contains("下午午后", w) || strings.HasPrefix(w, "afternoon"):
			tk.from, tk.to = 4, 8
		case w == "白天":
			tk.from, tk.to = 0, 8
		case strings.Contains("全天整天一整天", w) || strings.HasSuffix(w, "day"):
			tk.from, tk.to = 0, SlotsPerDay
		case w == "每晚":
			out = append(out, token{pos: m[0], days: []int{1, 2, 3, 4, 5, 6, 7}})
			tk.pos++
			tk.from, tk.to = 8, 12
		default:
			tk.from, tk.to = 8, 12
		}
		if mark(m) {
			out = append(out, tk)
		}
	}
	for _, m := range reClock.FindAllStringSubmatchIndex(t, -1) {
		has := func(k int) bool { return m[2*k] >= 0 }
		str := func(k int) string {
			if !has(k) {
				return ""
			}
			return t[m[2*k]:m[2*k+1]]
		}
		// A clock needs a sign that it is one: a colon, 点, am or pm.
		if !has(2) && !has(4) && !strings.Contains(t[m[0]:m[1]], "点") && !has(8) {
			continue
		}
		if !mark(m[:2]) {
			continue
		}
		before := t[:m[0]]
		pm := strings.HasSuffix(strings.TrimSpace(before), "晚上") || strings.HasSuffix(strings.TrimSpace(before), "下午") || strings.Contains(str(4)+str(8), "pm")
		minutes := func(h, mm, half, ampm string) int {
			hh, _ := strconv.Atoi(h)
			mi, _ := strconv.Atoi(mm)
			if half != "" {
				mi = 30
			}
			if (pm || ampm == "pm") && hh < 12 || (ampm == "" && !pm && hh < 7) {
				hh += 12
			}
			return hh*60 + mi
		}
		a := minutes(str(1), str(2), str(3), str(4))
		b := minutes(str(5), str(6), str(7), str(8))
		if f, to, ok := clockSlots(a, b); ok && b > a {
			out = append(out, token{pos: m[0], from: f, to: to})
		}
	}
	slices.SortStableFunc(out, func(a, b token) int { return cmp.Compare(a.pos, b.pos) })
	return out
}

// parseAvoids reads the times a text names: each run of days ("周三和周日",
// "周三、周四") takes the parts of a day and time ranges that follow it
// until the next day ("周三晚上", "周五第3-4节", "Wednesday 7pm-9pm"); a
// day with none is the whole day; times before any day hold for every day.
// It reads what a text names, not whether the text wants it kept free:
// readConstraints does that for a request.
func parseAvoids(text string) []Avoid {
	var out []Avoid
	var group []int
	var times [][2]int
	var narrow [][2]int // clock and slot ranges, which replace a part of the day that holds them
	timed := false      // the group has its times; the next day starts a new one
	flush := func() {
		times = slices.DeleteFunc(times, func(p [2]int) bool {
			return slices.ContainsFunc(narrow, func(n [2]int) bool { return n != p && p[0] <= n[0] && n[1] <= p[1] })
		})
		days := group
		if len(days) == 0 {
			if len(times) == 0 {
				return
			}
			days = []int{1, 2, 3, 4, 5, 6, 7}
		}
		for _, d := range days {
			if len(times) == 0 {
				out = append(out, Avoid{Day: d})
			}
			for _, r := range times {
				out = append(out, Avoid{Day: d, From: r[0] + 1, To: r[1]})
			}
		}
		group, times, narrow, timed = nil, nil, nil, false
	}
	for _, tk := range tokens(text) {
		if tk.days != nil {
			if timed {
				flush()
			}
			group = append(group, tk.days...)
			continue
		}
		times = append(times, [2]int{tk.from, tk.to})
		if !tk.period {
			narrow = append(narrow, [2]int{tk.from, tk.to})
		}
		timed = true
	}
	flush()
	return normalizeAvoids(out)
}

// Words that make a day or time in a request one to keep free.
var (
	busyWords = []string{"不要", "不能", "不行", "不可以", "别", "不排", "不用排", "没空", "没时间", "有事", "打工", "兼职", "上班", "有课", "忙", "不方便",
		"避开", "空出", "留空", "空着", "除了", "不想", "休息", "排不了", "去不了"}
	busyWordsEN = []string{"not ", "no ", "don't", "dont", "do not", "busy", "avoid", "except", "keep", "work", "can't", "cannot", "can not", "off", "unavailable", "shift", "job"}
	// freeAgainWords lift a constraint: the day or time is open again.
	freeAgainWords   = []string{"可以了", "有空了", "没事了", "能排了", "可以排", "能排", "又可以", "不用避开", "不用空", "取消限制", "不用留"}
	freeAgainWordsEN = []string{"is fine now", "are fine now", "works now", "is ok now", "available again", "free again", "can schedule", "no longer busy"}
	// clearWords drop every constraint.
	clearWords = []string{"清除限制", "清空限制", "没有限制", "哪天都可以", "哪天都行", "随便排", "都可以排", "clear constraints", "no constraints", "any day is fine", "any time is fine"}
)

// constraintChange is what a message says about the times to keep free.
type constraintChange struct {
	add, drop []Avoid
	clear     bool
}

func (c constraintChange) empty() bool { return len(c.add) == 0 && len(c.drop) == 0 && !c.clear }

// apply returns the avoids after the change.
func (c constraintChange) apply(avoid []Avoid) []Avoid {
	if c.clear {
		avoid = nil
	}
	avoid = removeAvoids(avoid, c.drop)
	return normalizeAvoids(append(avoid, c.add...))
}

// readConstraints reads a request for the times the person wants kept free
// or open again, sentence by sentence: a sentence that names days or times
// with a word of being busy or unwilling ("周三晚上我要打工，不要排", "I
// work Wednesday evenings") adds them; one that says they are open again
// ("周三可以了") drops them; "清除限制" drops all.
func readConstraints(text string) constraintChange {
	var c constraintChange
	for _, s := range splitSentences(text) {
		l := strings.ToLower(s)
		if containsAny(l, clearWords) {
			c.clear = true
			continue
		}
		av := parseAvoids(s)
		if len(av) == 0 {
			continue
		}
		switch {
		case containsAny(l, freeAgainWords) || containsAny(l, freeAgainWordsEN):
			c.drop = append(c.drop, av...)
		case containsAny(l, busyWords) || containsAny(" "+l+" ", busyWordsEN):
			c.add = append(c.add, av...)
		}
	}
	return c
}

func splitSentences(text string) []string {
	return strings.FieldsFunc(text, func(r rune) bool { return strings.ContainsRune("。！？!?；;\n", r) })
}

func containsAny(s string, words []string) bool {
	return slices.ContainsFunc(words, func(w string) bool { return strings.Contains(s, w) })
}

// readAnswer reads an answer the agent asked for (a reason for a
// rejection, an answer to "which days?"): every day or time it names is
// to be kept free ("周三不行", "周三和周日"), unless it says they are open
// again ("周三可以了") or drops them all ("清除限制").
func readAnswer(text string) constraintChange {
	if reEditVerb.MatchString(strings.ToLower(text)) {
		return constraintChange{} // "把 X 挪到周五": an edit, not a time to keep free
	}
	c := readConstraints(text)
	if !c.empty() {
		return c
	}
	return constraintChange{add: parseAvoids(text)}
}
