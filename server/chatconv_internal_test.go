package server

import (
	"encoding/json"
	"testing"
)

func TestParseChatMessages(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []chatMessage
		bad  bool
	}{
		{in: `[{"type":"human","content":"hi","id":"a"}]`, want: []chatMessage{{Role: roleHuman, Text: "hi", ID: "a"}}},
		{in: `[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url"},{"type":"text","text":"b"}]},{"role":"assistant","content":"ok"}]`,
			want: []chatMessage{{Role: roleHuman, Text: "ab"}, {Role: roleAI, Text: "ok"}}},
		{in: `[{"type":"system","content":"be nice"},{"role":"tool","content":null}]`, want: []chatMessage{{Role: roleSystem, Text: "be nice"}, {Role: roleTool}}},
		{in: `[{"type":"robot","content":"x"}]`, bad: true},
		{in: `[{"role":"user","content":42}]`, bad: true},
		{in: `"hi"`, bad: true},
	} {
		got, err := parseChatMessages(json.RawMessage(c.in))
		if (err != nil) != c.bad {
			t.Errorf("%s: error %v", c.in, err)
			continue
		}
		if len(got) != len(c.want) {
			t.Errorf("%s: %+v, want %+v", c.in, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: message %d %+v, want %+v", c.in, i, got[i], c.want[i])
			}
		}
	}
}

func TestConvHash(t *testing.T) {
	h := func(msgs ...chatMessage) string { return convHash(msgs) }
	u, a := chatMessage{Role: roleHuman, Text: "launch"}, chatMessage{Role: roleAI, Text: "Approve?\n"}
	base := h(u, a)
	same := []string{
		h(chatMessage{Role: roleHuman, Text: "  launch "}, chatMessage{Role: roleAI, Text: "Approve?"}),
		h(chatMessage{Role: roleSystem, Text: "you are"}, u, a, chatMessage{Role: roleTool, Text: "x"}),
		extendHash(h(u), a),
	}
	for i, x := range same {
		if x != base {
			t.Errorf("same conversation %d hashed differently", i)
		}
	}
	differ := []string{h(u), h(a, u), h(u, chatMessage{Role: roleAI, Text: "Approve"}), h(u, chatMessage{Role: roleHuman, Text: "Approve?"}), h(u, a, u), ""}
	for i, x := range differ {
		if x == base {
			t.Errorf("other conversation %d hashed the same", i)
		}
	}
}
