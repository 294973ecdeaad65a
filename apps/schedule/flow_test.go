package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/intent"
	"github.com/loomkit/loom/tool"
)

// answerModes are the two ways a person answers a card: resuming the
// interrupt (what the server's chat API does), or sending a new message
// while it waits (seed 001's Chat resume).
var answerModes = []struct {
	name   string
	resume bool
}{{"resume", true}, {"new message", false}}

// onDays reports the stored items placed on the given days of the week.
func onDays(s *Schedule, days ...int) []string {
	var out []string
	for _, it := range s.Items {
		if it.Placed() && slices.Contains(days, s.Window.Day(it.Day).DayOfWeek) {
			out = append(out, it.Name)
		}
	}
	return out
}

// The three requests of seed 001 §2.3, with no model: plan card → accept →
// tool card → accept → delivered.
func TestThreeRequests(t *testing.T) {
	for _, mode := range answerModes {
		t.Run(mode.name, func(t *testing.T) {
			p := start(t, "", nil)
			res := p.say(t, "t", "帮我安排下周的复习", mode.resume)
			if k := pendingKind(t, res); k != kindPlan {
				t.Fatalf("request 1 waits on %q, want a plan card", k)
			}
			if n := len(res.State.Plan.Steps); n != 2 {
				t.Errorf("plan has %d steps, want 2 (rough schedule, optimise)", n)
			}

			res = p.say(t, "t", "确认", mode.resume)
			if k := pendingKind(t, res); k != "tool:"+toolApplyCandidate {
				t.Fatalf("request 2 waits on %q, want a tool card", k)
			}
			req, args := toolCard(t, res)
			if args.Index != 0 || !strings.Contains(req.Summary, "放置 10 项") {
				t.Errorf("tool card %+v %q, want candidate 0 placing the 10 items", args, req.Summary)
			}
			if n := len(p.schedule(t).Pending()); n != 10 {
				t.Errorf("%d items pending before the accept, want 10: nothing is written unconfirmed", n)
			}

			res = p.say(t, "t", "确认", mode.resume)
			if k := pendingKind(t, res); k != "" {
				t.Fatalf("request 3 waits on %q, want the run done", k)
			}
			if res.State.Phase != phaseDelivered || res.State.Outcome != outcomeDone {
				t.Errorf("phase %s outcome %s, want delivered and done", res.State.Phase, res.State.Outcome)
			}
			if !strings.Contains(res.State.Reply, "健康度 65.0 →") {
				t.Errorf("summary lacks the health before and after:\n%s", res.State.Reply)
			}
			s := p.schedule(t)
			if n := len(s.Pending()); n != 0 || s.Revision != 1 {
				t.Errorf("after delivery: %d pending, revision %d; want 0 and 1 (one commit)", n, s.Revision)
			}
			if err := s.Check(); err != nil {
				t.Error(err)
			}
		})
	}
}

// Rejecting a plan goes back to planning, with the reason.
func TestRejectPlan(t *testing.T) {
	for _, mode := range answerModes {
		t.Run(mode.name, func(t *testing.T) {
			p := start(t, "", nil)
			p.say(t, "t", "帮我安排下周的复习", mode.resume)
			res := p.say(t, "t", "取消,周三不行", mode.resume)
			if k := pendingKind(t, res); k != kindPlan {
				t.Fatalf("after the rejection the run waits on %q, want a new plan card", k)
			}
			if !strings.Contains(res.State.Plan.Steps[0].Content, "避开：周三") {
				t.Errorf("new plan ignores the reason: %q", res.State.Plan.Steps[0].Content)
			}
			p.say(t, "t", "确认", mode.resume)
			if res := p.say(t, "t", "确认", mode.resume); pendingKind(t, res) != "" {
				t.Fatalf("not delivered: %s", pendingKind(t, res))
			}
			s := p.schedule(t)
			if on := onDays(s, 3); len(on) > 0 || len(s.Pending()) > 0 {
				t.Errorf("on Wednesday: %v; pending: %d", on, len(s.Pending()))
			}
		})
	}
}

// Rejecting a tool card makes the chooser take another candidate.
func TestRejectTool(t *testing.T) {
	for _, mode := range answerModes {
		t.Run(mode.name, func(t *testing.T) {
			p := start(t, "", nil)
			want := Analyze(p.schedule(t), ScanOptions{}).Candidates
			if len(want) < 2 {
				t.Fatalf("sample has %d place candidates, want 2", len(want))
			}
			p.say(t, "t", "帮我安排下周的复习", mode.resume)
			first := p.say(t, "t", "确认", mode.resume)
			_, a1 := toolCard(t, first)
			second := p.say(t, "t", "不要", mode.resume)
			req, a2 := toolCard(t, second)
			if a1.Index != 0 || a2.Index != 1 || !strings.Contains(req.Summary, "集中前置") {
				t.Fatalf("cards chose candidates %d then %d (%s), want 0 then 1", a1.Index, a2.Index, req.Summary)
			}
			if res := p.say(t, "t", "确认", mode.resume); pendingKind(t, res) != "" {
				t.Fatalf("not delivered: %s", pendingKind(t, res))
			}
			s := p.schedule(t)
			for _, m := range want[1].Moves {
				if it := s.Item(m.Task); !it.Placed() || it.Day != m.Day || it.Start != m.Start {
					t.Errorf("%s at %s, want candidate 1's %s", it.Name, s.Where(it.Day, it.Start, it.Slots), s.Where(m.Day, m.Start, it.Slots))
				}
			}
		})
	}
}

