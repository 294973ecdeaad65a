package cabin

import (
	"cmp"
	"slices"
	"strings"

	"github.com/loomkit/loom/intent"
)

// bareStopWords, said alone with no task going on, mean the music: "停",
// "stop". The pause tool reads the car, so with nothing playing the reply
// says so instead of saying the music was paused.
var bareStopWords = []string{"停", "停下", "停下来", "停一下", "停止", "停止播放", "别放了", "暂停", "stop", "stop it", "stop that", "pause", "pause it", "halt"}

// bareStop turns a bare stop word into pausing the music.
func (a *App) bareStop(d *Debug) {
	t := strings.Trim(intent.Normalize(cmp.Or(d.Rewritten, d.Text)), " ,.!?，。！？~")
	if len(d.Clauses) > 0 || d.Route == nil || !slices.Contains(bareStopWords, t) || !a.cat.known(intentPauseMusic) {
		return
	}
	r := d.Route
	r.Intent, r.Decision, r.Reason = intentPauseMusic, intent.Execute, "a bare stop word: the music"
	r.Candidates = first(r.Candidates, intentPauseMusic)
}

// intentPauseMusic is the intent a bare stop word runs.
const intentPauseMusic = "cabin_pause_music"
