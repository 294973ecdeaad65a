package schedule

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// The tools, called as the model calls them (JSON arguments, days and slots
// from 1), one after another on the sample week.
func TestTools(t *testing.T) {
	p := start(t, "", nil)
	ctx := context.Background()
	type check func(t *testing.T, out string, s *Schedule)
	item := func(id, day, start int) check {
		return func(t *testing.T, _ string, s *Schedule) {
			if it := s.Item(id); !it.Placed() || it.Day != day || it.Start != start {
				t.Errorf("task %d is %s at day %d slot %d, want placed at day %d slot %d", id, it.Status, it.Day, it.Start, day, start)
			}
		}
	}
	pending := func(id int) check {
		return func(t *testing.T, _ string, s *Schedule) {
			if it := s.Item(id); it.Placed() {
				t.Errorf("task %d is placed, want pending", id)
			}
		}
	}
	says := func(words ...string) check {
		return func(t *testing.T, out string, _ *Schedule) {
			for _, w := range words {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		}
	}
	for _, tc := range []struct {
		tool, args string
		err        string // a part of the error, or "" for success
		summary    string // a part of the confirm card, for write tools
		check      check
	}{
		{tool: toolOverview, args: `{}`, check: says(`"pending":[{"task_id":100`, `"health":65`)},
		{tool: toolFindFree, args: `{"slots":2,"task_id":100}`, check: func(t *testing.T, out string, _ *Schedule) {
			if strings.Contains(out, "周日") || !strings.Contains(out, "day 1 start 3") {
				t.Errorf("find_free for 高数复习 (never on Sunday) gave %s", out)
			}
		}},
		{tool: toolPlace, args: `{"items":[{"task_id":100,"day":1,"start":3}]}`, summary: "放置 高数复习#1 → 周一（第2周） 第3-4节", check: item(100, 0, 2)},
		{tool: toolPlace, args: `{"items":[{"task_id":100,"day":2,"start":5}]}`, err: "already placed"},
		{tool: toolPlace, args: `{"items":[{"task_id":101,"day":1,"start":1}]}`, err: "cannot host a task"},
		{tool: toolPlace, args: `{"items":[{"task_id":101,"day":7,"start":1}]}`, err: "excluded"},
		{tool: toolMove, args: `{"task_id":1,"day":7,"start":1}`, err: "locked"},
		{tool: toolMove, args: `{"task_id":7,"day":6,"start":1}`, summary: "移动 社团活动 → 周六（第2周） 第1-2节", check: func(t *testing.T, _ string, s *Schedule) {
			if e := s.Event(7); e.Day != 5 || e.Start != 0 {
				t.Errorf("社团活动 at day %d slot %d, want 5, 0", e.Day, e.Start)
			}
		}},
		{tool: toolPlace, args: `{"items":[{"task_id":104,"day":3,"start":7}]}`, check: item(104, 2, 6)},
		{tool: toolTaskInfo, args: `{"task_id":104}`, check: says(`"embedded_in":"形势与政策`)},
		{tool: toolQueryRange, args: `{"day":3,"from":7,"to":8}`, check: says("第7节 形势与政策", "英语阅读#1（任务 #104）")},
		{tool: toolSwap, args: `{"task_a":100,"task_b":104}`, err: "lengths differ"},
		{tool: toolBatchMove, args: `{"moves":[{"task_id":100,"day":2,"start":5},{"task_id":104,"day":7,"start":10}]}`, check: func(t *testing.T, out string, s *Schedule) {
			item(100, 1, 4)(t, out, s)
			item(104, 6, 9)(t, out, s)
		}},
		{tool: toolBatchMove, args: `{"moves":[{"task_id":100,"day":3,"start":5},{"task_id":104,"day":1,"start":1}]}`, err: "cannot host", check: item(100, 1, 4)},
		{tool: toolListTasks, args: `{"status":"placed"}`, check: says(`"count":2`)},
		{tool: toolUnplace, args: `{"task_id":100}`, summary: "取消放置 高数复习#1", check: pending(100)},
		{tool: toolUpsertClass, args: `{"name":"化学实验","strategy":"rapid","excluded_days_of_week":[6,7],"add_items":{"count":2,"slots":2}}`,
			summary: "新建任务类 化学实验，屏蔽 周六、周日", check: func(t *testing.T, out string, s *Schedule) {
				if len(s.Classes) != 4 || len(s.Pending()) != 11 || !strings.Contains(out, "新增 2 个待安排任务") {
					t.Errorf("after upsert: %d classes, %d pending; %s", len(s.Classes), len(s.Pending()), out)
				}
			}},
		{tool: toolUpsertClass, args: `{"id":21,"name":"英语阅读","excluded_days_of_week":[7]}`, check: func(t *testing.T, out string, s *Schedule) {
			pending(104)(t, out, s)
			if !s.Class(21).Excludes(7) || !strings.Contains(out, "1 个任务因屏蔽日回到待安排") {
				t.Errorf("英语阅读 excludes %v; %s", s.Class(21).ExcludedDays, out)
			}
		}},
		{tool: toolAnalyzeHealth, args: `{"avoid_days_of_week":[3]}`, check: says(`"candidates":[{"index":0,"op":"place"`, `"stagnation":false`)},
		{tool: toolApplyCandidate, args: `{"index":0,"revision":0}`, err: "call analyze_health again"},
	} {
		tl, _, ok := p.agent.tools.Lookup(tc.tool)
		if !ok {
			t.Fatalf("no tool %s", tc.tool)
		}
		if tc.summary != "" {
			req, err := tl.ConfirmRequest(context.Background(), json.RawMessage(tc.args))
			if err != nil || !strings.Contains(req.Summary, tc.summary) {
				t.Errorf("%s %s: card %q (%v), want %q", tc.tool, tc.args, req.Summary, err, tc.summary)
			}
		}
		before := p.schedule(t)
		out, err := tl.Call(ctx, json.RawMessage(tc.args))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s %s: %v", tc.tool, tc.args, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s %s: error %v, want one saying %q", tc.tool, tc.args, err, tc.err)
		}
		after := p.schedule(t)
		if err != nil && canonical(after) != canonical(before) {
			t.Errorf("%s %s failed but changed the stored schedule", tc.tool, tc.args)
		}
		if tc.check != nil {
			tc.check(t, out, after)
		}
	}
}
