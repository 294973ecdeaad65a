package recall

import (
	"strings"
	"unicode"

	"github.com/loomkit/loom/internal/bm25"
)

// words splits text into lower-case search words: identifiers at
// underscores, camelCase humps and letter–digit boundaries (orderItems,
// order_items and OrderItems2 all give "order item" and a "2"), English
// words reduced to a light stem so that a question's "orders" meets a
// column's "order". Han runes pass through; the tokenizer takes their
// bigrams.
func words(text string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, stem(strings.ToLower(string(cur))))
			cur = cur[:0]
		}
	}
	rs := []rune(text)
	for i, r := range rs {
		switch {
		case bm25.IsHan(r):
			flush()
			out = append(out, string(r))
			continue
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
			continue
		}
		if len(cur) > 0 {
			prev := cur[len(cur)-1]
			switch {
			case unicode.IsDigit(r) != unicode.IsDigit(prev):
				flush() // item2 → item 2
			case unicode.IsUpper(r) && unicode.IsLower(prev):
				flush() // orderItems → order Items
			case unicode.IsUpper(r) && unicode.IsUpper(prev) && i+1 < len(rs) && unicode.IsLower(rs[i+1]):
				flush() // HTTPServer → HTTP Server
			}
		}
		cur = append(cur, r)
	}
	flush()
	return out
}

// searchText is text as the index and the queries see it: its words
// (see words) but English function words, joined by spaces.
func searchText(text string) string {
	var b strings.Builder
	for _, w := range words(text) {
		if stopword[w] {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	return bm25.Normalize(b.String())
}

// stopword are English function words: they say nothing of which table
// or document is meant (has_pet is about pets, not about having).
var stopword = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the of in on at by for to from with as and or not no nor
		is are was were be been being has have had do doe did what which who whom whose
		how many much all each every any some that this these those there their they them it its
		i me my we our you your he she his her than then also into per`) {
		stopword[w] = true
	}
}

// stem reduces an English word to a light stem: plurals to the singular
// (categories → category, boxes → box, orders → order) and nothing else,
// leaving words that end in ss, us or is alone (address, status,
// analysis).
func stem(w string) string {
	n := len(w)
	switch {
	case n < 4 || w[n-1] != 's' || !isASCIILetters(w):
		return w
	case strings.HasSuffix(w, "ies") && n > 4:
		return w[:n-3] + "y"
	case strings.HasSuffix(w, "sses"), strings.HasSuffix(w, "xes"), strings.HasSuffix(w, "ches"), strings.HasSuffix(w, "shes"), strings.HasSuffix(w, "zzes"):
		return w[:n-2]
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
		return w
	}
	return w[:n-1]
}

func isASCIILetters(w string) bool {
	for i := 0; i < len(w); i++ {
		if c := w[i]; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}
