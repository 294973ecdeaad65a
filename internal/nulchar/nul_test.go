package nulchar

import (
	"encoding/json"
	"testing"
)

func TestIn(t *testing.T) {
	for doc, want := range map[string]bool{
		`"plain"`:                false,
		`{"a":[1,{"b":"c"}]}`:    false,
		`"\\u0000"`:              false, // a backslash and "u0000", not NUL
		`"a\u0000"`:              true,
		`{"k\u0000":1}`:          true,
		`[1,[{"x":"\u0000"}]]`:   true,
		`{"a":{"b":["\u0000"]}}`: true,
		`null`:                   false,
	} {
		var v any
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatal(err)
		}
		if got := In(v); got != want {
			t.Errorf("In(%s) = %v, want %v", doc, got, want)
		}
	}
}
