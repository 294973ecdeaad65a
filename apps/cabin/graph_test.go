package cabin

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/llm/llmtest"
	"github.com/loomkit/loom/llm/openai"
)

// modelApp is an App whose model answers with replies, in order.
func modelApp(t *testing.T, replies ...llmtest.Reply) *App {
	t.Helper()
	srv := llmtest.New(t, replies...)
	m, err := openai.New(openai.Config{BaseURL: srv.BaseURL(), Model: "test", MaxRetries: -1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return newApp(t, Options{Model: m})
}

// modelDecision is the model's answer carrying a plan.
func modelDecision(json string) llmtest.Reply {
	return llmtest.Text("<DECISION>" + json + "</DECISION>")
}

// documentedFlow is a row of the README's table of flows: a name, the
// turns that take it (none when they need a model or the fill-slots
// endpoint) and its path as `loom graph scenarios` prints it.
type documentedFlow struct {
	name  string
	turns []string
	path  string
}

// documentedFlows reads the table of flows under "## The graph" in the
// README.
func documentedFlows(t *testing.T) []documentedFlow {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "| flow | said | path |\n| --- | --- | --- |\n")
	if !ok {
		t.Fatal("README.md has no table of flows")
	}
	var flows []documentedFlow
	for line := range strings.Lines(table) {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(cells) != 3 {
			t.Fatalf("README flow row %q: want 3 cells", line)
		}
		f := documentedFlow{name: strings.TrimSpace(cells[0]), path: strings.TrimSpace(cells[2])}
		if said := strings.TrimSpace(cells[1]); said != "–" {
			for turn := range strings.SplitSeq(said, " / ") {
				f.turns = append(f.turns, turn)
			}
		}
		flows = append(flows, f)
	}
	if len(flows) < 15 {
		t.Fatalf("README documents %d flows; want the table of them all", len(flows))
	}
	return flows
}

// TestScenariosDocumented checks that every flow the README documents is
// a path of the graph as `loom graph scenarios cabin` lists it, and that
// the flow's turns take that path: the last turn's nodes, from normalize
// (a resumed turn starts at the node that asked), are the path's, up to
// its end or to the node where it loops back.
func TestScenariosDocumented(t *testing.T) {
	app := newApp(t, Options{})
	withModel := modelApp(t, modelDecision(`{"kind":"single","steps":[{"intent":"cabin_set_ac","slots":{"temperature":"22"}}]}`))
	var listed []string
	for _, s := range app.graph.Scenarios() {
		listed = append(listed, s.String())
	}
	for _, f := range documentedFlows(t) {
		t.Run(f.name, func(t *testing.T) {
			if !slices.Contains(listed, f.path) {
				t.Fatalf("flow %q: path %s is not among the graph's scenarios", f.name, f.path)
			}
			if len(f.turns) == 0 {
				return
			}
			want, loops := pathNodes(f.path)
			session := "flow-" + strings.ReplaceAll(f.name, " ", "-")
			on := app
			if slices.Contains(want, nodePlanModel) {
				on = withModel
			}
			var took []string
			var asked bool
			for _, text := range f.turns {
				took, asked = traceTurn(t, on, session, text)
			}
			if asked && loops {
				want = want[:len(want)-1] // the answer comes back in at the next turn
			}
			if i := slices.Index(took, nodeNormalize); i >= 0 {
				took = took[i:]
			}
			if loops && len(took) > len(want) {
				took = took[:len(want)]
			}
			if !slices.Equal(took, want) {
				t.Errorf("flow %q (%s): the last turn took\n  %s\nwant\n  %s", f.name, strings.Join(f.turns, " / "), strings.Join(took, " → "), strings.Join(want, " → "))
			}
		})
	}
}

// pathNodes are the nodes of a printed scenario without START, END and
// the notes; loops reports whether it ends by looping back.
func pathNodes(path string) (nodes []string, loops bool) {
	for hop := range strings.SplitSeq(path, " → ") {
		name, note, _ := strings.Cut(hop, " (")
		if name == "START" || name == "END" {
			continue
		}
		nodes = append(nodes, name)
		loops = strings.HasPrefix(note, "loop")
	}
	return nodes, loops
}

// traceTurn runs one chat turn on session as App.Chat does (resuming a
// pending question, else starting a run) and returns the nodes it ran
// and whether it ended asking a question.
func traceTurn(t *testing.T, app *App, session, text string) (nodes []string, asked bool) {
	t.Helper()
	ctx := context.Background()
	in := graph.Input[State]{Update: func(s *State) { s.Text, s.SessionID, s.VehicleID = text, session, session }} // a car per flow
	head, err := app.saver.Get(ctx, session, "")
	switch {
	case err == nil && head.Interrupt != nil:
		in = graph.Input[State]{Resume: Answer{Text: text}}
	case err != nil && !errors.Is(err, checkpoint.ErrNotFound):
		t.Fatal(err)
	}
	for ev, err := range app.graph.Stream(ctx, session, in) {
		if err != nil {
			t.Fatalf("turn %q: %v", text, err)
		}
		switch ev.Kind {
		case graph.KindNodeStart:
			nodes = append(nodes, ev.Node)
		case graph.KindInterrupt:
			asked = true
		}
	}
	return nodes, asked
}

// conversations are the turns of the README's flows and of the scripted
// conversations (their chat turns).
func conversations(t *testing.T) [][]string {
	var out [][]string
	for _, f := range documentedFlows(t) {
		out = append(out, f.turns)
	}
	for _, f := range flows {
		var texts []string
		for _, tu := range f.turns {
			if tu.fill == nil {
				texts = append(texts, tu.text)
			}
		}
		out = append(out, texts)
	}
	return out
}

// routeStates runs conversations on app and collects, for every node, the
// states it left, which its route chose from.
func routeStates(t *testing.T, app *App, conversations [][]string, seen map[string][]State) {
	t.Helper()
	ctx := context.Background()
	for i, turns := range conversations {
		session := "routes-" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		for _, text := range turns {
			in := graph.Input[State]{Update: func(s *State) { s.Text, s.SessionID, s.VehicleID = text, session, session }} // a car per flow
			if head, err := app.saver.Get(ctx, session, ""); err == nil && head.Interrupt != nil {
				in = graph.Input[State]{Resume: Answer{Text: text}}
			}
			for ev, err := range app.graph.Stream(ctx, session, in) {
				if err != nil {
					t.Fatalf("%q: %v", text, err)
				}
				if ev.Kind == graph.KindState {
					seen[ev.Node] = append(seen[ev.Node], ev.Data.(State))
				}
			}
		}
	}
}

// disguisedGoto reports a state on which choose returns a node name kept
// verbatim in the state, and chooses otherwise once every string equal to
// that name is changed: a route that only reads where a node said to go.
func disguisedGoto(t *testing.T, choose graph.RouteFunc[State], states []State) (State, string, bool) {
	t.Helper()
	for _, s := range states {
		target := choose(s)
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		changed := 0
		v = replaceStrings(v, target, "elsewhere", &changed)
		if changed == 0 {
			continue
		}
		b, err = json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var tampered State
		if err := json.Unmarshal(b, &tampered); err != nil {
			t.Fatal(err)
		}
		if got := choose(tampered); got != target {
			return s, target, true
		}
	}
	return State{}, "", false
}

// replaceStrings replaces every string value equal to old in a decoded
// JSON value, counting the replacements. Keys stay: they are the state's
// field names.
func replaceStrings(v any, old, repl string, n *int) any {
	switch x := v.(type) {
	case string:
		if x == old {
			*n++
			return repl
		}
	case []any:
		for i := range x {
			x[i] = replaceStrings(x[i], old, repl, n)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = replaceStrings(e, old, repl, n)
		}
	}
	return v
}

// TestRoutesAreNotGotos checks that no route returns a node name that a
// node stored in the state: every route's choice on every state of the
// documented flows and the scripted conversations stays the same when
// each string in the state equal to the chosen node's name is changed.
// A route that reads such a string, as a Next field would be, is caught
// on the same states.
func TestRoutesAreNotGotos(t *testing.T) {
	app := newApp(t, Options{})
	seen := map[string][]State{}
	routeStates(t, app, conversations(t), seen)
	withModel := modelApp(t, modelDecision(`{"kind":"single","steps":[{"intent":"cabin_set_ac","slots":{"temperature":"22"}}]}`),
		modelDecision(`{"kind":"out_of_scope"}`), llmtest.ServerError())
	routeStates(t, withModel, [][]string{{"有点热"}, {"今天股市怎么样"}, {"起雾了"}}, seen)
	for _, r := range app.routes() {
		if len(seen[r.from]) == 0 {
			t.Errorf("route from %s: no conversation reached it", r.from)
			continue
		}
		if s, target, ok := disguisedGoto(t, r.choose, seen[r.from]); ok {
			t.Errorf("route from %s returns %q, read from the state %+v", r.from, target, s.Turn)
		}
	}
	// The check bites: fuse_decide stores its decision as "execute",
	// which is also a node's name, and a route returning it is caught.
	readDecision := func(s State) string { return s.Reply.Debug.Decision }
	if _, _, ok := disguisedGoto(t, readDecision, seen[nodeFuseDecide]); !ok {
		t.Error("a route that returns the stored decision was not caught")
	}
	if _, ok := jsonFields(State{})["next"]; ok {
		t.Error("State has a next field")
	}
}

// jsonFields are the top-level JSON fields of v.
func jsonFields(v any) map[string]any {
	b, _ := json.Marshal(v)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// TestTurnCheckpoints checks that the pure steps share the checkpoints of
// the others: a command writes its input, its condition test, its tool
// call and its reply; a question its input and the question.
func TestTurnCheckpoints(t *testing.T) {
	app := newApp(t, Options{})
	ctx := context.Background()
	for _, c := range []struct {
		text  string
		nodes []string // of the checkpoints after the input's, oldest first
	}{
		{"打开车窗", []string{nodeCondition, nodeCallTool, nodeRespond}},
		{"导航", []string{nodeFillSlots}},
	} {
		if _, err := app.Chat(ctx, ChatRequest{SessionID: c.text, Text: c.text}); err != nil {
			t.Fatal(err)
		}
		cps, err := app.saver.List(ctx, c.text, 0)
		if err != nil {
			t.Fatal(err)
		}
		var nodes []string
		for _, cp := range slices.Backward(cps) {
			if cp.Meta.Node != "" {
				nodes = append(nodes, cp.Meta.Node)
			}
		}
		if len(cps) != len(c.nodes)+1 || !slices.Equal(nodes, c.nodes) {
			t.Errorf("%q: %d checkpoints, of the steps %v; want the input's and %v", c.text, len(cps), nodes, c.nodes)
		}
	}
}
