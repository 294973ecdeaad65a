package intent

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Rules are the checks made before routing, all data:
// dialog acts, stop phrases, social routing and follow-up rewrites.
type Rules struct {
	// Acts are tried in order; the first that matches names the turn's
	// dialog act (affirm, deny, cancel, modify, chitchat, request, inform…).
	Acts []ActRule `yaml:"dialog_acts" json:"dialog_acts"`
	// DefaultAct is the act when none matches. Default "unknown".
	DefaultAct string `yaml:"default_act" json:"default_act"`
	// Stop phrases end the active task (不用了, 算了, 停止…); they stop
	// nothing when there is no active task.
	Stop Phrases `yaml:"stop" json:"stop"`
	// Social says which turns are small talk rather than tasks.
	Social SocialRules `yaml:"social" json:"social"`
	// Rewrite rules complete short follow-ups from the session.
	Rewrite []RewriteRule `yaml:"rewrite" json:"rewrite"`
}

// Phrases match normalized text three ways.
type Phrases struct {
	// Exact phrases equal the whole text, punctuation at either end aside.
	Exact []string `yaml:"exact,omitempty" json:"exact,omitempty"`
	// Contains phrases occur anywhere in it (at word boundaries for Latin
	// words).
	Contains []string `yaml:"contains,omitempty" json:"contains,omitempty"`
	// Regex patterns (Go syntax) match it; their named groups become slots
	// for a rewrite template.
	Regex []string `yaml:"regex,omitempty" json:"regex,omitempty"`
}

// ActRule names a dialog act by the phrases that show it.
type ActRule struct {
	// Act is the dialog act's name.
	Act string `yaml:"act" json:"act"`
	// Phrases show the act.
	Phrases `yaml:",inline" json:",inline"`
}

// SocialRules route small talk away from tasks.
type SocialRules struct {
	// Task phrases make a text a task, never social; so does any intent
	// keyword.
	Task Phrases `yaml:"task" json:"task"`
	// Short social patterns (你好, 谢谢, hi).
	Short Phrases `yaml:"short" json:"short"`
	// Capability questions (你能做什么, what can you do).
	Capability Phrases `yaml:"capability" json:"capability"`
	// Open chit-chat (讲个笑话, how are you).
	Open Phrases `yaml:"open" json:"open"`
	// FollowUpRunes: right after a social turn, a text of at most this many
	// runes stays social. 0 turns it off.
	FollowUpRunes int `yaml:"follow_up_runes" json:"follow_up_runes"`
}

// RewriteRule turns a short follow-up into a full command:
// "低一点" while the air conditioning is the current intent becomes
// "把空调调到 21 度".
type RewriteRule struct {
	// Name names the rule in Understanding.RewriteRule.
	Name string `yaml:"name" json:"name"`
	// Intents: the session's current intent must be one of these; empty
	// means any.
	Intents []string `yaml:"intents,omitempty" json:"intents,omitempty"`
	// When the text matches these phrases the rule applies.
	When Phrases `yaml:"when" json:"when"`
	// Require names slots that must be known (from the session or the
	// regex's named groups), or the rule does not apply.
	Require []string `yaml:"require,omitempty" json:"require,omitempty"`
	// Adjust adds to numeric slots before the template is filled:
	// {temperature: -1}.
	Adjust map[string]float64 `yaml:"adjust,omitempty" json:"adjust,omitempty"`
	// Template is the rewritten text; {name} is replaced by slot name,
	// {text} by the input.
	Template string `yaml:"template" json:"template"`
}

// placeholder is a {name} in a rewrite template.
var placeholder = regexp.MustCompile(`\{\w+\}`)

// phraseMatcher is a compiled Phrases.
type phraseMatcher struct {
	exact    map[string]string
	contains *automaton
	regex    []*regexp.Regexp
}

func compilePhrases(p Phrases) (*phraseMatcher, error) {
	m := &phraseMatcher{exact: map[string]string{}}
	for _, s := range p.Exact {
		m.exact[trimPunct(Normalize(s))] = s
	}
	var contains []string
	for _, s := range p.Contains {
		if s = Normalize(s); s != "" {
			contains = append(contains, s)
		}
	}
	m.contains = newAutomaton(contains)
	for _, s := range p.Regex {
		re, err := regexp.Compile(s)
		if err != nil {
			return nil, fmt.Errorf("%w: regex %q: %v", ErrConfig, s, err)
		}
		m.regex = append(m.regex, re)
	}
	return m, nil
}

