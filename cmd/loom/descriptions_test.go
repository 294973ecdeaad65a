package main

import (
	"regexp"
	"testing"
)

// TestAgentsDescribeThemselvesInChinese: every agent loom serve serves
// has a Chinese description that reads as Chinese by the web page's own
// rule: Chinese characters, and no lowercase English words (names such
// as SQL or PDF may stay).
func TestAgentsDescribeThemselvesInChinese(t *testing.T) {
	cjk := regexp.MustCompile(`[\p{Han}]`)
	english := regexp.MustCompile(`\b[a-z]{2,}\b`)
	agents := agentsFor(config{}).All()
	if len(agents) < 6 {
		t.Fatalf("%d agents, want at least the six that ship", len(agents))
	}
	for _, a := range agents {
		switch {
		case a.DescriptionZh == "":
			t.Errorf("agent %s has no Chinese description", a.Name)
		case !cjk.MatchString(a.DescriptionZh) || english.MatchString(a.DescriptionZh):
			t.Errorf("agent %s: Chinese description %q does not read as Chinese", a.Name, a.DescriptionZh)
		case a.DescriptionZh == a.Description:
			t.Errorf("agent %s: Chinese description is the English one", a.Name)
		}
	}
}
