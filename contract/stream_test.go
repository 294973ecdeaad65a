package contract

import (
	"errors"
	"strings"
	"testing"
)

// feed writes s to a new Splitter in chunks of n bytes and returns the
// passed-through text, the number of the chunk that made the decision
// ready (-1 if none) and the splitter.
func feed(t testing.TB, s string, n int, opts ...Option) (string, int, *Splitter[decision]) {
	t.Helper()
	sp := NewSplitter[decision](opts...)
	var out strings.Builder
	readyAt := -1
	for i, k := 0, 0; i < len(s); i, k = i+n, k+1 {
		ready, text := sp.Write(s[i:min(i+n, len(s))])
		if ready {
			if readyAt >= 0 {
				t.Fatalf("ready twice: again at chunk %d after chunk %d", k, readyAt)
			}
			readyAt = k
		}
		out.WriteString(text)
	}
	text, _ := sp.Close()
	out.WriteString(text)
	return out.String(), readyAt, sp
}

func TestSplitter(t *testing.T) {
	tests := []struct {
		name, in, text string
	}{
		{"tag first", `<DECISION>{"speak":"hi","action":"done"}</DECISION>` + "\nHere is your plan.", "Here is your plan."},
		{"text around tag", `Let me see. <decision>{"speak":"hi","action":"done"}</decision> Done!`, "Let me see. Done!"},
		{"leading object", `  {"speak":"a}{","action":"done"}` + "\n\nAll set.", "All set."},
		{"leading fence", "```json\n{\"speak\":\"x\",\"action\":\"done\"}\n```\nOK", "OK"},
		{"text with lone <", `a < b and <DECISION>{"speak":"x","action":"done"}</DECISION>`, "a < b and "},
		{"no block", `We are {"speak":"x","action":"done"}`, `We are {"speak":"x","action":"done"}`},
	}
	for _, tt := range tests {
		for _, n := range []int{1, 2, 3, 7, 1000} {
			text, readyAt, sp := feed(t, tt.in, n)
			if text != tt.text {
				t.Errorf("%s/chunk %d: text = %q, want %q", tt.name, n, text, tt.text)
			}
			d, err := sp.Result()
			if err != nil || d.Action != "done" {
				t.Errorf("%s/chunk %d: Result = %+v, %v", tt.name, n, d, err)
			}
			if tt.name != "no block" && readyAt < 0 {
				t.Errorf("%s/chunk %d: never ready before Close", tt.name, n)
			}
		}
	}
}

func TestSplitterReadyEarly(t *testing.T) {
	sp := NewSplitter[decision]()
	if ready, _ := sp.Write(`<DECISION>{"speak":"x",`); ready {
		t.Fatal("ready before the block closed")
	}
	if _, err := sp.Result(); !errors.Is(err, ErrIncomplete) {
		t.Fatalf("Result before ready = %v, want ErrIncomplete", err)
	}
	ready, text := sp.Write(`"action":"ask_user"}</DECISION>Which day`)
	if !ready || text != "Which day" {
		t.Fatalf("Write = %v, %q", ready, text)
	}
	if d, err := sp.Result(); err != nil || d.Action != "ask_user" {
		t.Fatalf("Result = %+v, %v", d, err)
	}
	if _, text := sp.Write(" suits you?"); text != " suits you?" {
		t.Fatalf("text after = %q", text)
	}
}

func TestSplitterInvalid(t *testing.T) {
	_, readyAt, sp := feed(t, `<DECISION>{"speak":"x","action":"go"}</DECISION>rest`, 5)
	if readyAt < 0 {
		t.Fatal("never ready")
	}
	if _, err := sp.Result(); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Result error = %v, want ErrInvalid", err)
	}
	if sp.Raw() != `<DECISION>{"speak":"x","action":"go"}</DECISION>rest` {
		t.Fatalf("Raw = %q", sp.Raw())
	}
	_, _, sp = feed(t, `<DECISION>{"speak":"x","act`, 4)
	if _, err := sp.Result(); !errors.Is(err, ErrSyntax) {
		t.Fatalf("unterminated block: error = %v, want ErrSyntax", err)
	}
}
