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
