package bm25

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Normalize folds text to the form the tokenizer expects: full-width ASCII
// to half-width, ideographic space to space, lower case, runs of space
// collapsed and the ends trimmed.
func Normalize(text string) string {
	var b strings.Builder
	b.Grow(len(text))
	space := true // drops leading space
	for _, r := range text {
		r = Fold(r)
		if unicode.IsSpace(r) {
			if !space {
				b.WriteByte(' ')
				space = true
			}
			continue
		}
		space = false
		b.WriteRune(r)
	}
	return strings.TrimRight(b.String(), " ")
}

// Fold is what Normalize does to one rune: full-width ASCII to half-width,
// ideographic space to space, lower case.
func Fold(r rune) rune {
	switch {
	case r >= 0xFF01 && r <= 0xFF5E:
		r -= 0xFEE0
	case r == 0x3000:
		r = ' '
	}
	return unicode.ToLower(r)
}

// IsHan reports whether r is written without spaces between words (Chinese,
// Japanese kana), so that each rune is a token of its own.
func IsHan(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r)
}

// Tokens splits normalized text into words: runs of letters and digits,
// and every Han rune on its own. Punctuation, space and underscores
// separate tokens.
func Tokens(text string) []string {
	var out []string
	start := -1
	for i, r := range text {
		word := unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
		if start >= 0 && (!word || IsHan(r)) {
			out = append(out, text[start:i])
			start = -1
		}
		switch {
		case IsHan(r):
			out = append(out, text[i:i+utf8.RuneLen(r)])
		case word && start < 0:
			start = i
		}
	}
	if start >= 0 {
		out = append(out, text[start:])
	}
	return out
}

// Analyzer says which terms a text yields: word n-grams and character
// n-grams, so that mixed Chinese and English text needs no segmenter.
type Analyzer struct {
	// WordNgrams is the longest word n-gram (1 = words only, 2 = words and
	// pairs of neighbours). 0 means no word terms.
	WordNgrams int
	// CharMin and CharMax bound the character n-grams taken over the text
	// with its words separated by one space and a space at either end
	// (Han runes are not separated from each other, so a Chinese phrase
	// gives its character bigrams). CharMax 0 means none.
	CharMin int
	// CharMax: see CharMin.
	CharMax int
	// HanOnly takes the character n-grams within runs of Han runes only,
	// so that English words count whole and only Chinese gets n-grams.
	HanOnly bool
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func hashString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

func hashByte(h uint64, b byte) uint64 {
	h ^= uint64(b)
	return h * fnvPrime
}

// Terms appends the hashed terms of normalized text to dst: word n-grams
// and character n-grams, each kind in its own namespace, repeats kept.
func (a Analyzer) Terms(dst []uint64, text string) []uint64 {
	words := Tokens(text)
	for n := 1; n <= a.WordNgrams; n++ {
		for i := 0; i+n <= len(words); i++ {
			h := hashByte(fnvOffset, 'w'+byte(n))
			for _, w := range words[i : i+n] {
				h = hashString(hashByte(h, ' '), w)
			}
			dst = append(dst, h)
		}
	}
	if a.CharMax <= 0 {
		return dst
	}
	if a.HanOnly {
		return a.hanGrams(dst, words)
	}
	// The words joined by single spaces with a space at either end: a
	// rune-offset table lets every n-gram hash straight from the bytes.
	var b strings.Builder
	b.WriteByte(' ')
	for i, w := range words {
		if i > 0 && !(isHanWord(w) && isHanWord(words[i-1])) {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	b.WriteByte(' ')
	s := b.String()
	offs := make([]int, 0, len(s)+1)
	for i := range s {
		offs = append(offs, i)
	}
	offs = append(offs, len(s))
	runes := len(offs) - 1
	for n := max(a.CharMin, 1); n <= a.CharMax; n++ {
		for i := 0; i+n <= runes; i++ {
			if n == 1 && s[offs[i]] == ' ' {
				continue
			}
			h := hashString(hashByte(fnvOffset, 'c'+byte(n)), s[offs[i]:offs[i+n]])
			dst = append(dst, h)
		}
	}
	return dst
}

// Text is Terms of Normalize(text) into a new slice.
func (a Analyzer) Text(text string) []uint64 {
	return a.Terms(nil, Normalize(text))
}

// hanGrams appends the character n-grams of every run of Han words.
func (a Analyzer) hanGrams(dst []uint64, words []string) []uint64 {
	for i := 0; i < len(words); {
		if !isHanWord(words[i]) {
			i++
			continue
		}
		j := i
		for j < len(words) && isHanWord(words[j]) {
			j++
		}
		for n := max(a.CharMin, 1); n <= a.CharMax; n++ {
			for k := i; k+n <= j; k++ {
				h := hashByte(fnvOffset, 'c'+byte(n))
				for _, w := range words[k : k+n] {
					h = hashString(h, w)
				}
				dst = append(dst, h)
			}
		}
		i = j
	}
	return dst
}

func isHanWord(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	return IsHan(r)
}

// Bucket folds a hashed term into a space of 2^bits buckets, the way an
// Index does.
func Bucket(h uint64, bits int) uint32 {
	return uint32((h ^ h>>32) & (uint64(1)<<bits - 1))
}