// After every candidate is rejected the chooser asks which days to avoid,
// and the answer shapes the next candidate.
func TestAskUser(t *testing.T) {
	for _, mode := range answerModes {
		t.Run(mode.name, func(t *testing.T) {
			p := start(t, "", nil)
			p.say(t, "t", "帮我安排下周的复习", mode.resume)
			p.say(t, "t", "确认", mode.resume)
			p.say(t, "t", "取消", mode.resume)
			res := p.say(t, "t", "取消", mode.resume)
			if k := pendingKind(t, res); k != kindAskUser {
				t.Fatalf("after two rejections the run waits on %q, want ask_user", k)
			}
			res = p.say(t, "t", "周三和周日都不行", mode.resume)
			_, args := toolCard(t, res)
			if !slices.Equal(args.Avoid, []int{3, 7}) {
				t.Errorf("card avoids %v, want [3 7]", args.Avoid)
			}
			if res := p.say(t, "t", "确认", mode.resume); pendingKind(t, res) != "" {
				t.Fatalf("not delivered: %s", pendingKind(t, res))
			}
			s := p.schedule(t)
			if on := onDays(s, 3, 7); len(on) > 0 || len(s.Pending()) > 0 {
				t.Errorf("on Wednesday or Sunday: %v; pending: %d", on, len(s.Pending()))
			}
		})
	}
}

// The process dies between a tool card and its accept; a new process — a
// fresh Compile on the reopened SQLite file — takes the accept.
func TestKilledBetweenCardAndAccept(t *testing.T) {
	first := start(t, "", nil)
	first.say(t, "t", "帮我安排下周的复习", true)
	card := first.say(t, "t", "确认", true)
	req, _ := toolCard(t, card)
	first.stop()

	second := start(t, first.path, nil)
	cp, err := second.saver.Get(context.Background(), "t", "")
	if err != nil || cp.Interrupt == nil || cp.Interrupt.ID != card.Interrupt.ID {
		t.Fatalf("reopened thread head: %v, %+v; want the card %s pending", err, cp, card.Interrupt.ID)
	}
	res := second.say(t, "t", "确认", true)
	if k := pendingKind(t, res); k != "" {
		t.Fatalf("resumed run waits on %q", k)
	}
	s := second.schedule(t)
	if len(s.Pending()) != 0 || s.Revision != 1 {
		t.Errorf("after the resume: %d pending, revision %d; want 0, 1", len(s.Pending()), s.Revision)
	}
	if !strings.Contains(res.State.Reply, strings.SplitN(req.Summary, "：", 2)[0]) {
		t.Errorf("summary does not report the card's change %q:\n%s", req.Summary, res.State.Reply)
	}
}

// A message that is no task gets a chat reply, pseudo-streamed.
func TestChat(t *testing.T) {
	p := start(t, "", nil)
	kinds := events(t, p.graph, "t", graph.Input[State]{Update: func(s *State) { s.Message = "你好" }})
	res := p.say(t, "t2", "你好", false)
	if pendingKind(t, res) != "" || res.State.Phase != phaseChatting || !strings.Contains(res.State.Reply, "10 个任务待安排") {
		t.Errorf("phase %s reply %q; want a chat reply naming the 10 pending tasks", res.State.Phase, res.State.Reply)
	}
	if kinds[graph.KindToken] < 2 {
		t.Errorf("%d token events, want the reply pseudo-streamed in chunks", kinds[graph.KindToken])
	}
}

// The run emits the events the server's ext kinds show.
func TestEvents(t *testing.T) {
	p := start(t, "", nil)
	all := map[graph.Kind]int{}
	for _, in := range []graph.Input[State]{
		{Update: func(s *State) { s.Message = "帮我安排下周的复习" }},
		{Resume: Answer{ConfirmAnswer: tool.ConfirmAnswer{Accept: true}}},
		{Resume: Answer{ConfirmAnswer: tool.ConfirmAnswer{Accept: true}}},
	} {
		for k, n := range events(t, p.graph, "t", in) {
			all[k] += n
		}
	}
	for _, k := range []graph.Kind{graph.KindStatus, graph.KindToolCall, graph.KindToolResult, graph.KindToken, graph.KindReasoning, graph.KindInterrupt} {
		if all[k] == 0 {
			t.Errorf("no %s events; got %v", k, all)
		}
	}
}

