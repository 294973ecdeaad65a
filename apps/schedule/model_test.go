package schedule

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/llm/llmtest"
	"github.com/loomkit/loom/llm/openai"
)

// scripted is a fake model endpoint that answers each stage of the agent
// by its system prompt; execute answers come from the script in order.
type scripted struct {
	srv     *llmtest.Server
	mu      sync.Mutex
	execute []func(msgs []llm.Message, tools bool) llmtest.Reply
	calls   map[string]int
}

const deliverText = "已按你选的方案放好了 10 个任务。"

func newScripted(t *testing.T, execute ...func(msgs []llm.Message, tools bool) llmtest.Reply) (*scripted, llm.Model) {
	t.Helper()
	sc := &scripted{srv: llmtest.New(t), execute: execute, calls: map[string]int{}}
	sc.srv.Handle(func(req llmtest.Request) llmtest.Reply {
		msgs := req.Messages()
		system := ""
		if len(msgs) > 0 {
			system = msgs[0].Content
		}
		_, tools := req.Body["tools"]
		sc.mu.Lock()
		defer sc.mu.Unlock()
		switch {
		case strings.Contains(system, "排程助手的执行阶段"):
			n := sc.calls["execute"]
			sc.calls["execute"]++
			if n >= len(sc.execute) {
				return decideReply(`{"action":"finish","answer":"done: 脚本结束"}`)
			}
			return sc.execute[n](msgs, tools)
		case strings.Contains(system, "排程助手的规划阶段"):
			sc.calls["plan"]++
			return decideReply(`{"speak":"先从后端候选里选一个放置方案。","action":"plan_done","complexity":"moderate",
				"plan_steps":[{"content":"诊断并从候选中选择放置方案","done_when":"待安排任务都有位置"}]}`)
		case strings.Contains(system, "排程助手的交付阶段"):
			sc.calls["deliver"]++
			return llmtest.Reply{Content: deliverText, ChunkSize: 5}
		}
		sc.calls["chat"]++
		return decideReply(`{"intent":"task"}`)
	})
	m, err := openai.New(openai.Config{BaseURL: sc.srv.BaseURL(), APIKey: "test", Model: "fake", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return sc, m
}

func decideReply(obj string) llmtest.Reply { return llmtest.Text("<DECISION>" + obj + "</DECISION>") }

func callReply(tool string, args any) llmtest.Reply {
	b, _ := json.Marshal(map[string]any{"action": "call_tool", "tool": tool, "args": args})
	return decideReply(string(b))
}

// lastRevision reads the revision from the last analyze_health result.
func lastRevision(msgs []llm.Message) int64 {
	for i := len(msgs) - 1; i >= 0; i-- {
		var r Report
		if msgs[i].Role == llm.RoleTool && json.Unmarshal([]byte(msgs[i].Content), &r) == nil && r.Verdict != "" {
			return r.Revision
		}
	}
	return -1
}

// With a model, the model chooses among the backend's candidates by index:
// it takes candidate 1 where the heuristic would take 0. Its first answer
// is malformed and fed back.
func TestModelChoosesCandidate(t *testing.T) {
	var sawCandidates bool
	sc, model := newScripted(t,
		func([]llm.Message, bool) llmtest.Reply { return llmtest.Text("让我先想想……") },
		func([]llm.Message, bool) llmtest.Reply { return callReply(toolAnalyzeHealth, map[string]any{}) },
		func(msgs []llm.Message, _ bool) llmtest.Reply {
			sawCandidates = strings.Contains(msgs[len(msgs)-1].Content, `"candidates":[{"index":0`)
			return callReply(toolApplyCandidate, map[string]any{"index": 1, "revision": lastRevision(msgs)})
		},
		func([]llm.Message, bool) llmtest.Reply {
			return decideReply(`{"action":"finish","answer":"done: 已应用候选 1"}`)
		},
	)
	p := start(t, "", model)
	sch := p.schedule(t)
	want := Analyze(sch, ScanOptions{}).Candidates[1]
	after := sch.Clone()
	if err := want.Apply(after); err != nil {
		t.Fatal(err)
	}
	// The card says the health before and after, as the write will.
	wantCard := fmt.Sprintf("%s（健康度 %.1f → %.1f）", want.Summary, Measure(sch).Health(), Measure(after).Health())

	res := p.say(t, "t", "帮我安排下周的复习", true)
	if k := pendingKind(t, res); k != kindPlan || len(res.State.Plan.Steps) != 1 {
		t.Fatalf("waits on %q with %d steps, want the model's one-step plan card", k, len(res.State.Plan.Steps))
	}
	res = p.say(t, "t", "确认", true)
	req, args := toolCard(t, res)
	if args.Index != 1 || req.Summary != wantCard {
		t.Fatalf("card %+v %q, want candidate 1: %s", args, req.Summary, wantCard)
	}
	if !sawCandidates {
		t.Error("the model's view did not hold analyze_health's candidates")
	}
	res = p.say(t, "t", "确认", true)
	if k := pendingKind(t, res); k != "" {
		t.Fatalf("waits on %q, want done", k)
	}
	if res.State.Reply != deliverText {
		t.Errorf("reply %q, want the model's summary", res.State.Reply)
	}
	s := p.schedule(t)
	for _, m := range want.Moves {
		if it := s.Item(m.Task); it.Day != m.Day || it.Start != m.Start {
			t.Errorf("%s at %s, want candidate 1's %s", it.Name, s.Where(it.Day, it.Start, it.Slots), s.Where(m.Day, m.Start, it.Slots))
		}
	}
	if sc.calls["execute"] != 4 || sc.calls["chat"] != 1 || sc.calls["plan"] != 1 || sc.calls["deliver"] != 1 {
		t.Errorf("model calls %v, want chat 1, plan 1, execute 4 (one correction), deliver 1", sc.calls)
	}
}

// At the round budget the loop pauses; declining to go on delivers.
func TestRoundBudgetDelivers(t *testing.T) {
	loop := func(_ []llm.Message, tools bool) llmtest.Reply {
		if !tools {
			return llmtest.Text("一直在看概况。")
		}
		return callReply(toolOverview, map[string]any{})
	}
	_, model := newScripted(t, loop, loop, loop, loop)
	p := start(t, "", model, func(c *Config) { c.MaxRounds = 3 })
	p.say(t, "t", "帮我安排下周的复习", true)
	res := p.say(t, "t", "确认", true)
	if k := pendingKind(t, res); k != "pause" {
		t.Fatalf("waits on %q, want the pause at the round budget", k)
	}
	res = p.say(t, "t", "不用了", true)
	if k := pendingKind(t, res); k != "" || res.State.Outcome != outcomeBudget {
		t.Fatalf("waits on %q with outcome %q, want delivered with outcome budget", k, res.State.Outcome)
	}
}
