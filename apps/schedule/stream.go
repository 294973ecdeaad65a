package schedule

import (
	"context"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/loomkit/loom/graph"
)

// defaultStreamDelay is the pause between pseudo-stream chunks, so that a
// reply the agent has whole still reads as typed.
const defaultStreamDelay = 40 * time.Millisecond

// Sizes of pseudo-stream chunks, in characters.
const (
	chunkMin = 8
	chunkMax = 24
)

// splitPseudoStream cuts a whole text into the chunks a pseudo-stream
// sends: at most maxLen characters each, cut after the last punctuation
// mark (else the last space) that leaves the chunk at least minLen long,
// and a short tail joined to the chunk before it when they fit together.
// The chunks joined are the text.
func splitPseudoStream(text string, minLen, maxLen int) []string {
	maxLen = max(1, maxLen)
	minLen = max(1, min(minLen, maxLen))
	runes := []rune(text)
	var out []string
	for start := 0; start < len(runes); {
		end := min(start+maxLen, len(runes))
		if end < len(runes) {
			end = cutPoint(runes, start+minLen, end)
		}
		chunk := string(runes[start:end])
		if n := len(out); n > 0 && end == len(runes) && end-start < minLen && utf8.RuneCountInString(out[n-1])+end-start <= maxLen {
			out[n-1] += chunk
		} else {
			out = append(out, chunk)
		}
		start = end
	}
	return out
}

// cutPoint returns where to end a chunk in runes[:end] no earlier than lo:
// after the last punctuation mark, else after the last space, else at end.
func cutPoint(runes []rune, lo, end int) int {
	space := -1
	for i := end - 1; i >= lo-1; i-- {
		switch {
		case isPunct(runes, i):
			return i + 1
		case space < 0 && unicode.IsSpace(runes[i]):
			space = i + 1
		}
	}
	if space > 0 {
		return space
	}
	return end
}

// isPunct reports whether runes[i] ends a phrase: CJK and Latin
// punctuation, but not the point of a number such as 65.0.
func isPunct(runes []rune, i int) bool {
	r := runes[i]
	if r == '.' {
		return i+1 >= len(runes) || unicode.IsSpace(runes[i+1])
	}
	return strings.ContainsRune("，。！？；：、,!?;:)）】\n", r)
}

// say pseudo-streams a whole text as token events, chunk by chunk, with the
// configured pause between chunks.
func (a *Agent) say(ctx context.Context, text string) {
	for i, c := range splitPseudoStream(text, chunkMin, chunkMax) {
		if i > 0 && a.cfg.StreamDelay > 0 {
			t := time.NewTimer(a.cfg.StreamDelay)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		graph.Emit(ctx, graph.KindToken, c)
	}
}
