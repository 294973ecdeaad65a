package recall

import (
	"slices"
	"testing"
)

func TestWords(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"orderItems", []string{"order", "item"}},
		{"order_items", []string{"order", "item"}},
		{"OrderItems2", []string{"order", "item", "2"}},
		{"HTTPServerLogs", []string{"http", "server", "log"}},
		{"Home Town", []string{"home", "town"}},
		{"How many categories and boxes?", []string{"how", "many", "category", "and", "box"}},
		{"address status analysis", []string{"address", "status", "analysis"}},
		{"客户orders数量", []string{"客", "户", "order", "数", "量"}},
	} {
		if got := words(c.in); !slices.Equal(got, c.want) {
			t.Errorf("words(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestFormsOf: other forms of a word meet past a common start of four
// letters or more when both end in nothing or an English ending; words
// that only start alike do not.
func TestFormsOf(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"weigh", "weight", true},
		{"located", "location", true},
		{"manage", "management", true},
		{"compete", "competition", true},
		{"employ", "employee", false}, // "ee" is not an ending: stems meet it
		{"cart", "carton", false},
		{"teach", "teacher", true},
		{"price", "prime", false},
		{"name", "names", false}, // plurals are the stemmer's
	} {
		if got := formsOf(c.a, c.b); got != c.want {
			t.Errorf("formsOf(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
