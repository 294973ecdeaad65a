package cabin

import (
	"maps"
	"testing"
)

func TestReadSlots(t *testing.T) {
	cfg, err := loadConfig(localeChinese, "")
	if err != nil {
		t.Fatal(err)
	}
	en, err := loadConfig(localeEnglish, "")
	if err != nil {
		t.Fatal(err)
	}
	zh, english := newSlotReader(cfg.Forms), newSlotReader(en.Forms)
	for _, c := range []struct {
		r      *slotReader
		intent string
		text   string
		want   map[string]string
	}{
		{zh, "cabin_set_ac", "把空调调到22度", map[string]string{"temperature": "22"}},
		{zh, "cabin_set_ac", "温度调到二十三度", map[string]string{"temperature": "23"}},
		{zh, "cabin_set_ac", "调到26.5℃", map[string]string{"temperature": "26.5"}},
		{zh, "cabin_set_ac", "调到40度", map[string]string{}}, // out of range
		{zh, "cabin_nav_to", "导航去虹桥机场不要高速", map[string]string{"destination": "虹桥机场", "avoid_highway": "true"}},
		{zh, "cabin_nav_to", "规划一条去公司的路线", map[string]string{"destination": "公司"}},
		{zh, "cabin_nav_to", "导航", map[string]string{}},
		{zh, "cs_query_order", "查一下订单a123的状态", map[string]string{"order_id": "A123"}},
		{zh, "cs_query_order", "订单号 20240518", map[string]string{"order_id": "20240518"}},
		{zh, "cabin_window_open", "把后排车窗打开", map[string]string{"position": "rear"}},
		{zh, "cabin_seat_heat_on", "副驾座椅加热开到三档", map[string]string{"position": "passenger", "level": "3"}},
		{zh, "cabin_play_music", "播放周杰伦的晴天", map[string]string{"music": "周杰伦的晴天"}},
		{zh, "cabin_play_music", "来点音乐", map[string]string{}}, // "音乐" names nothing
		{zh, "cabin_wiper_on", "雨刷开到快档", map[string]string{"wiper_speed": "high"}},
		{english, "cabin_nav_to", "navigate to the airport avoiding highways", map[string]string{"destination": "the airport", "avoid_highway": "true"}},
		{english, "cabin_set_ac", "set the ac to 21 degrees", map[string]string{"temperature": "21"}},
		{english, "cabin_window_open", "open the rear windows", map[string]string{"position": "rear"}},
		{english, "cabin_window_open", "open the rearview windows", map[string]string{}}, // words, not parts of words
		{english, "cabin_play_music", "play some jazz please", map[string]string{"music": "jazz"}},
	} {
		if got := c.r.read(c.intent, c.text); !maps.Equal(got, c.want) {
			t.Errorf("read(%s, %q) = %v, want %v", c.intent, c.text, got, c.want)
		}
	}
}

func TestSlotAnswers(t *testing.T) {
	cfg, err := loadConfig(localeChinese, "")
	if err != nil {
		t.Fatal(err)
	}
	r := newSlotReader(cfg.Forms)
	for _, c := range []struct {
		slot, text, want string
		ok               bool
	}{
		{"destination", "去公司", "公司", true},
		{"destination", "人民广场。", "人民广场", true}, // free text
		{"destination", "哪里", "", false},
		{"temperature", "22", "22", true},
		{"temperature", "热一点", "", false}, // not free text
		{"order_id", "b456", "B456", true},
	} {
		if got, ok := r.answer(c.slot, c.text); got != c.want || ok != c.ok {
			t.Errorf("answer(%s, %q) = %q, %v; want %q, %v", c.slot, c.text, got, ok, c.want, c.ok)
		}
	}
	if got := r.clean(map[string]string{"temperature": "二十", "position": "副驾", "extra": " x "}); !maps.Equal(got, map[string]string{"temperature": "20", "position": "passenger", "extra": "x"}) {
		t.Errorf("clean = %v", got)
	}
}

func TestParseNumber(t *testing.T) {
	for in, want := range map[string]float64{"22": 22, "二十二": 22, "十五": 15, "两": 2, "三十": 30, "一百零五": 105, "21.5": 21.5} {
		if got, ok := parseNumber(in); !ok || got != want {
			t.Errorf("parseNumber(%q) = %v, %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "abc", "二x"} {
		if _, ok := parseNumber(in); ok {
			t.Errorf("parseNumber(%q) ok", in)
		}
	}
}
