package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/loomkit/loom/checkpoint"
)

// The demo's chat text shows the checklist, with the question while it
// waits and the outcome after.
func TestDemoReply(t *testing.T) {
	state := json.RawMessage(`{"title":"launch","items":["A","B"],"rounds":3,"approved":true,"note":"ship it"}`)
	q := &checkpoint.Interrupt{ID: "i1", Node: "confirm", Payload: json.RawMessage(`{"summary":"Checklist \"launch\": 2 items. Approve?","items":["A","B"]}`)}
	for _, c := range []struct {
		name    string
		state   json.RawMessage
		pending *checkpoint.Interrupt
		want    []string
	}{
		{"waiting", state, q, []string{`Checklist "launch": 2 items. Approve?`, "- A\n- B", `Reply "yes" to approve`}},
		{"approved", state, nil, []string{`Checklist "launch" approved.`, "- A", "Note: ship it"}},
		{"rejected", json.RawMessage(`{"title":"x","items":["A"]}`), nil, []string{`Checklist "x" rejected.`}},
		{"not a doc", json.RawMessage(`[1]`), nil, []string{"[1]"}},
	} {
		got := demoReply(c.state, c.pending)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: reply %q lacks %q", c.name, got, w)
			}
		}
	}
	in, err := demoAgent().FromChat("  launch ")
	if err != nil || string(in) != `{"title":"launch"}` {
		t.Errorf("FromChat = %s, %v", in, err)
	}
}
