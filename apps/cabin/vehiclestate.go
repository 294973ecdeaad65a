package cabin

import (
	"cmp"
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/loomkit/loom/intent"
)

// bareStopWords, said alone with no task going on, mean the music: "停",
// "stop". The pause tool reads the car, so with nothing playing the reply
// says so instead of saying the music was paused.
var bareStopWords = []string{"停", "停下", "停下来", "停一下", "停止", "停止播放", "别放了", "暂停", "stop", "stop it", "stop that", "pause", "pause it", "halt"}

// bareStop turns a bare stop word into pausing the music.
func (a *App) bareStop(d *Debug) {
	t := strings.Trim(intent.Normalize(cmp.Or(d.Rewritten, d.Corrected, d.Text)), " ,.!?，。！？~")
	if len(d.Clauses) > 0 || d.Route == nil || !slices.Contains(bareStopWords, t) || !a.cat.known(intentPauseMusic) {
		return
	}
	r := d.Route
	r.Intent, r.Decision, r.Reason = intentPauseMusic, intent.Execute, "a bare stop word: the music"
	r.Candidates = first(r.Candidates, intentPauseMusic)
}

// intentPauseMusic is the intent a bare stop word runs.
const intentPauseMusic = "cabin_pause_music"

// slotTemperatureChange holds a change said relative to the car's
// temperature ("调低两度": "-2"); the step's temperature is worked out
// from the car when the step is about to run.
const slotTemperatureChange = "temperature_change"

var (
	// zhChange: a direction, then how many degrees ("调低两度", "升高3度",
	// "调低一点"); "调低到20度" is a value, not a change.
	zhChange = regexp.MustCompile(`(调低|降低|下调|调小|低|降|减|调高|升高|提高|上调|调大|高|升|加)\s*(?:个)?\s*([0-9]+(?:\.[0-9])?|[一二两三四五六七八九十]{1,2})\s*(?:度|℃)|(调低|降低|调高|升高|低|高|暖和|凉快|热|凉)\s*(?:一点|一些|点)`)
	// enChange: a direction and a number of degrees, with no value
	// ("turn the temperature down 2 degrees", "raise it by 3 degrees").
	enChange  = regexp.MustCompile(`\b(down|lower|decrease|reduce|drop|cooler|colder|up|raise|increase|warmer|hotter|higher)\b`)
	enDegrees = regexp.MustCompile(`\b([0-9]+(?:\.[0-9])?|one|two|three|four|five|six|seven|eight|nine|ten)\s*(?:degrees?|deg|°c?)(?:\s|$|[,.!?])`)
	enValue   = regexp.MustCompile(`\b(?:to|at)\s+[0-9]`)
	// enWarmer: warmer or cooler without a number ("make it warmer").
	enWarmer  = regexp.MustCompile(`\b(warmer|hotter|cooler|colder)\b|\bheat (up|down)\b`)
	enNumbers = map[string]string{"one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8", "nine": "9", "ten": "10"}
)

// relativeChange reads a temperature change from normalized text: the
// signed number of degrees, or false when the text says a value or no
// change.
func relativeChange(norm string) (float64, bool) {
	if m := zhChange.FindStringSubmatch(norm); m != nil && !strings.Contains(norm, "到") {
		dir, n := m[1], m[2]
		if dir == "" {
			dir, n = m[3], "1"
		}
		x, ok := parseNumber(n)
		if !ok || x <= 0 {
			return 0, false
		}
		if strings.ContainsAny(dir, "低降减小下凉") {
			x = -x
		}
		return x, true
	}
	if m := enWarmer.FindStringSubmatch(norm); m != nil && !enDegrees.MatchString(norm) && !enValue.MatchString(norm) {
		if m[1] == "cooler" || m[1] == "colder" || m[1] == "down" {
			return -1, true
		}
		return 1, true // "make it warmer", "turn the heat up": a degree
	}
	dir := enChange.FindString(norm)
	m := enDegrees.FindStringSubmatch(norm)
	if dir == "" || m == nil || enValue.MatchString(norm) {
		return 0, false
	}
	x, ok := parseNumber(cmp.Or(enNumbers[m[1]], m[1]))
	if !ok || x <= 0 {
		return 0, false
	}
	switch dir {
	case "down", "lower", "decrease", "reduce", "drop", "cooler", "colder":
		x = -x
	}
	return x, true
}

