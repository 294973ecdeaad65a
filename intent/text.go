package intent

import (
	"math"
	"slices"

	"github.com/loomkit/loom/internal/bm25"
)

// Normalize folds text to the form every matcher and rule sees: full-width
// ASCII to half-width, ideographic space to space, lower case, runs of
// space collapsed and the ends trimmed.
func Normalize(text string) string { return bm25.Normalize(text) }

// fold is what Normalize does to one rune: full-width ASCII to half-width,
// ideographic space to space, lower case.
func fold(r rune) rune { return bm25.Fold(r) }

// isHan reports whether r is written without spaces between words (Chinese,
// Japanese kana), so that each rune is a token of its own.
func isHan(r rune) bool { return bm25.IsHan(r) }

// tokens splits normalized text into words: runs of letters and digits,
// and every Han rune on its own. Punctuation and space separate tokens.
func tokens(text string) []string { return bm25.Tokens(text) }

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

// analyzer is the tokenizer shared with every other retrieval in Loom,
// configured by fs.
func (fs Features) analyzer() bm25.Analyzer {
	return bm25.Analyzer{WordNgrams: fs.WordNgrams, CharMin: fs.CharMin, CharMax: fs.CharMax}
}

// terms appends the hashed terms of normalized text to dst: word n-grams
// and character n-grams, each kind in its own namespace, repeats kept.
func (fs Features) terms(dst []uint64, text string) []uint64 {
	return fs.analyzer().Terms(dst, text)
}

// vectorize turns hashed terms into a feature vector: counts with
// sublinear scaling (1 + ln tf), L2-normalised. It sorts terms in place.
func (fs Features) vectorize(terms []uint64) vector {
	ids := make([]uint32, len(terms))
	for i, h := range terms {
		ids[i] = bm25.Bucket(h, fs.HashBits)
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
