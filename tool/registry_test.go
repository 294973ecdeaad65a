package tool

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func stub(name string, kind Kind) Tool {
	return New(name, "Does "+name+".", kind, func(context.Context, noArgs) (string, error) { return name + " done", nil })
}

func testRegistry(t *testing.T) *Registry {
	t.Helper()
	r := NewRegistry()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(r.Register("", "", stub("ask_user", Read)))
	must(r.Register("schedule", "", overviewTool(), stub("find_free", Read)))
	must(r.Register("schedule", "edit", placeTool(), stub("move", Write)))
	must(r.Register("schedule", "optimize", stub("analyze_health", Read)))
	must(r.Register("web", "", stub("web_search", Read)))
	must(r.RegisterContextTools())
	return r
}

func visibleNames(r *Registry, v View) string {
	var out []string
	for _, d := range r.Definitions(v) {
		out = append(out, d.Name)
	}
	return strings.Join(out, ",")
}

func TestRegistryViews(t *testing.T) {
	r := testRegistry(t)
	core := "ask_user,context_tools_add,context_tools_remove"
	tests := []struct {
		name string
		edit func(v *View)
		want string
	}{
		{"zero view", func(v *View) {}, core},
		{"domain", func(v *View) { v.Add("schedule") }, "ask_user,get_overview,find_free,context_tools_add,context_tools_remove"},
		{"domain and pack", func(v *View) { v.Add("schedule", "edit") }, "ask_user,get_overview,find_free,place,move,context_tools_add,context_tools_remove"},
		{"remove pack", func(v *View) { v.Add("schedule", "edit", "optimize"); v.Remove("schedule", "edit") },
			"ask_user,get_overview,find_free,analyze_health,context_tools_add,context_tools_remove"},
		{"remove domain drops its packs", func(v *View) { v.Add("schedule", "edit"); v.Add("web"); v.Remove("schedule") },
			"ask_user,web_search,context_tools_add,context_tools_remove"},
		{"pack without domain shown after re-add", func(v *View) { v.Add("schedule", "edit"); v.Remove("schedule"); v.Add("schedule") },
			"ask_user,get_overview,find_free,context_tools_add,context_tools_remove"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v View
			tt.edit(&v)
			if got := visibleNames(r, v); got != tt.want {
				t.Fatalf("visible = %s, want %s", got, tt.want)
			}
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			var back View
			if err := json.Unmarshal(b, &back); err != nil || visibleNames(r, back) != tt.want {
				t.Fatalf("view %s does not round-trip", b)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	r := testRegistry(t)
	var v View
	v.Add("schedule")
	if tl, err := r.Resolve(v, "find_free"); err != nil || tl.Name() != "find_free" {
		t.Fatalf("Resolve(find_free) = %v, %v", tl.Name(), err)
	}
	_, err := r.Resolve(v, "place")
	if !errors.Is(err, ErrNotVisible) || !strings.Contains(err.Error(), `call context_tools_add with {"domain":"schedule","packs":["edit"]} first`) {
		t.Fatalf("Resolve(place) error = %v", err)
	}
	_, err = r.Resolve(v, "plase")
	if !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), "available tools: ask_user, get_overview, find_free") {
		t.Fatalf("Resolve(plase) error = %v", err)
	}
	if err := r.Register("web", "", stub("place", Read)); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("duplicate Register error = %v", err)
	}
	if err := r.Register("", "p", stub("zz", Read)); err == nil {
		t.Fatal("a pack without a domain was accepted")
	}
}

func TestContextTools(t *testing.T) {
	r := testRegistry(t)
	var v View
	ctx := WithView(context.Background(), &v)
	call := func(name, args string) (string, error) {
		tl, err := r.Resolve(v, name)
		if err != nil {
			return "", err
		}
		return tl.Call(ctx, json.RawMessage(args))
	}
	out, err := call(AddToolName, `{"domain":"schedule","packs":["edit"]}`)
	if err != nil || out != "Tools now available: get_overview, find_free, place, move." {
		t.Fatalf("add = %q, %v", out, err)
	}
	if !reflect.DeepEqual(v, View{Domains: []string{"schedule"}, Packs: []string{"schedule/edit"}}) {
		t.Fatalf("view after add = %+v", v)
	}
	out, err = call(RemoveToolName, `{"domain":"schedule","packs":["edit"]}`)
	if err != nil || out != "Tools no longer available: place, move." {
		t.Fatalf("remove = %q, %v", out, err)
	}
	_, err = call(AddToolName, `{"domain":"sched"}`)
	if !errors.Is(err, ErrInvalidArgs) || !strings.Contains(err.Error(), "must be one of schedule, web") {
		t.Fatalf("unknown domain error = %v", err)
	}
	_, err = call(AddToolName, `{"domain":"web","packs":["edit"]}`)
	if !errors.Is(err, ErrInvalidArgs) || !strings.Contains(err.Error(), `unknown pack "edit" in domain web`) {
		t.Fatalf("unknown pack error = %v", err)
	}
	tl, _, _ := r.Lookup(AddToolName)
	if _, err := tl.Call(context.Background(), json.RawMessage(`{"domain":"web"}`)); !errors.Is(err, ErrNoView) {
		t.Fatalf("call without view: %v", err)
	}
	if !strings.Contains(tl.Description(), "schedule (packs: edit, optimize); web") {
		t.Fatalf("description = %q", tl.Description())
	}
}

// The page's confirm card and the server's reading of a typed reply send
// {"accept", "note"}: the note reaches the refusal the model is told.
func TestConfirmAnswerReadsTheNote(t *testing.T) {
	var ans ConfirmAnswer
	if err := json.Unmarshal([]byte(`{"accept":false,"note":"D4 is being painted"}`), &ans); err != nil {
		t.Fatal(err)
	}
	req := ConfirmRequest{Summary: "book D4"}
	if got := req.Rejected(ans.Note); ans.Accept || !strings.Contains(got, "D4 is being painted") {
		t.Errorf("answer %+v gives %q, want a refusal with the note", ans, got)
	}
}
