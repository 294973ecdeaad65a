package cabin

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
)

// minAccuracy is each group's accuracy as measured, the floor a change
// may not go under.
var minAccuracy = map[string]float64{"zh": 1, "en": 1, "mixed": 1, "multi": 1, "slot": 1, "service": 1}

// TestUnderstanding plays the labelled conversations of
// testdata/understanding.yml against one default server (Chinese, English
// and both) through /api/v1/agent/chat, logs each group's accuracy and
// every failure, and fails on any action whose opposite was asked for and
// on a group under its floor.
func TestUnderstanding(t *testing.T) {
	a := newAPI(t, Options{})
	set := DefaultConversations()
	if set.Len() < 300 {
		t.Errorf("the labelled set has %d conversations, want at least 300", set.Len())
	}
	say := func(_ context.Context, session, text string) (Reply, error) { return a.chat(session, text), nil }
	reset := func(context.Context) error {
		if code := a.do("POST", "/api/v1/cabin/reset", nil, nil); code != 200 {
			return fmt.Errorf("HTTP %d", code)
		}
		return nil
	}
	res, err := set.Play(context.Background(), say, reset)
	if err != nil {
		t.Fatal(err)
	}
	all, allTotal := 0, 0
	for _, g := range ConversationGroups {
		all, allTotal = all+res.Passed[g], allTotal+res.Total[g]
		t.Logf("%-8s %3d/%-3d %.1f%%", g, res.Passed[g], res.Total[g], 100*res.Accuracy(g))
		if res.Accuracy(g) < minAccuracy[g] {
			t.Errorf("group %s: accuracy %.1f%% is under its floor %.1f%%", g, 100*res.Accuracy(g), 100*minAccuracy[g])
		}
	}
	t.Logf("all      %3d/%-3d %.1f%%", all, allTotal, 100*res.Accuracy(""))
	for _, f := range res.Failures {
		t.Log("failed: " + f)
	}
	for _, o := range res.Opposites {
		t.Error("opposite action: " + o)
	}
	if !slices.Equal(slices.Sorted(maps.Keys(res.Total)), slices.Sorted(slices.Values(ConversationGroups))) {
		t.Errorf("groups played %v, want %v", slices.Sorted(maps.Keys(res.Total)), ConversationGroups)
	}
}

// TestJudge: the judge fails a turn that did the opposite, or something
// else, or nothing, and reports an opposite action.
func TestJudge(t *testing.T) {
	ran := func(typ string, intents ...string) Reply {
		r := Reply{Type: typ, Workflow: &Workflow{}}
		for i, id := range intents {
			r.Workflow.Steps = append(r.Workflow.Steps, Step{ID: fmt.Sprint(i + 1), Intent: id, Status: stepDone, Slots: map[string]string{"temperature": "22"}})
		}
		return r
	}
	for _, c := range []struct {
		turn    string
		reply   Reply
		ok      bool
		opposit string
	}{
		{"打开车窗 => cabin_window_open", ran(typeWorkflowResult, "cabin_window_open"), true, ""},
		{"打开车窗 => cabin_window_open", ran(typeWorkflowResult, "cabin_window_close"), false, "cabin_window_close"},
		{"打开车窗 => cabin_window_open", ran(typeWorkflowResult), false, ""},
		{"a => cabin_set_ac(temperature=22)", ran(typeWorkflowResult, "cabin_set_ac"), true, ""},
		{"a => cabin_set_ac(temperature=23)", ran(typeWorkflowResult, "cabin_set_ac"), false, ""},
		{"a => ?confirm", Reply{Type: typeAskConfirmation}, true, ""},
		{"a => ?confirm", ran(typeWorkflowResult, "cabin_door_unlock"), false, ""},
		{"a => -", ran(typeWorkflowResult, "cabin_ac_on"), false, ""},
	} {
		tu, err := parseTurn(c.turn)
		if err != nil {
			t.Fatal(err)
		}
		ok, _, opp := judge(tu, c.reply, map[string]Step{})
		if ok != c.ok || opp != c.opposit {
			t.Errorf("%q: ok %v, opposite %q; want %v, %q", c.turn, ok, opp, c.ok, c.opposit)
		}
	}
	for _, bad := range []string{"=> cabin_ac_on", "a => ?maybe", "a =>"} {
		if _, err := parseTurn(bad); err == nil {
			t.Errorf("parseTurn(%q): no error", bad)
		}
	}
	if _, err := ParseConversations([]byte("zh:\n  - [\"打开车窗 => cabin_window_open\"]\nfr:\n  - [\"x => -\"]\n")); err == nil {
		t.Error("a set with an unknown group parses")
	}
}

// TestPlayConversations plays the set on the app without a server, as
// loom eval conversation does.
func TestPlayConversations(t *testing.T) {
	app := newApp(t, Options{})
	set, err := ParseConversations([]byte("zh:\n  - [\"打开车窗 => cabin_window_open\"]\n  - [\"打开车窗 => cabin_window_close\"]\nen:\n  - [\"unlock the doors => ?confirm\", \"yes => cabin_door_unlock\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := app.PlayConversations(context.Background(), set)
	if err != nil {
		t.Fatal(err)
	}
	if res.Passed["zh"] != 1 || res.Total["zh"] != 2 || res.Passed["en"] != 1 || len(res.Failures) != 1 {
		t.Errorf("report %+v, want zh 1/2, en 1/1 and one failure", res)
	}
}
