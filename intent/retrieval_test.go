package intent

import "testing"

func TestRetrievalScoresRelativeToTheQuery(t *testing.T) {
	r := newRetrievalMatcher([]Intent{
		{ID: "ac_on", Examples: []string{"打开空调", "turn on the air conditioning"}},
		{ID: "music", Examples: []string{"播放音乐", "play some music"}},
	}, DefaultConfig().Retrieval)
	for _, c := range []struct {
		text   string
		intent string
		min    float64
		max    float64
	}{
		{"打开空调", "ac_on", 1, 1}, // said exactly like an example
		{"play some music", "music", 1, 1},
		{"please play music now", "music", 0.2, 0.9},
		{"完全无关", "", 0, 0},
	} {
		cands, err := r.Match(t.Context(), Normalize(c.text))
		if err != nil {
			t.Fatal(err)
		}
		if c.intent == "" {
			if len(cands) != 0 {
				t.Errorf("%q: %v, want none", c.text, cands)
			}
			continue
		}
		if len(cands) == 0 || cands[0].Intent != c.intent || cands[0].Score < c.min-1e-6 || cands[0].Score > c.max+1e-6 {
			t.Errorf("%q: %v, want %s in [%.1f, %.1f]", c.text, cands, c.intent, c.min, c.max)
		}
	}
}
