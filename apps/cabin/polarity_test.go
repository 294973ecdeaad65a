package cabin

import "testing"

// The guard reads on or off, open or close, up or down, lock or unlock
// from the words, in Chinese, English and both, and never lets the
// opposite run.
func TestGuardPolarity(t *testing.T) {
	for _, c := range []struct {
		routed, text, want, verdict string
	}{
		{"cabin_seat_heat_off", "turn on seat heating", "cabin_seat_heat_on", polaritySwap},
		{"cabin_seat_heat_on", "turn on seat heating", "cabin_seat_heat_on", polaritySure},
		{"cabin_seat_heat_on", "the seat is cold", "cabin_seat_heat_on", polarityKeep},
		{"cabin_ac_on", "turn the ac off", "cabin_ac_off", polaritySwap},
		{"cabin_ac_off", "turn the ac on please", "cabin_ac_on", polaritySwap},
		{"cabin_ac_on", "关闭空调", "cabin_ac_off", polaritySwap},
		{"cabin_ac_off", "帮我打开空调", "cabin_ac_on", polaritySwap},
		{"cabin_window_open", "帮我close the window", "cabin_window_close", polaritySwap},
		{"cabin_window_close", "帮我open the window", "cabin_window_open", polaritySwap},
		{"cabin_window_close", "把车窗降下来", "cabin_window_open", polaritySwap},
		{"cabin_window_open", "roll up the windows", "cabin_window_close", polaritySwap},
		{"cabin_window_open", "不要打开车窗", "cabin_window_open", polarityAsk},
		{"cabin_window_open", "don't open the window", "cabin_window_open", polarityAsk},
		{"cabin_door_unlock", "锁上车门", "cabin_door_lock", polaritySwap},
		{"cabin_door_lock", "解锁车门", "cabin_door_unlock", polaritySwap},
		{"cabin_door_lock", "unlock the doors", "cabin_door_unlock", polaritySwap},
		{"cabin_door_unlock", "lock the doors", "cabin_door_lock", polaritySwap},
		{"cabin_volume_up", "音量调小一点", "cabin_volume_down", polaritySwap},
		{"cabin_volume_down", "turn the volume up", "cabin_volume_up", polaritySwap},
		{"cabin_fan_down", "风大一点", "cabin_fan_up", polaritySwap},
		{"cabin_mirror_unfold", "fold the mirrors", "cabin_mirror_fold", polaritySwap},
		{"cabin_play_music", "暂停音乐", "cabin_pause_music", polaritySwap},
		{"cabin_lights_on", "turn off the lights on the left", "cabin_lights_off", polaritySwap},
		{"cabin_nav_to", "关闭导航", "cabin_nav_to", polarityKeep}, // no opposite the guard knows
	} {
		got, v := guardPolarity(c.routed, c.text)
		if got != c.want || v != c.verdict {
			t.Errorf("%s on %q: %s (%q), want %s (%q)", c.routed, c.text, got, v, c.want, c.verdict)
		}
	}
}
