package bm25

import (
	"math"
	"slices"
	"testing"
)

func TestTokens(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"order_items.total 2024", []string{"order", "items", "total", "2024"}},
		{"a类客户ab", []string{"a", "类", "客", "户", "ab"}},
		{"café—résumé", []string{"café", "résumé"}},
	} {
		if got := Tokens(c.in); !slices.Equal(got, c.want) {
			t.Errorf("Tokens(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestNormalize(t *testing.T) {
	if got := Normalize("  ＡＢＣ\u3000Orders\t "); got != "abc orders" {
		t.Errorf("Normalize = %q", got)
	}
}

func TestTermsOfChineseAreCharacterBigrams(t *testing.T) {
	an := Analyzer{CharMin: 2, CharMax: 2}
	// " 客户流失 " has five bigrams: " 客", "客户", "户流", "流失", "失 ".
	if got := len(an.Text("客户流失")); got != 5 {
		t.Errorf("%d terms, want 5", got)
	}
	if !slices.Equal(an.Text("客户 流失"), an.Text("客户流失")) {
		t.Error("space between Han runes changed the terms")
	}
}

func TestHanOnly(t *testing.T) {
	han := Analyzer{WordNgrams: 1, CharMin: 2, CharMax: 2, HanOnly: true}
	all := Analyzer{WordNgrams: 1, CharMin: 2, CharMax: 2}
	// Words "order", "客", "户", "流", "失" and the bigrams 客户 户流 流失.
	if got := len(han.Text("order 客户流失")); got != 8 {
		t.Errorf("%d terms, want 8", got)
	}
	// The Chinese bigrams are the same terms as without HanOnly.
	a, b := han.Text("客户流失"), all.Text("客户流失")
	for _, h := range a[4:] {
		if !slices.Contains(b, h) {
			t.Errorf("bigram %x not among the plain analyzer's terms", h)
		}
	}
}

// TestScores checks the BM25 formula on a corpus small enough to work out
// by hand, and that Search ranks by it.
func TestScores(t *testing.T) {
	an := Analyzer{WordNgrams: 1}
	texts := []string{"red apple", "green apple apple", "blue sky"}
	docs := make([][]uint64, len(texts))
	for i, s := range texts {
		docs[i] = an.Text(s)
	}
	ix := New(docs, Params{})
	if ix.Len() != 3 {
		t.Fatalf("Len = %d", ix.Len())
	}
	scores := make([]float32, 3)
	self := ix.Scores(an.Text("apple"), scores)
	idf := math.Log(1 + (3-2+0.5)/(2+0.5))
	avg := 7.0 / 3
	sat := func(tf, n float64) float64 { return tf * 2.2 / (tf + 1.2*(0.25+0.75*n/avg)) }
	want := []float64{idf * sat(1, 2), idf * sat(2, 3), 0}
	for d := range want {
		if math.Abs(float64(scores[d])-want[d]) > 1e-5 {
			t.Errorf("doc %d: %.5f, want %.5f", d, scores[d], want[d])
		}
	}
	if w := idf * sat(1, 1); math.Abs(self-w) > 1e-9 {
		t.Errorf("self %.5f, want %.5f", self, w)
	}
	hits, _ := ix.Search(an.Text("apple"), 5)
	if len(hits) != 2 || hits[0].Doc != 1 || hits[1].Doc != 0 {
		t.Errorf("hits %v, want docs 1 then 0", hits)
	}
	// Unknown words find nothing but count in self, so that a query
	// half made of them scores at most about half.
	if hits, self := ix.Search(an.Text("nothing here"), 5); len(hits) != 0 || self <= 0 {
		t.Errorf("unknown words: %v %v", hits, self)
	}
	if hits, _ := ix.Search(an.Text("apple sky"), 1); len(hits) != 1 {
		t.Errorf("k=1 gave %d hits", len(hits))
	}
}

func TestMaxDFSkipsCommonTerms(t *testing.T) {
	an := Analyzer{WordNgrams: 1}
	var docs [][]uint64
	for _, s := range []string{"the cat", "the dog", "the bird", "the fish"} {
		docs = append(docs, an.Text(s))
	}
	ix := New(docs, Params{MaxDF: 0.5})
	if hits, self := ix.Search(an.Text("the"), 0); len(hits) != 0 || self != 0 {
		t.Errorf("a word in every document scored: %v %v", hits, self)
	}
	if hits, _ := ix.Search(an.Text("the dog"), 0); len(hits) != 1 || hits[0].Doc != 1 {
		t.Errorf("hits %v, want only doc 1", hits)
	}
}
