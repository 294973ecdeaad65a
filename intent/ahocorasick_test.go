package intent

import (
	"slices"
	"testing"
)

func TestAutomaton(t *testing.T) {
	for _, c := range []struct {
		name     string
		patterns []string
		text     string
		want     []string // matched patterns, in order of their end
	}{
		{"overlapping", []string{"he", "she", "his", "hers"}, "ushers", nil}, // inside one Latin word: no boundaries
		{"words", []string{"he", "she", "hers"}, "she said he was hers", []string{"she", "he", "hers"}},
		{"chinese needs no boundary", []string{"空调", "打开空调", "调"}, "请打开空调吧", []string{"打开空调", "空调", "调"}},
		{"fail link", []string{"打开空调", "开空气"}, "打开空气", []string{"开空气"}},
		{"inside a word", []string{"bc", "c"}, "x abc y", nil},
		{"suffix of a longer path", []string{"a b c", "b c"}, "a b c", []string{"a b c", "b c"}},
		{"no match", []string{"next song"}, "play the next songs", nil},
		{"repeat", []string{"ha"}, "ha ha", []string{"ha", "ha"}},
		{"mixed", []string{"播放"}, "播放music", []string{"播放"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := newAutomaton(c.patterns)
			var got []string
			for _, m := range a.find(c.text) {
				if c.text[m.start:m.end] != c.patterns[m.pattern] {
					t.Fatalf("match %+v spans %q, not %q", m, c.text[m.start:m.end], c.patterns[m.pattern])
				}
				got = append(got, c.patterns[m.pattern])
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("find(%q) = %q, want %q", c.text, got, c.want)
			}
		})
	}
}
