package intent_test

import (
	"context"
	"testing"
	"time"

	"github.com/loomkit/loom/intent"
)

func TestUnderstand(t *testing.T) {
	e := newCabin(t)
	for _, c := range []struct {
		name      string
		turn      intent.Turn
		act       string
		stop      bool
		social    bool
		rewritten string
		routed    string // the executed intent; "~" routed but not executed; "" not routed
		multi     bool
	}{
		{"stop with a task", intent.Turn{Text: "算了", ActiveTask: true}, "cancel", true, false, "", "", false},
		{"stop phrase without a task is routed", intent.Turn{Text: "算了"}, "cancel", false, false, "", "~", false},
		{"greeting", intent.Turn{Text: "你好！"}, "chitchat", false, true, "", "", false},
		{"capability", intent.Turn{Text: "你能做什么"}, "request", false, true, "", "", false},
		{"task beats social", intent.Turn{Text: "讲个笑话然后打开空调"}, "request", false, false, "", "cabin_ac_on", false},
		{"two requests", intent.Turn{Text: "打开车窗，然后播放音乐"}, "request", false, false, "", "cabin_window_open", true},
		{"social follow-up", intent.Turn{Text: "哈哈哈", LastSocial: true}, "request", false, true, "", "", false},
		{"short text without social history", intent.Turn{Text: "哈哈哈"}, "request", false, false, "", "~", false},
		{"ac cooler", intent.Turn{Text: "再低一点", Intent: "cabin_set_ac", Slots: map[string]string{"temperature": "22"}}, "modify", false, false, "把空调调到21度", "cabin_set_ac", false},
		{"ac rule needs the slot", intent.Turn{Text: "低一点", Intent: "cabin_set_ac"}, "modify", false, false, "", "~", false},
		{"ac rule needs the intent", intent.Turn{Text: "低一点", Intent: "cabin_play_music", Slots: map[string]string{"temperature": "22"}}, "modify", false, false, "", "~", false},
		{"music follow-up", intent.Turn{Text: "换一首", Intent: "cabin_play_music"}, "request", false, false, "播放下一首歌", "cabin_next_song", false},
		{"navigation follow-up", intent.Turn{Text: "不要高速", Intent: "cabin_nav_to", Slots: map[string]string{"destination": "机场"}}, "request", false, false, "导航去机场不要高速", "cabin_nav_to", false},
		{"affirm", intent.Turn{Text: "好的。"}, "affirm", false, false, "", "~", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			u, err := e.Understand(context.Background(), c.turn)
			if err != nil {
				t.Fatal(err)
			}
			routed := ""
			switch {
			case u.Route != nil && u.Route.Decision == intent.Execute:
				routed = u.Route.Intent
			case u.Route != nil:
				routed = "~"
			}
			if u.Act != c.act || u.Stop != c.stop || u.Social != c.social || u.Rewritten != c.rewritten || routed != c.routed || (u.Multi != nil) != c.multi {
				t.Errorf("got act %s stop %v social %v (%s) rewritten %q routed %q multi %v",
					u.Act, u.Stop, u.Social, u.SocialReason, u.Rewritten, routed, u.Multi != nil)
			}
			if (c.stop || c.social) != (u.Route == nil) {
				t.Errorf("route %v for stop %v social %v", u.Route, c.stop, c.social)
			}
			// Each rule that ran was timed; those after a stop or a social
			// turn did not run. The parts add up to no more than the whole.
			tm := u.Times
			ran := []bool{true, true, !c.stop, !c.stop && !c.social}
			for i, d := range []time.Duration{tm.DialogAct, tm.StopCheck, tm.SocialRoute, tm.Rewrite} {
				if (d > 0) != ran[i] {
					t.Errorf("rule %d took %v, ran %v", i, d, ran[i])
				}
			}
			if sum := tm.DialogAct + tm.StopCheck + tm.SocialRoute + tm.Rewrite; u.Elapsed <= 0 || sum > u.Elapsed {
				t.Errorf("elapsed %v, rules %v", u.Elapsed, sum)
			}
		})
	}
}
