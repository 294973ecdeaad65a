package intent

import "context"

// keywordMatcher scores 1 for every intent one of whose keywords occurs in
// the text, with the longest matching keyword as the reason.
type keywordMatcher struct {
	ac     *automaton
	owner  []int // pattern → intent index
	intent []string
}

func newKeywordMatcher(intents []Intent) *keywordMatcher {
	k := &keywordMatcher{}
	var patterns []string
	for i, in := range intents {
		k.intent = append(k.intent, in.ID)
		for _, kw := range in.Keywords {
			if kw = Normalize(kw); kw != "" {
				patterns = append(patterns, kw)
				k.owner = append(k.owner, i)
			}
		}
	}
	k.ac = newAutomaton(patterns)
	return k
}

// Match implements Matcher over normalized text.
func (k *keywordMatcher) Match(_ context.Context, text string) ([]Candidate, error) {
	var out []Candidate
	at := map[int]int{} // intent → index in out
	for _, m := range k.ac.find(text) {
		kw := k.ac.patterns[m.pattern]
		i := k.owner[m.pattern]
		j, ok := at[i]
		if !ok {
			at[i] = len(out)
			out = append(out, Candidate{Intent: k.intent[i], Score: 1, Reason: "keyword:" + kw})
			continue
		}
		if len(kw) > len(out[j].Reason)-len("keyword:") {
			out[j].Reason = "keyword:" + kw
		}
	}
	return out, nil
}
