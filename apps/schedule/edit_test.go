package schedule

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Manual edits without a model: one that is understood moves the task
// after its card and says so; one that is not says what was not
// understood, and changes nothing (issue 24).
func TestManualEdit(t *testing.T) {
	for _, tc := range []struct{ name, text, where string }{
		{"chinese", "把高数复习#1挪到周一上午", "周一（第2周） 第3-4节"},
		{"english", "move 高数复习#1 to monday morning", "周一（第2周） 第3-4节"},
		{"slots", "把英语阅读#2移到周一第9节", "周一（第2周） 第9节"},
		{"event", "把社团活动挪到周四晚上", "周四（第2周） 第11-12节"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := start(t, "", nil)
			res := p.say(t, "t", "帮我安排下周的复习", true)
			for res.Status != "done" {
				res = p.say(t, "t", "确认", true)
			}
			rev := p.schedule(t).Revision
			res = p.say(t, "t", tc.text, true)
			if k := pendingKind(t, res); k != "tool:"+toolMove {
				t.Fatalf("%q waits on %q (%s), want a move card", tc.text, k, res.State.Reply)
			}
			card := replyText(nil, res.Interrupt)
			if !strings.Contains(card, tc.where) {
				t.Errorf("the card does not say where: %s", card)
			}
			res = p.say(t, "t", "确认", true)
			if res.Status != "done" || !strings.Contains(res.State.Reply, "已移动") || !strings.Contains(res.State.Reply, tc.where) {
				t.Errorf("the summary does not say the move:\n%s", res.State.Reply)
			}
			if n := strings.Count(res.State.Reply, "已移动"); n != 1 {
				t.Errorf("the summary says the move %d times, want once:\n%s", n, res.State.Reply)
			}
			s := p.schedule(t)
			if s.Revision != rev+1 {
				t.Errorf("revision %d, want %d: one commit", s.Revision, rev+1)
			}
			if err := s.Check(); err != nil {
				t.Error(err)
			}
		})
	}
}

// A pending item is placed where it is asked to go.
func TestManualEditPlacesPending(t *testing.T) {
	p := start(t, "", nil)
	res := p.say(t, "t", "把物理作业#1放到周二下午", true)
	if k := pendingKind(t, res); k != "tool:"+toolPlace {
		t.Fatalf("waits on %q (%s), want a place card", k, res.State.Reply)
	}
	p.say(t, "t", "确认", true)
	s := p.schedule(t)
	it := s.Item(102 + 5)
	if it == nil || it.Name != "物理作业#1" || !it.Placed() || s.Window.Day(it.Day).DayOfWeek != 2 || periodOf(it.Start) != periodAfternoon {
		t.Errorf("物理作业#1 is %+v, want placed on Tuesday afternoon", it)
	}
}

// Edits that are not understood, or cannot be done, are said plainly.
func TestManualEditNotUnderstood(t *testing.T) {
	p := start(t, "", nil)
	res := p.say(t, "t", "帮我安排下周的复习", true)
	for res.Status != "done" {
		res = p.say(t, "t", "确认", true)
	}
	sch := p.schedule(t)
	rev := sch.Revision
	it := sch.Items[0]
	if !it.Placed() || it.Slots < 2 {
		t.Fatalf("%s is not a placed task of two slots or more: %+v", it.Name, it)
	}
	here := fmt.Sprintf("把%s挪到%s第%d-%d节", it.Name, weekdayName(sch.Window.Day(it.Day).DayOfWeek), it.Start+1, it.Start+it.Slots)
	for _, tc := range []struct{ text, says string }{
		{here, it.Name + " 已经在 " + sch.Where(it.Day, it.Start, it.Slots) + "，不用挪"},
		{"把高数复习#9挪到周五上午", "没看懂要移动哪个任务"},
		{"把高数复习挪到周五", "要挪哪一个"},
		{"把高等数学挪到周五", "锁定的课程，不能移动"},
		{"把高数复习#1挪到明天", "没看懂要把 高数复习#1 挪到哪里"},
		{"把高数复习#1挪到周日上午", "设定了 周日 不排"},
		{"把物理作业#1挪到周一第1-2节", "第1节是 高等数学"},
		{"move the essay to friday", "没看懂要移动哪个任务"},
	} {
		res := p.say(t, "t", tc.text, true)
		if res.Status != "done" || !strings.Contains(res.State.Reply, tc.says) {
			t.Errorf("%q: status %s, reply %q; want it to say %q", tc.text, res.Status, res.State.Reply, tc.says)
		}
		if strings.Contains(res.State.Reply, "计划") || strings.Contains(res.State.Reply, "task_id") {
			t.Errorf("%q got a plan or an internal name: %q", tc.text, res.State.Reply)
		}
	}
	if s := p.schedule(t); s.Revision != rev {
		t.Errorf("revision %d, want %d: nothing changed", s.Revision, rev)
	}
}

// "周四别排物理": the class keeps off Thursday (on a card), its tasks there
// are placed again, and Thursday is not kept free for the other classes.
func TestClassEdit(t *testing.T) {
	for _, text := range []string{"周四别排物理", "no physics on thursday please"} {
		t.Run(text, func(t *testing.T) {
			p := start(t, "", nil)
			res := p.say(t, "t", "帮我安排下周的复习", true)
			for res.Status != "done" {
				res = p.say(t, "t", "确认", true)
			}
			// Put a physics task on Thursday first, so there is one to move.
			s := p.schedule(t)
			before := s.Clone()
			it := s.Item(107)
			if err := s.Move(Placement{Task: 107, Day: 3, Start: 0}); err != nil {
				t.Fatalf("set up %s on Thursday: %v", it.Name, err)
			}
			if err := p.store.commit(context.Background(), before, s, "", ""); err != nil {
				t.Fatal(err)
			}
			res = p.say(t, "t", text, true)
			if k := pendingKind(t, res); k != "tool:"+toolUpsertClass {
				t.Fatalf("waits on %q (%s), want a task-class card", k, res.State.Reply)
			}
			if card := replyText(nil, res.Interrupt); !strings.Contains(card, "物理作业") || !strings.Contains(card, "周四") || strings.Contains(card, "#") {
				t.Errorf("the card (the class and the day, no internal id): %s", card)
			}
			for res.Status != "done" {
				res = p.say(t, "t", "确认", true)
			}
			s = p.schedule(t)
			for _, it := range s.Items {
				if it.Class == 22 && it.Placed() && s.Window.Day(it.Day).DayOfWeek == 4 {
					t.Errorf("%s still on Thursday", it.Name)
				}
			}
			if n := len(s.Pending()); n != 0 {
				t.Errorf("%d tasks pending after the rough step", n)
			}
			if c := s.Class(22); !slices.Contains(c.ExcludedDays, 4) {
				t.Errorf("物理作业 excludes %v, want Thursday among them", c.ExcludedDays)
			}
			if got, _ := p.store.constraints(context.Background(), DefaultOwner); len(got) != 0 {
				t.Errorf("a class's day became everyone's constraint: %v", got)
			}
		})
	}
}
