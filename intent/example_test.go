package intent_test

import (
	"context"
	"fmt"

	"github.com/loomkit/loom/intent"
)

func Example() {
	ctx := context.Background()
	e, err := intent.New(ctx, intent.Config{
		Intents: []intent.Intent{
			{ID: "ac_on", Keywords: []string{"打开空调"}, Examples: []string{"打开空调", "开一下空调", "turn on the ac"}},
			{ID: "window_open", Keywords: []string{"打开车窗"}, Examples: []string{"打开车窗", "把窗户打开", "open the window"}},
			{ID: "play_music", Examples: []string{"放首歌", "来点音乐", "play some music"}},
			{ID: "oos", Examples: []string{"今天股市怎么样", "讲讲量子力学", "what is the capital of peru"}},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, text := range []string{"帮我打开空调", "今天股市怎么样"} {
		r, err := e.Route(ctx, text)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s → %s %s (matched by %s)\n", text, r.Decision, r.Intent, r.MatchedStage)
	}
	mi, err := e.RouteClauses(ctx, "打开车窗，然后来点音乐")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range mi.Clauses {
		fmt.Printf("%s: %s → %s\n", mi.Kind, c.Text, c.Result.Intent)
	}
	// Output:
	// 帮我打开空调 → execute ac_on (matched by keyword)
	// 今天股市怎么样 → reject oos (matched by classifier)
	// sequence: 打开车窗 → window_open
	// sequence: 来点音乐 → play_music
}

// ReadConsent reads a reply to a pending yes-or-no question: a yes, a no
// (with the rest of the reply as a note), or unclear, which the caller
// asks again.
func ExampleReadConsent() {
	for _, reply := range []string{"没问题", "sounds good", "取消，周三不行", "对不起，我不同意", "好像不对", "可以吗？", "go away", "maybe"} {
		v := intent.ReadConsent(reply)
		fmt.Printf("%s → %s, note %q (%s)\n", reply, v.Consent, v.Note, v.Cue)
	}
	// Output:
	// 没问题 → accepted, note "" (affirm "没问题")
	// sounds good → accepted, note "" (affirm "sounds good")
	// 取消，周三不行 → rejected, note "周三不行" (cancel "取消")
	// 对不起，我不同意 → rejected, note "对不起，我不同意" (deny "不同意")
	// 好像不对 → rejected, note "" (hedge "好像", deny "不对")
	// 可以吗？ → unclear, note "可以吗？" (question "?")
	// go away → rejected, note "" (deny "go away")
	// maybe → unclear, note "maybe" (hedge "maybe")
}
