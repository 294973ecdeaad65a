package cabin

import (
	"testing"

	"github.com/loomkit/loom/intent"
)

func TestRelativeChange(t *testing.T) {
	for _, c := range []struct {
		text string
		want float64
		ok   bool
	}{
		{"把温度调低两度", -2, true},
		{"温度升高3度", 3, true},
		{"空调调高一点", 1, true},
		{"把空调调低到20度", 0, false},
		{"把空调调到22度", 0, false},
		{"turn the temperature down 2 degrees", -2, true},
		{"raise the temperature by three degrees", 3, true},
		{"lower the temperature to 20 degrees", 0, false},
		{"set the ac to 22 degrees", 0, false},
	} {
		got, ok := relativeChange(intent.Normalize(c.text))
		if got != c.want || ok != c.ok {
			t.Errorf("relativeChange(%q) = %v, %v; want %v, %v", c.text, got, ok, c.want, c.ok)
		}
	}
}

// TestNothingPlaying: "停" or "stop" with nothing playing pauses nothing
// and says so; with music playing it pauses it.
func TestNothingPlaying(t *testing.T) {
	a := newAPI(t, Options{})
	want(t, a.chat("zh", "停"), typeWorkflowResult, statusFailed, "没有在播放")
	want(t, a.chat("en", "stop"), typeWorkflowResult, statusFailed, "othing is playing")
	a.chat("en", "play some music")
	if !a.vehicle("en").Media.Playing {
		t.Fatal("the music does not play")
	}
	r := a.chat("en", "stop")
	want(t, r, typeWorkflowResult, statusCompleted)
	if a.vehicle("en").Media.Playing {
		t.Errorf("stop: the music still plays (%q)", r.Message)
	}
}

// TestTemperatureChange: a change is worked out from the car's
// temperature, and one that goes out of range is explained.
func TestTemperatureChange(t *testing.T) {
	a := newAPI(t, Options{})
	a.chat("s", "把空调调到26度")
	want(t, a.chat("s", "把温度调低两度"), typeWorkflowResult, statusCompleted, "24")
	if got := a.vehicle("s").AC.Temperature; got != 24 {
		t.Errorf("temperature %v, want 24", got)
	}
	want(t, a.chat("s", "turn the temperature up 10 degrees"), typeAskSlot, statusWaitingSlot, "16", "32", "34")
}
