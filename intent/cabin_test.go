package intent_test

import "github.com/loomkit/loom/intent"

// cabinConfig is a small in-car assistant in the shape of seed 003: a dozen
// intents with keywords and a few examples each, and the rules of §9–§11.
func cabinConfig() intent.Config {
	return intent.Config{
		Intents: []intent.Intent{
			{ID: "cabin_set_ac", Keywords: []string{"空调调到"}, Examples: []string{"把空调调到22度", "空调温度设成24度", "温度调到20度", "set the ac to 21 degrees", "空调开到26度", "帮我把温度设置为23度"}},
			{ID: "cabin_ac_on", Keywords: []string{"打开空调", "开空调"}, Examples: []string{"打开空调", "开一下空调", "空调打开", "turn on the air conditioning", "帮我开空调吧"}},
			{ID: "cabin_ac_off", Keywords: []string{"关闭空调", "关空调"}, Examples: []string{"关闭空调", "把空调关了", "关掉空调", "turn off the air conditioning", "空调关一下"}},
			{ID: "cabin_fan_up", Examples: []string{"风大一点", "风量调大", "把风开大些", "turn the fan up", "风速加大"}},
			{ID: "cabin_fan_down", Examples: []string{"风小一点", "风量调小", "把风关小些", "turn the fan down", "风速减小"}},
			{ID: "cabin_play_music", Keywords: []string{"播放音乐", "放首歌"}, Examples: []string{"播放周杰伦的歌", "来点音乐", "放首歌听听", "play some music", "我想听歌", "播放晴天"}},
			{ID: "cabin_next_song", Keywords: []string{"下一首"}, Examples: []string{"下一首", "切歌", "换一首歌", "播放下一首歌", "next song", "skip this song"}},
			{ID: "cabin_nav_to", Keywords: []string{"导航去", "导航到"}, Examples: []string{"导航去机场", "带我去公司", "去最近的加油站", "navigate to the airport", "导航到人民广场", "我要去火车站"}},
			{ID: "cabin_window_open", Keywords: []string{"打开车窗", "开窗"}, Examples: []string{"打开车窗", "把窗户打开", "车窗降下来", "open the window", "开一点窗"}},
			{ID: "cabin_window_close", Keywords: []string{"关闭车窗", "关窗"}, Examples: []string{"关闭车窗", "把窗户关上", "车窗升起来", "close the window", "关上窗户"}},
			{ID: "cabin_seat_heat", Keywords: []string{"座椅加热"}, Examples: []string{"打开座椅加热", "座椅太冷了", "加热一下座椅", "turn on seat heating", "座椅加热开到二档"}},
			{ID: "cabin_call", Keywords: []string{"打电话给"}, Examples: []string{"打电话给妈妈", "给张三打个电话", "拨打10086", "call my wife", "呼叫李四"}},
			{ID: "oos", Examples: []string{"今天股市怎么样", "帮我写一首诗", "讲讲量子力学", "what is the capital of peru", "推荐一本小说", "how do i bake bread"}},
		},
		Rules: intent.Rules{
			Acts: []intent.ActRule{
				{Act: "cancel", Phrases: intent.Phrases{Contains: []string{"取消", "不用了", "算了"}}},
				{Act: "affirm", Phrases: intent.Phrases{Exact: []string{"好的", "是的", "对", "确定", "yes", "ok"}}},
				{Act: "deny", Phrases: intent.Phrases{Exact: []string{"不是", "不对", "no"}}},
				{Act: "modify", Phrases: intent.Phrases{Contains: []string{"改成", "换成"}, Regex: []string{`^(再)?(高|低|大|小)一点`}}},
				{Act: "chitchat", Phrases: intent.Phrases{Exact: []string{"你好", "谢谢", "hi"}}},
			},
			DefaultAct: "request",
			Stop:       intent.Phrases{Contains: []string{"不用了", "算了", "先这样吧", "停一下", "停止", "结束这次操作"}},
			Social: intent.SocialRules{
				Task:          intent.Phrases{Regex: []string{`[0-9]+度`}},
				Short:         intent.Phrases{Exact: []string{"你好", "谢谢", "早上好", "hi", "thanks"}},
				Capability:    intent.Phrases{Regex: []string{`你(能|会)(做|干)什么`, `what can you do`}},
				Open:          intent.Phrases{Contains: []string{"讲个笑话", "你叫什么名字", "how are you"}},
				FollowUpRunes: 4,
			},
			Rewrite: []intent.RewriteRule{
				{Name: "ac_warmer", Intents: []string{"cabin_set_ac", "cabin_ac_on"}, When: intent.Phrases{Regex: []string{`^(再)?(调)?高一点`}},
					Require: []string{"temperature"}, Adjust: map[string]float64{"temperature": 1}, Template: "把空调调到{temperature}度"},
				{Name: "ac_cooler", Intents: []string{"cabin_set_ac", "cabin_ac_on"}, When: intent.Phrases{Regex: []string{`^(再)?(调)?低一点`}},
					Require: []string{"temperature"}, Adjust: map[string]float64{"temperature": -1}, Template: "把空调调到{temperature}度"},
				{Name: "music_next", Intents: []string{"cabin_play_music", "cabin_next_song"}, When: intent.Phrases{Exact: []string{"再来一首", "换一首", "下一首"}},
					Template: "播放下一首歌"},
				{Name: "nav_no_highway", Intents: []string{"cabin_nav_to"}, When: intent.Phrases{Contains: []string{"不要高速", "不走高速"}},
					Require: []string{"destination"}, Template: "导航去{destination}不要高速"},
			},
		},
	}
}
