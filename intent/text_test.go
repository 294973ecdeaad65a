package intent

import (
	"slices"
	"testing"
)

func TestNormalize(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"  Hello   World  ", "hello world"},
		{"ＡＢＣ１２３", "abc123"},
		{"打开\u3000空调！", "打开 空调!"},
		{"Tab\tand\nnewline", "tab and newline"},
		{"", ""},
	} {
		if got := Normalize(c.in); got != c.want {
			t.Errorf("Normalize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestTokens(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"what's the weather", []string{"what", "s", "the", "weather"}},
		{"打开空调", []string{"打", "开", "空", "调"}},
		{"播放jay的歌123", []string{"播", "放", "jay", "的", "歌", "123"}},
		{"...", nil},
	} {
		if got := tokens(c.in); !slices.Equal(got, c.want) {
			t.Errorf("tokens(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestVectorizeIsUnitLength(t *testing.T) {
	fs := Features{WordNgrams: 2, CharMin: 2, CharMax: 4, HashBits: 16}
	for _, text := range []string{"turn on the air conditioning", "把空调调到22度", "a"} {
		v := fs.vectorize(fs.terms(nil, text))
		var norm float64
		for i, f := range v {
			norm += float64(f.val) * float64(f.val)
			if i > 0 && v[i-1].id >= f.id {
				t.Fatalf("%q: ids not strictly increasing at %d", text, i)
			}
		}
		if norm < 0.999 || norm > 1.001 {
			t.Errorf("%q: squared norm %.4f, want 1", text, norm)
		}
	}
}
