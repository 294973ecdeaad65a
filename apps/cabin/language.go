package cabin

import (
	"context"
	"maps"
	"slices"
	"strings"
	"unicode"

	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/intent"
)

// One server speaks Chinese, English and both. Both embedded
// configurations are loaded: one intent engine learns the keywords,
// examples, dialog acts, stop phrases, small talk, rewrites and
// connectives of both, and the slot reader the patterns and words of
// both, so "帮我open the window" is understood as well as "帮我打开车窗" and
// "open the window". The language of each utterance picks the replies:
// a text with Chinese characters is answered in Chinese, one with English
// words in English, and one with neither ("35", "A123") in the language
// the session last spoke.

// otherLocale is the embedded locale loaded beside locale.
func otherLocale(locale string) string {
	if locale == localeEnglish {
		return localeChinese
	}
	return localeEnglish
}

// detectLanguage is the locale of text: LocaleChinese when it holds a
// Chinese character, LocaleEnglish when it holds an English word (a run
// of two or more letters that is not an order number such as A123), else
// "" (it does not tell).
func detectLanguage(text string) string {
	word, letters, digits := false, 0, false
	flush := func() {
		if letters >= 2 && !digits {
			word = true
		}
		letters, digits = 0, false
	}
	for _, r := range text {
		switch {
		case unicode.Is(unicode.Han, r):
			return localeChinese
		case r < unicode.MaxASCII && unicode.IsLetter(r):
			letters++
		case unicode.IsDigit(r):
			digits = true
		case r == '\'':
		default:
			flush()
		}
	}
	flush()
	if word {
		return localeEnglish
	}
	return ""
}

// bilingual makes a variant of the app per locale, whose replies,
// labels, questions and planning hints are that locale's; the engine, the
// slot reader, the tools and the store are shared.
func (a *App) bilingual(second *Config) {
	b := *a
	b.cfg, b.cat = second, newCatalog(second)
	b.replies = newReplies(second, b.cat)
	m := map[string]*App{a.locale: a, second.Domain.Locale: &b}
	a.variants, b.variants, b.locale = m, m, second.Domain.Locale
}

// pairs reports whether second has every intent of first, each with a
// form: the two can serve one server.
func pairs(first, second *Config) bool {
	for _, in := range first.Domain.Intents {
		if _, ok := second.Forms.Forms[in.ID]; !ok || !slices.ContainsFunc(second.Domain.Intents, func(s intentSpec) bool { return s.ID == in.ID }) {
			return false
		}
	}
	return first.Domain.Locale != second.Domain.Locale
}

// inLocale runs node f on the variant of the app for the language the
// session speaks.
func (a *App) inLocale(f func(*App, context.Context, State) (State, error)) graph.NodeFunc[State] {
	return func(ctx context.Context, s State) (State, error) {
		return f(a.variant(s.Session.Locale), ctx, s)
	}
}

// variant is the app speaking locale, or the app itself.
func (a *App) variant(locale string) *App {
	if v := a.variants[locale]; v != nil {
		return v
	}
	return a
}

// speaks is the locale a turn is answered in: the text's own, else the
// session's, else the app's.
func (a *App) speaks(text, session string) string {
	if l := detectLanguage(text); l != "" && a.variants[l] != nil {
		return l
	}
	if session != "" {
		return session
	}
	return a.locale
}

// mergeEngine is the engine configuration of both locales: each intent's
// keywords and examples from both, the rules and connectives of both;
// the routing thresholds are the first's.
func mergeEngine(first, second intent.Config) intent.Config {
	out := first
	out.Intents = slices.Clone(first.Intents)
	at := map[string]int{}
	for i, in := range out.Intents {
		at[in.ID] = i
	}
	for _, in := range second.Intents {
		i, ok := at[in.ID]
		if !ok {
			at[in.ID] = len(out.Intents)
			out.Intents = append(out.Intents, in)
			continue
		}
		m := &out.Intents[i]
		m.Keywords = append(slices.Clone(m.Keywords), in.Keywords...)
		m.Examples = append(slices.Clone(m.Examples), in.Examples...)
	}
	r, s := &out.Rules, second.Rules
	r.Acts = append(slices.Clone(r.Acts), s.Acts...)
	r.Stop = mergePhrases(r.Stop, s.Stop)
	r.Social.Task = mergePhrases(r.Social.Task, s.Social.Task)
	r.Social.Short = mergePhrases(r.Social.Short, s.Social.Short)
	r.Social.Capability = mergePhrases(r.Social.Capability, s.Social.Capability)
	r.Social.Open = mergePhrases(r.Social.Open, s.Social.Open)
	r.Rewrite = append(slices.Clone(r.Rewrite), s.Rewrite...)
	sp := &out.Split
	sp.Connectives = union(sp.Connectives, second.Split.Connectives)
	sp.Conditional = union(sp.Conditional, second.Split.Conditional)
	for _, c := range second.Split.Punctuation {
		if !strings.ContainsRune(sp.Punctuation, c) {
			sp.Punctuation += string(c)
		}
	}
	return out
}

func mergePhrases(a, b intent.Phrases) intent.Phrases {
	return intent.Phrases{Exact: union(a.Exact, b.Exact), Contains: union(a.Contains, b.Contains), Regex: union(a.Regex, b.Regex)}
}

// union is a with the strings of b it lacks, in order.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// mergeForms is the first locale's forms with the slot patterns, value
// words and ignored words of the second's added, so a slot is read in
// either language.
func mergeForms(first, second Forms) Forms {
	out := Forms{Forms: first.Forms, Slots: map[string]slotSpec{}}
	for name, f := range first.Slots {
		s, ok := second.Slots[name]
		if ok {
			f.Patterns = union(f.Patterns, s.Patterns)
			f.Ignore = union(f.Ignore, s.Ignore)
			f.FreeText = f.FreeText || s.FreeText
			if len(s.Values) > 0 {
				vals := maps.Clone(f.Values)
				if vals == nil {
					vals = map[string][]string{}
				}
				for v, words := range s.Values {
					vals[v] = union(vals[v], words)
				}
				f.Values = vals
			}
		}
		out.Slots[name] = f
	}
	return out
}
