package intent_test

import (
	"context"
	"slices"
	"testing"

	"github.com/loomkit/loom/intent"
)

func TestSplit(t *testing.T) {
	e := newCabin(t)
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"打开车窗然后把空调调到22度", []string{"打开车窗", "把空调调到22度"}},
		{"打开车窗，播放音乐；导航去机场", []string{"打开车窗", "播放音乐", "导航去机场"}},
		{"打开车窗，然后播放音乐", []string{"打开车窗", "播放音乐"}},
		{"open the window and then play some music", []string{"open the window", "play some music"}},
		{"再来一首", []string{"再来一首"}},                   // a connective at the start cuts nothing
		{"说再见", []string{"说再见"}},                     // a one-rune clause joins its neighbour
		{"rock and roll", []string{"rock", "roll"}},  // cut here; routing decides whether both halves mean something
		{"打开车窗。", []string{"打开车窗"}},                  // trailing punctuation cuts nothing
		{"play the band", []string{"play the band"}}, // "and" only as a word
	} {
		if got := e.Split(c.in); !slices.Equal(got, c.want) {
			t.Errorf("Split(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestRouteClauses(t *testing.T) {
	e := newCabin(t)
	for _, c := range []struct {
		in      string
		kind    string
		intents []string
	}{
		{"打开车窗然后把空调调到22度", "sequence", []string{"cabin_window_open", "cabin_set_ac"}},
		{"如果下雨，关闭车窗，然后打开空调", "conditional", []string{"", "cabin_window_close", "cabin_ac_on"}},
		{"打开车窗", "single", []string{"cabin_window_open"}},
		{"close the window and play some music", "sequence", []string{"cabin_window_close", "cabin_play_music"}},
	} {
		mi, err := e.RouteClauses(context.Background(), c.in)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, cl := range mi.Clauses {
			id := cl.Result.Intent
			if cl.Result.Decision != intent.Execute {
				id = ""
			}
			got = append(got, id)
		}
		if mi.Kind != c.kind || !slices.Equal(got, c.intents) {
			t.Errorf("RouteClauses(%q) = %s %q, want %s %q", c.in, mi.Kind, got, c.kind, c.intents)
		}
	}
}
