package cabin

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/hbollon/go-edlib"

	"github.com/loomkit/loom/intent"
)

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"opne", "open", 1}, {"windw", "window", 1}, {"clsoe", "close", 1}, {"lights", "lights", 0}, {"heat", "seat", 1}, {"abc", "", 3}} {
		if got := edlib.OSADamerauLevenshteinDistance(c.a, c.b); got != c.want {
			t.Errorf("OSADamerauLevenshteinDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// TestSpelling: near-miss words are corrected to the configuration's
// words, known and common words are left alone, and no correction names
// the opposite of what was said.
func TestSpelling(t *testing.T) {
	app, err := New(context.Background(), Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ in, want string }{
		{"opne the windw", "open the window"},
		{"clsoe the sunroof", "close the sunroof"},
		{"turn on the seat heeting", "turn on the seat heating"},
		{"unlok the doors", "unlock the doors"},
		{"take me to the mall", "take me to the mall"},
		{"please open the window", "please open the window"},
	} {
		if got, _ := app.spell.correct(intent.Normalize(c.in)); got != c.want {
			t.Errorf("correct(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"打开车创", "打开车窗"},
		{"把控调打开", "把空调打开"},
		{"导行去创业大厦", "导航去创业大厦"},
	} {
		if got, _ := homophone(c.in); got != c.want {
			t.Errorf("homophone(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// No entry of the table names a side its near-miss did not.
	for _, wrong := range homophoneKeys {
		for _, ctx := range []string{"把车窗%s", "%s"} {
			orig := strings.Replace(ctx, "%s", wrong, 1)
			if flipsPolarity(orig, strings.Replace(ctx, "%s", homophones[wrong], 1)) {
				t.Errorf("homophone %s → %s turns what was asked round", wrong, homophones[wrong])
			}
		}
	}
	if !flipsPolarity("关闭车窗", "打开车窗") || !flipsPolarity("close the window", "open the window") || flipsPolarity("opne the window", "open the window") {
		t.Error("flipsPolarity does not tell a flip")
	}
	if !slices.Contains(app.spell.list, "window") {
		t.Error("the speller does not know the configuration's words")
	}
}
