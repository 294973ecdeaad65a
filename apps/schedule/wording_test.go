package schedule

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/loomkit/loom/graph"
)

// turn runs one turn on thread t, streamed: in is a message, or the
// answer to the pending card when resume is set. It returns the status
// lines the turn streamed and the reply a chat shows after it.
func (p *process) turn(t *testing.T, text string, resume bool) (status []string, reply string) {
	t.Helper()
	ctx := context.Background()
	in := graph.Input[State]{Update: func(s *State) { s.Message = text }}
	if resume {
		ans, _ := parseAnswer(text)
		in = graph.Input[State]{Resume: ans}
	}
	for e, err := range p.graph.Stream(ctx, "t", in) {
		if err != nil {
			t.Fatalf("turn %q: %v", text, err)
		}
		if e.Kind == graph.KindStatus {
			status = append(status, fmt.Sprint(e.Data))
		}
	}
	cp, err := p.saver.Get(ctx, "t", "")
	if err != nil {
		t.Fatal(err)
	}
	return status, replyText(cp.State, cp.Interrupt)
}

// What the student reads, whole, over the sample schedule without a
// model: the plan card, the status lines, the change card and the
// summary. The plan card and the fixed sentences are pinned; what the
// optimiser produces (which places, health figures, how many rounds) is
// checked for its shape and its consistency, so that a better optimiser
// does not break the test. Chinese text uses full-width punctuation,
// names no tool or internal term, and says nothing twice.
func TestWording(t *testing.T) {
	p := start(t, "", nil)
	status, reply := p.turn(t, "帮我安排下周的复习", false)
	wantStatus(t, "the planning turn", status, "这是一个排程任务，开始规划", "正在规划")
	wantText(t, "the plan card", reply)
	if want := `计划（共 2 步，难度中等）：
1. 粗排：把 10 个待安排任务（高数复习×4、英语阅读×3、物理作业×3，共 17 节）放进 7 天的窗口，遵守锁定课程和屏蔽日，每天任务不超过 6 节并分散同类任务
   完成标准：每个待安排任务都有了位置，或者确认已没有可行的位置
2. 主动优化：诊断节奏、松紧、学科画像和可行性，从优化器给出的移动或交换方案里挑选，逐项请你确认
   完成标准：优化器停滞：没有方案能再提升健康度
回复「确认」开始执行，「取消」重新规划（可以附上原因，比如「取消，周三不行」）。`; reply != want {
		t.Errorf("the plan card reads\n%s\nwant\n%s", reply, want)
	}

	status, reply = p.turn(t, "确认", true)
	rounds := wantRounds(t, "the first execution turn", status, 0, "计划已确认，开始执行",
		"执行第 1/2 步：粗排：把 10 个待安排任务（高数复习×4、英语阅读×3、物理作业×3，共 17…")
	wantText(t, "the change card", reply)
	card := regexp.MustCompile(`^需要你确认：按任务类策略放置 10 项：(.+) 等（共 10 项）（健康度 (\d+\.\d) → (\d+\.\d)）\n回复「确认」执行，「取消」换一个方案（可以附上原因）。$`).FindStringSubmatch(reply)
	if card == nil {
		t.Fatalf("the change card reads\n%s\nwant a placement of the 10 tasks with its health gain", reply)
	}
	for _, pl := range strings.Split(card[1], "；") {
		if !placement.MatchString(pl) {
			t.Errorf("the change card lists %q, not a task moved to a day and periods", pl)
		}
	}
	if num(card[2]) != 65 { // the sample, nothing placed
		t.Errorf("the change card starts from health %s, want the sample's 65.0", card[2])
	}
	if from, to := num(card[2]), num(card[3]); to <= from {
		t.Errorf("the change card offers health %s → %s, not an improvement", card[2], card[3])
	}

	status, reply = p.turn(t, "确认", true)
	wantRounds(t, "the last turn", status, rounds, "",
		"执行第 2/2 步：主动优化：诊断节奏、松紧、学科画像和可行性，从优化器给出的移动或交换方案里挑选，…")
	if n := len(status); n == 0 || status[n-1] != "正在总结" {
		t.Errorf("the last turn's status lines end with %q, want 正在总结", status)
	}
	wantText(t, "the summary", reply)
	lines := strings.Split(reply, "\n")
	if len(lines) < 6 || lines[0] != "已完成：帮我安排下周的复习" ||
		!strings.HasPrefix(lines[1], "✓ 1. 粗排：") || !strings.HasPrefix(lines[2], "✓ 2. 主动优化：") {
		t.Fatalf("the summary reads\n%s\nwant the request and both steps ticked", reply)
	}
	// Step 1 ends with its own result, the health after the placement,
	// which is where the applied change took the schedule; the final
	// health is at least that, and a stall names the final figure.
	step1 := regexp.MustCompile(`— 全部任务都有了位置，健康度 (\d+\.\d)。$`).FindStringSubmatch(lines[1])
	applied := regexp.MustCompile(`^- 已应用候选 #0：按任务类策略放置 10 项：.+（健康度 (\d+\.\d) → (\d+\.\d)，修订 1）$`).FindStringSubmatch(lines[4])
	total := regexp.MustCompile(`^健康度 (\d+\.\d) → (\d+\.\d)（节奏 [01]\.\d\d，松紧 [01]\.\d\d，画像 [01]\.\d\d，可行性 [01]\.\d\d）$`)
	var final []string
	for _, l := range lines {
		if m := total.FindStringSubmatch(l); m != nil {
			final = m
		}
	}
	if step1 == nil || applied == nil || final == nil || !regexp.MustCompile(`^已执行 \d+ 项修改：$`).MatchString(lines[3]) {
		t.Fatalf("the summary reads\n%s\nwant step 1's result, the changes made and the health before and after", reply)
	}
	if applied[1] != card[2] || applied[2] != card[3] {
		t.Errorf("the change card offered health %s → %s, the change made %s → %s", card[2], card[3], applied[1], applied[2])
	}
	if applied[2] != step1[1] {
		t.Errorf("step 1 ends at health %s, its change at %s", step1[1], applied[2])
	}
	if final[1] != applied[1] || num(final[2]) < num(step1[1]) || num(final[2]) <= num(final[1]) {
		t.Errorf("the health goes %s → %s overall, %s → %s by the placement", final[1], final[2], applied[1], applied[2])
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "已停滞：") && !strings.Contains(l, "（"+final[2]+"）") {
			t.Errorf("the summary says %q, not at the final health %s", l, final[2])
		}
		if strings.Contains(l, "+") {
			t.Errorf("the finished summary offers an improvement: %q", l)
		}
		if strings.HasPrefix(l, "遗留问题：") && !regexp.MustCompile(`^遗留问题：(高数复习|英语阅读|物理作业)#\d`).MatchString(l) {
			t.Errorf("the summary says %q, not naming a task", l)
		}
	}
}

