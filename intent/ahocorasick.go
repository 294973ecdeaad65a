package intent

import (
	"unicode"
	"unicode/utf8"
)

// automaton finds every occurrence of a set of patterns in one pass over
// the text (Aho–Corasick over bytes, so UTF-8 needs no special care). A
// pattern that starts or ends with a Latin letter or digit matches only at
// a word boundary there, so "on" is not found in "phone" while "空调" is
// found in "打开空调".
type automaton struct {
	next     []map[byte]int32 // goto function; state 0 is the root
	fail     []int32
	out      [][]int32 // patterns ending at each state, through fail links
	patterns []string
}

// match is one occurrence of pattern number Pattern ending at byte End.
type match struct {
	pattern int
	start   int
	end     int
}

func newAutomaton(patterns []string) *automaton {
	a := &automaton{next: []map[byte]int32{{}}, fail: []int32{0}, out: [][]int32{nil}, patterns: patterns}
	for p, s := range patterns {
		if s == "" {
			continue
		}
		state := int32(0)
		for i := 0; i < len(s); i++ {
			n, ok := a.next[state][s[i]]
			if !ok {
				n = int32(len(a.next))
				a.next = append(a.next, map[byte]int32{})
				a.fail = append(a.fail, 0)
				a.out = append(a.out, nil)
				a.next[state][s[i]] = n
			}
			state = n
		}
		a.out[state] = append(a.out[state], int32(p))
	}
	// Breadth-first: a state's fail link is the longest proper suffix of
	// its path that is also a path from the root.
	queue := make([]int32, 0, len(a.next))
	for _, n := range a.next[0] {
		queue = append(queue, n)
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for b, n := range a.next[s] {
			f := a.fail[s]
			for f != 0 && a.next[f][b] == 0 {
				f = a.fail[f]
			}
			if t, ok := a.next[f][b]; ok && t != n {
				a.fail[n] = t
			}
			a.out[n] = append(a.out[n], a.out[a.fail[n]]...)
			queue = append(queue, n)
		}
	}
	return a
}

// find returns every match in text, in order of their end.
func (a *automaton) find(text string) []match {
	var ms []match
	state := int32(0)
	for i := 0; i < len(text); i++ {
		b := text[i]
		for state != 0 && a.next[state][b] == 0 {
			state = a.fail[state]
		}
		state = a.next[state][b] // 0 when the root has no edge either
		for _, p := range a.out[state] {
			start := i + 1 - len(a.patterns[p])
			if bounded(text, start, i+1) {
				ms = append(ms, match{pattern: int(p), start: start, end: i + 1})
			}
		}
	}
	return ms
}

// bounded reports whether text[start:end] does not cut a Latin word or
// number in two.
func bounded(text string, start, end int) bool {
	if start > 0 {
		first, _ := utf8.DecodeRuneInString(text[start:])
		prev, _ := utf8.DecodeLastRuneInString(text[:start])
		if latinWord(first) && latinWord(prev) {
			return false
		}
	}
	if end < len(text) {
		last, _ := utf8.DecodeLastRuneInString(text[:end])
		next, _ := utf8.DecodeRuneInString(text[end:])
		if latinWord(last) && latinWord(next) {
			return false
		}
	}
	return true
}

func latinWord(r rune) bool {
	return (unicode.IsLetter(r) || unicode.IsDigit(r)) && !isHan(r)
}
