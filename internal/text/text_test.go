package text

import "testing"

func TestClip(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 5, "hello"},
		{"hello", 3, "hel…"},
		{"销售报表", 2, "销售…"},
		{"a销", 1, "a…"},
		{"", 0, ""},
		{"abc", 0, "…"},
	} {
		if got := Clip(tt.s, tt.n); got != tt.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

func TestOneLine(t *testing.T) {
	if got := OneLine("  SELECT *\n\tFROM  t\n", 100); got != "SELECT * FROM t" {
		t.Errorf("OneLine = %q", got)
	}
	if got := OneLine("一二\n三四五", 4); got != "一二 三…" {
		t.Errorf("OneLine clipped = %q", got)
	}
}

func TestHasHanAndSay(t *testing.T) {
	if !HasHan("帮我生成 report") || HasHan("make a report, ok?") || HasHan("") {
		t.Error("HasHan misjudged a text")
	}
	if Say("哪个城市", "en", "zh") != "zh" || Say("which city", "en", "zh") != "en" {
		t.Error("Say picked the wrong language")
	}
}
