package intent

import (
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Normalize folds text to the form every matcher and rule sees: full-width
// ASCII to half-width, ideographic space to space, lower case, runs of
// space collapsed and the ends trimmed.
func Normalize(text string) string {
	var b strings.Builder
	b.Grow(len(text))
	space := true // drops leading space
	for _, r := range text {
		r = fold(r)
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

// fold is what Normalize does to one rune: full-width ASCII to half-width,
// ideographic space to space, lower case.
func fold(r rune) rune {
	switch {
	case r >= 0xFF01 && r <= 0xFF5E:
		r -= 0xFEE0
	case r == 0x3000:
		r = ' '
	}
	return unicode.ToLower(r)
}

// isHan reports whether r is written without spaces between words (Chinese,
// Japanese kana), so that each rune is a token of its own.
func isHan(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r)
}

// tokens splits normalized text into words: runs of letters and digits,
// and every Han rune on its own. Punctuation and space separate tokens.
func tokens(text string) []string {
	var out []string
	start := -1
	for i, r := range text {
		word := unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
		if start >= 0 && (!word || isHan(r)) {
			out = append(out, text[start:i])
			start = -1
		}
		switch {
		case isHan(r):
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

// Features says which features a text yields for the classifier and the
// retrieval index.
type Features struct {
	// WordNgrams is the longest word n-gram (1 = words only, 2 = words and
	// pairs of neighbours). 0 means no word features.
	WordNgrams int `yaml:"word_ngrams" json:"word_ngrams"`
	// CharMin and CharMax bound the character n-grams taken over the text
	// with its words separated by one space and a space at either end, so
	// that Chinese needs no segmenter. CharMax 0 means none.
	CharMin int `yaml:"char_min" json:"char_min"`
	// CharMax: see CharMin.
	CharMax int `yaml:"char_max" json:"char_max"`
	// HashBits is the size of the hashed feature space, 2^HashBits.
	HashBits int `yaml:"hash_bits" json:"hash_bits"`
}

// feature is one hashed feature and its weight.
type feature struct {
	id  uint32
	val float32
}

// vector is a sparse feature vector sorted by id with no repeated id.
type vector []feature

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

// terms appends the hashed terms of normalized text to dst: word n-grams
// and character n-grams, each kind in its own namespace, repeats kept.
func (fs Features) terms(dst []uint64, text string) []uint64 {
	words := tokens(text)
	for n := 1; n <= fs.WordNgrams; n++ {
		for i := 0; i+n <= len(words); i++ {
			h := hashByte(fnvOffset, 'w'+byte(n))
			for _, w := range words[i : i+n] {
				h = hashString(hashByte(h, ' '), w)
			}
			dst = append(dst, h)
		}
	}
	if fs.CharMax <= 0 {
		return dst
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
	for n := max(fs.CharMin, 1); n <= fs.CharMax; n++ {
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

func isHanWord(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	return isHan(r)
}

// vectorize turns hashed terms into a feature vector: counts with
// sublinear scaling (1 + ln tf), L2-normalised. It sorts terms in place.
func (fs Features) vectorize(terms []uint64) vector {
	mask := uint64(1)<<fs.HashBits - 1
	ids := make([]uint32, len(terms))
	for i, h := range terms {
		ids[i] = uint32((h ^ h>>32) & mask)
	}
	slices.Sort(ids)
	v := make(vector, 0, len(ids))
	for i := 0; i < len(ids); {
		j := i
		for j < len(ids) && ids[j] == ids[i] {
			j++
		}
		v = append(v, feature{id: ids[i], val: float32(1 + math.Log(float64(j-i)))})
		i = j
	}
	var norm float64
	for _, f := range v {
		norm += float64(f.val) * float64(f.val)
	}
	if norm > 0 {
		inv := float32(1 / math.Sqrt(norm))
		for i := range v {
			v[i].val *= inv
		}
	}
	return v
}