// A write that runs again in the same graph step (a crash after the commit,
// before the checkpoint) returns its first result and changes nothing more.
func TestWriteOncePerStep(t *testing.T) {
	p := start(t, "", nil)
	g := graph.New[int]("replay")
	var results []string
	g.Node("write", func(ctx context.Context, n int) (int, error) {
		for range 2 {
			out, err := p.agent.applyCandidate(ctx, applyArgs{Index: 0, Revision: 0})
			if err != nil {
				return n, err
			}
			results = append(results, out)
		}
		return n, nil
	}).Edge(graph.Start, "write").Edge("write", graph.End)
	c, err := g.Compile()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Invoke(context.Background(), "t", nil); err != nil {
		t.Fatal(err)
	}
	if s := p.schedule(t); s.Revision != 1 || results[0] != results[1] {
		t.Errorf("revision %d, results %q; want one commit and the same result twice", s.Revision, results)
	}
}

// The chat API's answers decode into every question type; a reply that
// is neither a yes nor a no asks a card again and answers ask_user.
func TestParseAnswer(t *testing.T) {
	askUser, _ := json.Marshal(Interaction{Kind: kindAskUser, Text: "哪几天不方便？"})
	planCard, _ := json.Marshal(Interaction{Kind: kindPlan, Text: "计划"})
	for _, tc := range []struct {
		text    string
		consent intent.Consent
		reason  string
	}{
		{"确认", intent.Accepted, ""},
		{"好的,开始吧", intent.Accepted, ""},
		{"没问题", intent.Accepted, ""},
		{"yes please", intent.Accepted, ""},
		{"accept", intent.Accepted, ""},
		{"取消", intent.Rejected, ""},
		{"取消,周三不行", intent.Rejected, "周三不行"},
		{"周三不行", intent.Rejected, "周三不行"},
		{"no", intent.Rejected, ""},
		{"reject: too early", intent.Rejected, "too early"},
		{"对不起，我不同意", intent.Rejected, "对不起，我不同意"},
		{"行不通", intent.Rejected, ""},
		{"可以吗？", intent.Unclear, "可以吗？"},
		{"好像可以", intent.Unclear, "好像可以"},
		{"周三和周日", intent.Unclear, "周三和周日"},
		{"yesterday was busy", intent.Unclear, "yesterday was busy"},
	} {
		a, err := parseAnswer(tc.text)
		accept := tc.consent == intent.Accepted
		if a.Accept != accept || a.Continue != accept || a.Note != tc.reason || a.Text != tc.text || errors.Is(err, intent.ErrUnclear) != (tc.consent == intent.Unclear) {
			t.Errorf("parseAnswer(%q) = %+v, %v; want %s, reason %q", tc.text, a, err, tc.consent, tc.reason)
		}
		raw, err := chatAnswer(tc.text, &checkpoint.Interrupt{Payload: planCard})
		var confirm struct {
			Accept bool   `json:"accept"`
			Note   string `json:"note"`
		}
		if tc.consent == intent.Unclear {
			if !errors.Is(err, intent.ErrUnclear) {
				t.Errorf("chatAnswer(%q) to a card = %s, %v; want it asked again", tc.text, raw, err)
			}
		} else if err != nil || json.Unmarshal(raw, &confirm) != nil || confirm.Accept != accept {
			t.Errorf("chatAnswer(%q) = %s, %v: not a tool.ConfirmAnswer with accept %v", tc.text, raw, err, accept)
		}
		var ans Answer
		if raw, err := chatAnswer(tc.text, &checkpoint.Interrupt{Payload: askUser}); err != nil || json.Unmarshal(raw, &ans) != nil || ans.Text != tc.text {
			t.Errorf("chatAnswer(%q) to ask_user = %s, %v; want the text", tc.text, raw, err)
		}
	}
}

func TestParseDays(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []int
	}{
		{"周三不行", []int{3}},
		{"星期五和礼拜一", []int{1, 5}},
		{"周末要休息", []int{6, 7}},
		{"下周的复习", nil},
		{"not on Wednesday or sat", []int{3, 6}},
		{"周日、周二", []int{2, 7}},
	} {
		if got := parseDays(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("parseDays(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

func TestParseOutcome(t *testing.T) {
	for _, tc := range []struct{ answer, action, text string }{
		{"next_plan: 已放置", actionNextPlan, "已放置"},
		{"done：全部完成", outcomeDone, "全部完成"},
		{"ABORT: 不行", outcomeAbort, "不行"},
		{"donezo", actionNextPlan, "donezo"},
		{"排好了", actionNextPlan, "排好了"},
	} {
		if a, txt := parseOutcome(tc.answer); a != tc.action || txt != tc.text {
			t.Errorf("parseOutcome(%q) = %q, %q; want %q, %q", tc.answer, a, txt, tc.action, tc.text)
		}
	}
}