// num reads a figure the text shows.
func num(s string) float64 { f, _ := strconv.ParseFloat(s, 64); return f }

// placement is one task's place on a change card.
var placement = regexp.MustCompile(`^(高数复习|英语阅读|物理作业)#\d+ → 周[一二三四五六日]（第\d+周） 第\d+(-\d+)?节$`)

// wantStatus compares a turn's status lines, whole and in order.
func wantStatus(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s streamed the status lines\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// wantRounds checks an execution turn's status lines: first (when not
// empty) opens it, step is announced, and the rounds of thought are
// numbered on from after, one by one. It returns the last round.
func wantRounds(t *testing.T, what string, got []string, after int, first, step string) int {
	t.Helper()
	if first != "" {
		if len(got) == 0 || got[0] != first {
			t.Errorf("%s streams %q first, want %q", what, got, first)
			return after
		}
		got = got[1:]
	}
	stepped := false
	round := regexp.MustCompile(`^思考下一步（第 (\d+) 轮）$`)
	for _, l := range got {
		if m := round.FindStringSubmatch(l); m != nil {
			if n, _ := strconv.Atoi(m[1]); n != after+1 {
				t.Errorf("%s streams round %d after round %d", what, n, after)
			}
			after++
			continue
		}
		switch {
		case l == step && !stepped:
			stepped = true
		case l == "正在总结":
		default:
			t.Errorf("%s streams %q", what, l)
		}
	}
	if !stepped {
		t.Errorf("%s streams\n%s\nwithout %q", what, strings.Join(got, "\n"), step)
	}
	return after
}

// wantText checks that a reply reads as Chinese should: no half-width
// punctuation beside Chinese text, no internal names, no line said
// twice.
func wantText(t *testing.T, what, got string) {
	t.Helper()
	for _, bad := range []string{"analyze_health", "move/swap", "moderate", "complex", "round ", "(", ")", ",", ";", ":"} {
		if strings.Contains(got, bad) {
			t.Errorf("%s has %q", what, bad)
		}
	}
	seen := map[string]bool{}
	for _, l := range strings.Split(got, "\n") {
		if seen[l] {
			t.Errorf("%s says %q twice", what, l)
		}
		seen[l] = true
	}
}
