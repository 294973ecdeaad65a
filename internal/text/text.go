// Package text holds the small string helpers Loom's packages share:
// clipping by characters, one-line summaries and telling Chinese text.
package text

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Clip cuts s to at most n runes, marking a cut with "…"; it never cuts
// a character in two.
func Clip(s string, n int) string {
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for range n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i] + "…"
}

// OneLine collapses the white space of s, line breaks included, to single
// spaces and clips it to n runes (see Clip).
func OneLine(s string, n int) string {
	return Clip(strings.Join(strings.Fields(s), " "), n)
}

// HasHan reports whether s has a Han (Chinese) character in it.
func HasHan(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return unicode.Is(unicode.Han, r) })
}

// Say picks en or zh for the language of q: zh when q has Chinese in it.
func Say(q, en, zh string) string {
	if HasHan(q) {
		return zh
	}
	return en
}
