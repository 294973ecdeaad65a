package table_test

import (
	"strings"
	"testing"

	"github.com/loomkit/loom/apps/internal/table"
)

// TestMarkdown: cells are escaped (a pipe, a line break, a tag-like
// value), null and floats are written plainly, and the count of rows is
// said past Shown or when the query had more, in either language.
func TestMarkdown(t *testing.T) {
	md := table.Markdown([]string{"name", "n"}, [][]any{{"a|b", 1.50}, {"x\ny", nil}, {"Widget <Pro>", 2.0}}, false, false)
	for _, want := range []string{"| name | n |\n|---|---|", `| a\|b | 1.5 |`, "| x y | NULL |", `| Widget \<Pro> | 2 |`} {
		if !strings.Contains(md, want) {
			t.Errorf("lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "rows shown") {
		t.Errorf("a whole result says rows shown:\n%s", md)
	}
	rows := make([][]any, 25)
	for i := range rows {
		rows[i] = []any{i}
	}
	if md := table.Markdown([]string{"i"}, rows, true, false); !strings.HasSuffix(md, "(20 of 25+ rows shown)") || strings.Count(md, "\n| ") != table.Shown {
		t.Errorf("a long result:\n%s", md)
	}
	if md := table.Markdown([]string{"i"}, nil, false, true); !strings.HasSuffix(md, "（无结果）") {
		t.Errorf("no rows in Chinese:\n%s", md)
	}
	if table.Markdown(nil, rows, false, false) != "" {
		t.Error("a result without columns has a table")
	}
}
