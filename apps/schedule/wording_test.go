package schedule

import (
	"context"
	"fmt"
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
		ans, _ := ParseAnswer(text)
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
	return status, Reply(cp.State, cp.Interrupt)
}

// What the student reads, whole, over the sample schedule without a
// model: the plan card, the status lines, the change card and the
// summary. Chinese text uses full-width punctuation, names no tool or
// internal term, and says nothing twice.
func TestWording(t *testing.T) {
	p := start(t, "", nil)
	status, reply := p.turn(t, "帮我安排下周的复习", false)
	wantStatus(t, "the planning turn", status, "这是一个排程任务，开始规划", "正在规划")
	wantText(t, "the plan card", reply, `计划（共 2 步，难度中等）：
1. 粗排：把 10 个待安排任务（高数复习×4、英语阅读×3、物理作业×3，共 17 节）放进 7 天的窗口，遵守锁定课程和屏蔽日，每天任务不超过 6 节并分散同类任务
   完成标准：每个待安排任务都有了位置，或者确认已没有可行的位置
2. 主动优化：诊断节奏、松紧、学科画像和可行性，从优化器给出的移动或交换方案里挑选，逐项请你确认
   完成标准：优化器停滞：没有方案能再提升健康度
回复「确认」开始执行，「取消」重新规划（可以附上原因，比如「取消，周三不行」）。`)

	status, reply = p.turn(t, "确认", true)
	wantStatus(t, "the first execution turn", status, "计划已确认，开始执行",
		"执行第 1/2 步：粗排：把 10 个待安排任务（高数复习×4、英语阅读×3、物理作业×3，共 17…",
		"思考下一步（第 1 轮）", "思考下一步（第 2 轮）", "思考下一步（第 3 轮）")
	wantText(t, "the change card", reply, `需要你确认：按任务类策略放置 10 项：高数复习#1 → 周五（第2周） 第1-2节；高数复习#2 → 周三（第2周） 第3-4节；高数复习#3 → 周四（第2周） 第8-9节；高数复习#4 → 周六（第2周） 第1-2节 等（共 10 项）（健康度 +31.36）
回复「确认」执行，「取消」换一个方案（可以附上原因）。`)

	status, reply = p.turn(t, "确认", true)
	wantStatus(t, "the last turn", status, "思考下一步（第 4 轮）", "思考下一步（第 5 轮）",
		"执行第 2/2 步：主动优化：诊断节奏、松紧、学科画像和可行性，从优化器给出的移动或交换方案里挑选，…",
		"思考下一步（第 6 轮）", "思考下一步（第 7 轮）", "思考下一步（第 8 轮）", "正在总结")
	wantText(t, "the summary", reply, `已完成：帮我安排下周的复习
✓ 1. 粗排：把 10 个待安排任务（高数复习×4、英语阅读×3、物理作业×3，共 17 节）放进 7 天的窗口，遵守锁定课程和… — 全部任务都有了位置，健康度 96.4。
✓ 2. 主动优化：诊断节奏、松紧、学科画像和可行性，从优化器给出的移动或交换方案里挑选，逐项请你确认
已执行 1 项修改：
- 已应用候选 #0：按任务类策略放置 10 项：高数复习#1 → 周五（第2周） 第1-2节；高数复习#2 → 周三（第2周） 第3-4节；高数复习#3 → 周四（第2周） 第8-9节；高数复习#4 → 周六（第2周） 第1-2节 等（共 10 项）（健康度 65.0 → 96.4，修订 1）
健康度 65.0 → 96.4（节奏 1.00，松紧 0.92，画像 0.92，可行性 1.00）
已停滞：没有哪一步移动或交换能再提升健康度（96.4）；剩下的 1 个问题在现有约束下无法解决，需要放宽约束
遗留问题：高数复习#3 不在偏好时段（上午）`)
}

// wantStatus compares a turn's status lines, whole and in order.
func wantStatus(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s streamed the status lines\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// wantText compares a reply whole, and checks that it reads as Chinese
// should: no half-width punctuation beside Chinese text, no internal
// names, no line said twice.
func wantText(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s reads\n%s\nwant\n%s", what, got, want)
	}
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
