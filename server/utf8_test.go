package server

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// utf8Reader passes UTF-8 however its reads split the characters, and
// stops at the first bytes that are not.
func TestUTF8Reader(t *testing.T) {
	for _, c := range []struct {
		name, in string
		ok       bool
	}{
		{"ascii", `{"a":"b"}`, true},
		{"chinese and emoji", `{"文":"中文😀"}`, true},
		{"invalid byte", "{\"a\":\"\xff\"}", false},
		{"surrogate half", "\"\xed\xa0\x80\"", false},
		{"cut at the end", "\"\xe4\xb8", false},
		{"overlong", "\"\xc0\xaf\"", false},
	} {
		for split, wrap := range map[string]func(io.Reader) io.Reader{
			"whole": func(r io.Reader) io.Reader { return r }, "one byte": iotest.OneByteReader, "half": iotest.HalfReader,
		} {
			out, err := io.ReadAll(&utf8Reader{r: wrap(strings.NewReader(c.in))})
			if c.ok && (err != nil || string(out) != c.in) {
				t.Errorf("%s, %s: %q, %v", c.name, split, out, err)
			}
			if !c.ok && !errors.Is(err, errNotUTF8) {
				t.Errorf("%s, %s: err %v, want errNotUTF8", c.name, split, err)
			}
		}
	}
}
