package dataagent_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/dataagent"
)

// TestFromChatOptions: leading option lines of a chat message choose the
// source, plan review and SQL only, in English or Chinese; a message
// without options is all question; bad options are errors that say why.
func TestFromChatOptions(t *testing.T) {
	for _, c := range []struct {
		text string
		want dataagent.Input
	}{
		{"Which city has the most customers?", dataagent.Input{Question: "Which city has the most customers?"}},
		{"source: sales\nreview: yes\nWhich city?", dataagent.Input{Question: "Which city?", Source: "sales", HumanReview: true}},
		{"SQL only: yes\nsource: dw\nHow many orders?\nIn 2024.", dataagent.Input{Question: "How many orders?\nIn 2024.", Source: "dw", NL2SQLOnly: true}},
		{"数据源：shop\n审核：是\n只要 SQL：否\n每个城市有多少客户？", dataagent.Input{Question: "每个城市有多少客户？", Source: "shop", HumanReview: true}},
		// A question with a colon is a question.
		{"Note: which products sold best?", dataagent.Input{Question: "Note: which products sold best?"}},
	} {
		raw, err := dataagent.FromChat(c.text)
		if err != nil {
			t.Fatalf("%q: %v", c.text, err)
		}
		var got dataagent.Input
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%q: got %+v, want %+v", c.text, got, c.want)
		}
	}
	for text, says := range map[string]string{
		"review: maybe\nWhich city?": `"maybe" is not yes or no`,
		"source: sales\n":            "no question",
	} {
		if _, err := dataagent.FromChat(text); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%q: error %v, want one saying %q", text, err, says)
		}
	}
}
