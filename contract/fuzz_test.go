package contract

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func FuzzExtract(f *testing.F) {
	for _, s := range []string{
		`{"a":1}`,
		"prose ```json\n{\"a\":[1,2,],}\n``` more",
		`<DECISION>{"speak":"x","action":"done"}</DECISION>tail`,
		`{"a":"\u00e9\n", /* c */ "b":[{"c":null}]}`,
		`{{{{"a":`,
		`{"a":"unterminated`,
		`[{]}{"x":1}`,
		`{ "speak": "x", "action": "continue", "day": 3, "plan_steps": [{"content": "c"}] }`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Extract(s)
		if err == nil {
			if !json.Valid(got) || !strings.HasPrefix(string(got), "{") {
				t.Fatalf("Extract(%q) = %q: not a valid JSON object", s, got)
			}
		} else if !errors.Is(err, ErrNoJSON) && !errors.Is(err, ErrSyntax) {
			t.Fatalf("Extract(%q) error %v is neither ErrNoJSON nor ErrSyntax", s, err)
		}
		_, err = Decode[decision](s)
		if err != nil && !errors.Is(err, ErrNoJSON) && !errors.Is(err, ErrSyntax) && !errors.Is(err, ErrInvalid) {
			t.Fatalf("Decode(%q) error %v has no sentinel", s, err)
		}
		sp := NewSplitter[decision]()
		for i := 0; i < len(s); i += 3 {
			sp.Write(s[i:min(i+3, len(s))])
		}
		sp.Close()
	})
}

// adversarial are 1 MB inputs built to make a naive extractor quadratic.
var adversarial = []struct {
	name string
	in   string
	err  error  // expected error, nil when want is found
	want string // the object expected
}{
	{"open braces", strings.Repeat("{", 1<<20), ErrSyntax, ""},
	{"open braces then object", strings.Repeat("{", 1<<20) + `{"a":1}`, nil, `{"a":1}`},
	{"open quoted keys", strings.Repeat(`{"`, 1<<19), ErrSyntax, ""},
	{"unclosed strings", strings.Repeat(`{"a":"`, 1<<18), ErrSyntax, ""},
	{"open brackets", strings.Repeat("[", 1<<20), ErrNoJSON, ""},
	{"closing only", strings.Repeat("}", 1<<20), ErrNoJSON, ""},
	{"many small objects", strings.Repeat(`{"a":x}`, 1<<17), ErrSyntax, ""},
	{"deep balanced", strings.Repeat("{", 1<<19) + strings.Repeat("}", 1<<19), nil, "{}"},
	{"tags", strings.Repeat("<DECISIO", 1<<17), ErrNoJSON, ""},
	{"fences", strings.Repeat("```\n", 1<<18), ErrNoJSON, ""},
	{"many objects last valid", strings.Repeat(`{"a":}`, 1<<17) + `{"b":2}`, nil, `{"b":2}`},
}

func TestAdversarial(t *testing.T) {
	for _, tt := range adversarial {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Extract(tt.in)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("error = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("Extract = %.40q, %v; want %s", got, err, tt.want)
			}
		})
	}
}

func BenchmarkExtractAdversarial1MB(b *testing.B) {
	for _, tt := range adversarial {
		b.Run(tt.name, func(b *testing.B) {
			b.SetBytes(int64(len(tt.in)))
			for b.Loop() {
				Extract(tt.in)
			}
		})
	}
}
