package contract

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/schema"
)

type toolCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

type step struct {
	Content  string `json:"content"`
	DoneWhen string `json:"done_when,omitempty"`
}

type decision struct {
	Speak    string    `json:"speak" jsonschema:"description=what to tell the user"`
	Action   string    `json:"action" jsonschema:"enum=continue,enum=ask_user,enum=done"`
	Reason   string    `json:"reason,omitempty"`
	Day      int       `json:"day,omitempty" jsonschema:"minimum=1,maximum=7"`
	ToolCall *toolCall `json:"tool_call,omitempty"`
	Steps    []step    `json:"plan_steps,omitempty"`
}

func TestExtract(t *testing.T) {
	tests := []struct {
		name, in, want string
		err            error
	}{
		{"bare", `{"a":1}`, `{"a":1}`, nil},
		{"prose around", "Sure! Here it is: {\"a\": 1} Hope that helps.", `{"a": 1}`, nil},
		{"fence", "Text\n```json\n{\"a\": [1, 2]}\n```\nmore {\"b\":2}", `{"a": [1, 2]}`, nil},
		{"fence preferred over earlier object", "{\"x\":0}\n```json\n{\"a\":1}\n```", `{"a":1}`, nil},
		{"tag", "think {\"no\":1}\n<DECISION>{\"a\":1}</DECISION> bye", `{"a":1}`, nil},
		{"tag lowercase", "<decision>\n{\"a\":1}\n</decision>", `{"a":1}`, nil},
		{"unclosed tag", "<DECISION>{\"a\":1}", `{"a":1}`, nil},
		{"trailing commas", `{"a":[1,2,],"b":{"c":1,},}`, `{"a":[1,2],"b":{"c":1}}`, nil},
		{"comments", "{\"a\":1, // the a\n\"b\":2 /* b */}", `{"a":1, "b":2 }`, nil},
		{"raw newline in string", "{\"a\":\"line1\nline2\"}", `{"a":"line1\nline2"}`, nil},
		{"stray brace in prose", `I use { braces. {"a":1}`, `{"a":1}`, nil},
		{"set notation first", `the set {1,2} and {"a":1}`, `{"a":1}`, nil},
		{"braces in strings", `{"a":"}{","b":"\"}"}`, `{"a":"}{","b":"\"}"}`, nil},
		{"nested picks outer", `{"a":{"b":{"c":1}}}`, `{"a":{"b":{"c":1}}}`, nil},
		{"object in array", `[{"a":1}]`, `{"a":1}`, nil},
		{"no json", "I cannot answer that.", "", ErrNoJSON},
		{"empty tag", "<DECISION>nothing</DECISION>", "", ErrNoJSON},
		{"single quotes", `{'a': 1}`, "", ErrSyntax},
		{"unclosed", `{"a": 1`, "", ErrSyntax},
		{"missing comma", `{"a": 1 "b": 2}`, "", ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Extract(tt.in)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("Extract(%q) error = %v, want %v", tt.in, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Extract(%q): %v", tt.in, err)
			}
			if string(got) != tt.want {
				t.Fatalf("Extract(%q) = %s, want %s", tt.in, got, tt.want)
			}
			if !json.Valid(got) {
				t.Fatalf("Extract(%q) = %s, not valid JSON", tt.in, got)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	d, err := Decode[decision]("I'll continue.\n```json\n{\"speak\":\"ok\",\"action\":\"continue\",\"tool_call\":{\"name\":\"place\",\"arguments\":{\"day\":3}},}\n```")
	if err != nil {
		t.Fatal(err)
	}
	if d.Action != "continue" || d.ToolCall == nil || d.ToolCall.Name != "place" || d.ToolCall.Arguments["day"] != 3.0 {
		t.Fatalf("Decode = %+v", d)
	}
}

func TestDecodeProblems(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string // one line per problem
	}{
		{"enum", `{"speak":"x","action":"finish"}`,
			[]string{`field action: must be one of continue, ask_user, done; got "finish"`}},
		{"missing", `{"speak":"x"}`,
			[]string{`field action: required but missing`}},
		{"missing with typo", `{"speak":"x","actoin":"done"}`,
			[]string{`field action: required but missing (unknown fields given: "actoin")`}},
		{"type", `{"speak":5,"action":"done"}`,
			[]string{`field speak: must be a string; got 5`}},
		{"integer", `{"speak":"","action":"done","day":2.5}`,
			[]string{`field day: must be an integer; got 2.5`}},
		{"range", `{"speak":"","action":"done","day":9}`,
			[]string{`field day: must be <= 7; got 9`}},
		{"nested path", `{"speak":"","action":"done","plan_steps":[{"content":"a"},{"done_when":"b"}]}`,
			[]string{`field plan_steps[1].content: required but missing`}},
		{"null required", `{"speak":null,"action":"done"}`,
			[]string{`field speak: must be a string; got null`}},
		{"several", `{"action":"stop","tool_call":{"name":1,"arguments":{}}}`,
			[]string{
				`field action: must be one of continue, ask_user, done; got "stop"`,
				`field tool_call.name: must be a string; got 1`,
				`field speak: required but missing`,
			}},
		{"not an object at root", `{"speak":"x","action":"done","plan_steps":{"content":"a"}}`,
			[]string{`field plan_steps: must be an array; got an object`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode[decision](tt.in)
			var ve *ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Decode error = %v, want a *ValidationError", err)
			}
			if got := strings.Split(ve.Error(), "\n"); strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Fatalf("problems:\n%s\nwant:\n%s", ve.Error(), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestDecodeTolerates(t *testing.T) {
	tests := []struct{ name, in string }{
		{"null optional", `{"speak":"x","action":"done","tool_call":null,"day":null}`},
		{"case-insensitive names", `{"Speak":"x","ACTION":"done"}`},
		{"unknown field", `{"speak":"x","action":"done","mood":"happy"}`},
		{"first valid candidate wins", `{"speak":"x","action":"nope"} then {"speak":"y","action":"done"}`},
		{"escaped enum value", `{"speak":"x","action":"\u0064one"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Decode[decision](tt.in)
			if err != nil {
				t.Fatalf("Decode(%s): %v", tt.in, err)
			}
			if d.Action != "done" {
				t.Fatalf("Action = %q, want done", d.Action)
			}
		})
	}
}

func TestDecodeOverflow(t *testing.T) {
	type small struct {
		N int8 `json:"n"`
	}
	_, err := Decode[small](`{"n": 300}`)
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Problems[0].Field != "n" {
		t.Fatalf("Decode error = %v, want a problem on field n", err)
	}
}

func TestSchemaFormat(t *testing.T) {
	s, err := schema.For[decision]()
	if err != nil {
		t.Fatal(err)
	}
	f := s.Format()
	for _, want := range []string{
		`"speak": string,  // what to tell the user`,
		`"action": "continue" | "ask_user" | "done"`,
		`"day"?: integer (>= 1, <= 7)`,
		`"plan_steps"?: [{`,
	} {
		if !strings.Contains(f, want) {
			t.Errorf("Format() lacks %q:\n%s", want, f)
		}
	}
	var doc map[string]any
	if err := json.Unmarshal(s.JSON(), &doc); err != nil {
		t.Fatalf("JSON(): %v", err)
	}
	if doc["type"] != "object" {
		t.Fatalf("JSON() type = %v", doc["type"])
	}
	props := doc["properties"].(map[string]any)
	if enum := props["action"].(map[string]any)["enum"]; len(enum.([]any)) != 3 {
		t.Fatalf("enum tag not in JSON schema: %v", props["action"])
	}
	s2, _ := schema.For[decision]()
	if s2 != s {
		t.Fatal("SchemaFor is not cached")
	}
}

type tree struct {
	Name     string  `json:"name"`
	Children []*tree `json:"children,omitempty"`
}

func TestRecursiveType(t *testing.T) {
	v, err := Decode[tree](`{"name":"a","children":[{"name":"b","children":[{"name":"c"}]},{"children":[]}]}`)
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Problems[0].Field != "children[1].name" {
		t.Fatalf("Decode = %+v, %v; want a problem on children[1].name", v, err)
	}
	v, err = Decode[tree](`{"name":"a","children":[{"name":"b"}]}`)
	if err != nil || v.Children[0].Name != "b" {
		t.Fatalf("Decode = %+v, %v", v, err)
	}
}

func TestParseSchema(t *testing.T) {
	s, err := schema.Parse(json.RawMessage(`{
		"type":"object",
		"properties":{"q":{"type":"string","minLength":2},"n":{"$ref":"#/$defs/n"}},
		"required":["q"],
		"$defs":{"n":{"type":"integer","enum":[1,2,3]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in   string
		want string
	}{
		{`{"q":"ab","n":2}`, ""},
		{`{"q":"a"}`, "field q: must be at least 2 characters long; got 1"},
		{`{"q":"ab","n":4}`, "field n: must be one of 1, 2, 3; got 4"},
		{`{"q":"ab",}`, ""},
		{`{"q":"ab"} x`, "invalid JSON at offset 11"},
	}
	for _, tt := range tests {
		err := s.Validate([]byte(tt.in))
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("Validate(%s) = %v, want %q", tt.in, err, tt.want)
		}
	}
}

func TestAsk(t *testing.T) {
	answers := []string{
		"I think we are done.",
		`{"speak":"ok","action":"finish"}`,
		`<DECISION>{"speak":"ok","action":"done"}</DECISION>`,
	}
	var feedbacks []string
	ask := func(ctx context.Context, fb string) (string, error) {
		feedbacks = append(feedbacks, fb)
		return answers[len(feedbacks)-1], nil
	}
	d, err := Ask[decision](context.Background(), ask)
	if err != nil {
		t.Fatal(err)
	}
	if d.Action != "done" || len(feedbacks) != 3 {
		t.Fatalf("Ask = %+v after %d asks", d, len(feedbacks))
	}
	if feedbacks[0] != "" {
		t.Fatalf("first feedback = %q, want empty", feedbacks[0])
	}
	if !strings.Contains(feedbacks[1], "did not contain a JSON object") ||
		!strings.Contains(feedbacks[1], `"action": "continue" | "ask_user" | "done"`) ||
		!strings.Contains(feedbacks[1], "<DECISION></DECISION>") {
		t.Fatalf("feedback 2 = %q", feedbacks[1])
	}
	if !strings.Contains(feedbacks[2], `field action: must be one of continue, ask_user, done; got "finish"`) {
		t.Fatalf("feedback 3 = %q", feedbacks[2])
	}
}

func TestAskExhausted(t *testing.T) {
	calls := 0
	ask := func(ctx context.Context, fb string) (string, error) {
		calls++
		return `{"speak":"x","action":"bad"}`, nil
	}
	_, err := Ask[decision](context.Background(), ask, WithRetries(2))
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("Ask error = %v, want *Error", err)
	}
	if calls != 3 || len(ce.Attempts) != 3 || ce.Attempts[2].Answer != `{"speak":"x","action":"bad"}` {
		t.Fatalf("calls = %d, attempts = %+v", calls, ce.Attempts)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("errors.Is(err, ErrInvalid) = false for %v", err)
	}
	if b, err := json.Marshal(ce); err != nil || !strings.Contains(string(b), `must be one of`) {
		t.Fatalf("json.Marshal(*Error) = %s, %v", b, err)
	}
}

func TestAskModelError(t *testing.T) {
	boom := errors.New("boom")
	_, err := Ask[decision](context.Background(), func(context.Context, string) (string, error) { return "", boom })
	var ce *Error
	if !errors.Is(err, boom) || errors.As(err, &ce) {
		t.Fatalf("Ask error = %v, want the model's error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Ask[decision](ctx, func(context.Context, string) (string, error) { return "", nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Ask error = %v, want context.Canceled", err)
	}
}

func TestSchemaExtractCanonical(t *testing.T) {
	s, err := schema.For[decision]()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ExtractFor(`Sure: {"Speak":"x","ACTION":"done","day":null,}`, s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(got, &m); err != nil || m["speak"] != "x" || m["action"] != "done" {
		t.Fatalf("Extract = %s, %v; want the schema's field names", got, err)
	}
}

func TestSyntaxOffsets(t *testing.T) {
	tests := []struct {
		in   string
		off  int
		near string
	}{
		{`{'a': 1}`, 1, `'a'`},
		{"{\"a\": 1, /* note */ \"b\": x}", 25, "x}"},
		{"{\"a\": 1, /* never closed \"b\": 2}", 9, "/*"},
		{"{\"a\": \"two\nlines\", \"b\": }", 24, "}"},
	}
	for _, tt := range tests {
		_, err := Extract(tt.in)
		var se *SyntaxError
		if !errors.As(err, &se) || se.Offset != tt.off || !strings.Contains(se.Near, tt.near) {
			t.Errorf("Extract(%q) error = %v, want offset %d near %q", tt.in, err, tt.off, tt.near)
		}
	}
}

type nullable struct {
	N *int `json:"n,omitempty" jsonschema:"nullable"`
}

func TestNullableMessage(t *testing.T) {
	if _, err := Decode[nullable](`{"n":null}`); err != nil {
		t.Fatal(err)
	}
	_, err := Decode[nullable](`{"n":"5"}`)
	if err == nil || err.Error() != `field n: must be an integer or null; got "5"` {
		t.Fatalf("Decode error = %v", err)
	}
}

func TestParseSchemaRefs(t *testing.T) {
	for _, ref := range []string{"file:///etc/passwd", "https://example.com/s.json"} {
		_, err := schema.Parse(json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"` + ref + `"}}}`))
		if !errors.Is(err, schema.ErrSchema) {
			t.Errorf("$ref %s: error = %v, want schema.ErrSchema", ref, err)
		}
	}
	s, err := schema.Parse(json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
		"properties":{"a":{"type":"integer","exclusiveMinimum":0}},"required":["a"],"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate([]byte(`{"a":1,"extra":true}`)); err != nil {
		t.Errorf("unknown field: %v", err)
	}
	if err := s.Validate([]byte(`{"a":0}`)); err == nil || err.Error() != "field a: must be > 0; got 0" {
		t.Errorf("exclusiveMinimum: %v", err)
	}
}

func TestNumbers(t *testing.T) {
	type ids struct {
		ID uint64  `json:"id"`
		F  float64 `json:"f,omitempty"`
	}
	s, err := schema.For[ids]()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ExtractFor(`{"Id": 12345678901234567891}`, s)
	if err != nil || !strings.Contains(string(got), "12345678901234567891") {
		t.Fatalf("Extract = %s, %v; want every digit kept", got, err)
	}
	v, err := Decode[ids](`{"id": 12345678901234567891}`)
	if err != nil || v.ID != 12345678901234567891 {
		t.Fatalf("Decode = %+v, %v", v, err)
	}
	_, err = Decode[ids](`{"id": 1, "f": 1e400}`)
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Problems[0].Field != "f" {
		t.Fatalf("Decode(1e400) error = %v, want a problem on field f", err)
	}
}

// scripted is an llm.Model that answers from a list and records what it
// was sent.
type scripted struct {
	answers []string
	sent    [][]llm.Message
}

func (s *scripted) Generate(_ context.Context, msgs []llm.Message, _ ...llm.Option) (*llm.Response, error) {
	s.sent = append(s.sent, slices.Clone(msgs))
	a := s.answers[0]
	s.answers = s.answers[1:]
	return &llm.Response{Message: llm.Assistant(a)}, nil
}

func (s *scripted) Stream(context.Context, []llm.Message, ...llm.Option) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) { yield(llm.Chunk{}, errors.New("not streamed")) }
}

// TestChat: the conversation keeps the rejected answer and the feedback,
// and goes on after Ask for a check of the caller's own.
func TestChat(t *testing.T) {
	m := &scripted{answers: []string{"sure!", `{"action":"done","speak":"ok"}`, `{"action":"continue","speak":"again"}`}}
	msgs := []llm.Message{llm.System("answer in JSON"), llm.User("go")}
	ask := Chat(m, &msgs)
	d, err := Ask[decision](context.Background(), ask)
	if err != nil || d.Action != "done" {
		t.Fatalf("Ask = %+v, %v", d, err)
	}
	if len(m.sent) != 2 || len(m.sent[1]) != 4 || m.sent[1][2].Content != "sure!" || m.sent[1][3].Role != llm.RoleUser {
		t.Fatalf("second request %+v", m.sent[len(m.sent)-1])
	}
	if _, err := ask(context.Background(), "not done yet"); err != nil {
		t.Fatal(err)
	}
	last := m.sent[2]
	if len(msgs) != 7 || len(last) != 6 || last[5].Content != "not done yet" || msgs[6].Content != `{"action":"continue","speak":"again"}` {
		t.Errorf("conversation %d messages, last request %d", len(msgs), len(last))
	}
}