// match reports whether normalized text matches, what matched, and the
// regex's named groups.
func (m *phraseMatcher) match(text string) (string, map[string]string, bool) {
	if s, ok := m.exact[trimPunct(text)]; ok {
		return s, nil, true
	}
	if ms := m.contains.find(text); len(ms) > 0 {
		return m.contains.patterns[ms[0].pattern], nil, true
	}
	for _, re := range m.regex {
		sub := re.FindStringSubmatch(text)
		if sub == nil {
			continue
		}
		groups := map[string]string{}
		for i, name := range re.SubexpNames() {
			if name != "" && sub[i] != "" {
				groups[name] = sub[i]
			}
		}
		return sub[0], groups, true
	}
	return "", nil, false
}

func trimPunct(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) || unicode.IsSymbol(r) })
}

// rules is a compiled Rules.
type rules struct {
	acts       []compiledAct
	defaultAct string
	stop       *phraseMatcher
	task       *phraseMatcher
	short      *phraseMatcher
	capability *phraseMatcher
	open       *phraseMatcher
	followUp   int
	rewrite    []compiledRewrite
}

type compiledAct struct {
	act string
	m   *phraseMatcher
}

type compiledRewrite struct {
	RewriteRule
	when *phraseMatcher
}

func newRules(r Rules) (*rules, error) {
	c := &rules{defaultAct: r.DefaultAct, followUp: r.Social.FollowUpRunes}
	if c.defaultAct == "" {
		c.defaultAct = "unknown"
	}
	var err error
	compile := func(p Phrases) *phraseMatcher {
		if err != nil {
			return nil
		}
		var m *phraseMatcher
		m, err = compilePhrases(p)
		return m
	}
	for _, a := range r.Acts {
		c.acts = append(c.acts, compiledAct{a.Act, compile(a.Phrases)})
	}
	c.stop = compile(r.Stop)
	c.task = compile(r.Social.Task)
	c.short = compile(r.Social.Short)
	c.capability = compile(r.Social.Capability)
	c.open = compile(r.Social.Open)
	for _, rw := range r.Rewrite {
		c.rewrite = append(c.rewrite, compiledRewrite{rw, compile(rw.When)})
	}
	if err != nil {
		return nil, fmt.Errorf("compile rules: %w", err)
	}
	return c, nil
}

// act returns the dialog act of normalized text.
func (r *rules) act(text string) string {
	for _, a := range r.acts {
		if _, _, ok := a.m.match(text); ok {
			return a.act
		}
	}
	return r.defaultAct
}

// social decides whether normalized text is small talk, and says why:
// not when it looks like a task; yes for a short social phrase, a
// question about what the assistant can do, open chit-chat, or a short
// follow-up of a social turn.
func (r *rules) social(text string, looksLikeTask bool, lastSocial bool) (bool, string) {
	if _, _, ok := r.task.match(text); ok || looksLikeTask {
		return false, "looks like a task"
	}
	for _, c := range []struct {
		m    *phraseMatcher
		kind string
	}{{r.short, "short social"}, {r.capability, "capability"}, {r.open, "open chit-chat"}} {
		if what, _, ok := c.m.match(text); ok {
			return true, c.kind + ": " + what
		}
	}
	if lastSocial && r.followUp > 0 && utf8.RuneCountInString(text) <= r.followUp {
		return true, "short follow-up of a social turn"
	}
	return false, "no social pattern"
}

// rewriteTurn applies the first rewrite rule that fits; it returns the new
// text, the rule's name and the slots used, or ok false.
func (r *rules) rewriteTurn(text, intent string, slots map[string]string) (string, string, map[string]string, bool) {
	for _, rw := range r.rewrite {
		if len(rw.Intents) > 0 && !slices.Contains(rw.Intents, intent) {
			continue
		}
		_, groups, ok := rw.when.match(text)
		if !ok {
			continue
		}
		vals := make(map[string]string, len(slots)+len(groups)+1)
		for k, v := range slots {
			vals[k] = v
		}
		for k, v := range groups {
			vals[k] = v
		}
		if !hasAll(vals, rw.Require) {
			continue
		}
		adjusted := true
		for k, d := range rw.Adjust {
			n, err := strconv.ParseFloat(vals[k], 64)
			if err != nil {
				adjusted = false
				break
			}
			vals[k] = strconv.FormatFloat(n+d, 'f', -1, 64)
		}
		if !adjusted {
			continue
		}
		out := placeholder.ReplaceAllStringFunc(rw.Template, func(p string) string {
			name := p[1 : len(p)-1]
			if name == "text" {
				return text
			}
			if v, ok := vals[name]; ok {
				return v
			}
			return p
		})
		return out, rw.Name, vals, true
	}
	return "", "", nil, false
}

func hasAll(vals map[string]string, keys []string) bool {
	for _, k := range keys {
		if vals[k] == "" {
			return false
		}
	}
	return true
}
