package report_test

import (
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/dataagent/report"
	"github.com/loomkit/loom/apps/internal/table"
)

// TestHTMLLikeValuesInTables: values that look like HTML tags are shown
// as written in report tables, never dropped, whether the table was
// written by the agent (table.Markdown, as the analyst's
// results are) or copied by the model into its Markdown; real markup is
// still left out and the page runs nothing.
func TestHTMLLikeValuesInTables(t *testing.T) {
	values := []string{"Widget <Pro>", "<unknown>", "a < b", "x<y>z", "C&A <Kids>"}
	rows := make([][]any, len(values))
	for i, v := range values {
		rows[i] = []any{v, i}
	}
	ours := table.Markdown([]string{"product", "n"}, rows, false, false)
	copied := "| product | n |\n|---|---|\n"
	for i, v := range values {
		copied += "| " + v + " | " + string(rune('0'+i)) + " |\n"
	}
	copied += "| <b>bold</b> <script>alert(1)</script> | 9 |\n"
	for name, md := range map[string]string{"ours": ours, "copied": copied} {
		page, err := report.HTML("# Products\n\n"+md, report.Options{Locale: "en"})
		if err != nil {
			t.Fatal(err)
		}
		doc := parsePage(t, page.HTML)
		cells := find(doc, "td")
		var got []string
		for _, c := range cells {
			got = append(got, textOf(c))
		}
		for i, v := range values {
			if 2*i >= len(got) || got[2*i] != v {
				t.Errorf("%s: cell %d is %q, want %q (cells %q)", name, i, got[min(2*i, len(got)-1)], v, got)
			}
		}
		if strings.Contains(strings.ToLower(string(page.HTML)), "<script") || len(find(doc, "b")) > 0 {
			t.Errorf("%s: markup reached the page:\n%s", name, page.HTML)
		}
	}
}