// applyChange works out the temperature of step st from the car's and
// the change said; one out of range is explained, with the range, and
// asked for.
func (a *App) applyChange(ctx context.Context, s *State, st *Step) {
	change := st.Slots[slotTemperatureChange]
	delete(st.Slots, slotTemperatureChange)
	delete(st.Slots, "temperature")
	delta, err := strconv.ParseFloat(change, 64)
	if err != nil {
		return
	}
	v, err := a.store.Vehicle(ctx, s.Session.VehicleID)
	if err != nil {
		a.log.WarnContext(ctx, "cabin: reading the car for a temperature change; asking for the temperature", "vehicle", s.Session.VehicleID, "err", err)
		return
	}
	to := v.AC.Temperature + delta
	value := strconv.FormatFloat(to, 'f', -1, 64)
	if t := a.slots.slots["temperature"]; t != nil && t.Min != nil && t.Max != nil && (to < *t.Min || to > *t.Max) {
		s.Turn.Note = a.rangeNote("temperature", value, *t.Min, *t.Max)
		return
	}
	st.Slots["temperature"] = value
}

// ordinals pick an option of a clarify question by its place.
var ordinals = [][]string{
	{"第一个", "第一种", "前者", "前面那个", "first", "the first", "first one", "the first one", "former", "the former"},
	{"第二个", "第二种", "后者", "后面那个", "second", "the second", "second one", "the second one", "latter", "the latter", "the other", "the other one"},
}

// pickOption is the option of a clarify question the reply picks, or "":
// by the side its words name ("打开" for open or close), by the option's
// label ("解锁车门"), or by its place ("第二个", "the first"). A reply that
// is a request of its own ("打开空调" to "open or close the windows?")
// picks none.
func (a *App) pickOption(ctx context.Context, options []string, norm string) string {
	t := strings.Trim(norm, " ,.!?，。！？~")
	if !onlyCues(t) { // it names a thing: is it another one?
		if r, err := a.engine.Route(ctx, norm); err == nil && r.Decision == intent.Execute && a.cat.known(r.Intent) && !slices.Contains(options, r.Intent) {
			if p, _, ok := opposite(r.Intent); !ok || (!slices.Contains(options, p.pos) && !slices.Contains(options, p.neg)) {
				return ""
			}
		}
	}
	var picked []string
	for i, words := range ordinals {
		if i < len(options) && slices.Contains(words, t) {
			return options[i]
		}
	}
	for _, id := range options {
		if in := a.cat.intents[id]; in != nil && in.Label != "" && strings.Contains(t, intent.Normalize(in.Label)) {
			picked = append(picked, id)
		}
	}
	if len(picked) == 1 {
		return picked[0]
	}
	picked = nil
	for _, id := range options {
		if got, v := guardPolarity(id, t); got == id && v == polaritySure {
			picked = append(picked, id)
		}
	}
	if len(picked) == 1 {
		return picked[0]
	}
	return ""
}

// fillers are words a short answer says besides what it picks.
var fillers = []string{"吧", "了", "一下", "掉", "帮我", "请", "把", "它", "都", "please", "it", "them", "all", "the", "just"}

// onlyCues reports whether text says nothing but cue words and fillers:
// "关掉吧", "open it".
func onlyCues(text string) bool {
	t := " " + text + " "
	for _, w := range slices.Concat(allCues, negators, fillers) {
		if detectLanguage(w) == localeEnglish {
			t = strings.ReplaceAll(t, " "+w+" ", "  ")
		} else {
			t = strings.ReplaceAll(t, w, " ")
		}
	}
	return strings.TrimSpace(t) == ""
}
