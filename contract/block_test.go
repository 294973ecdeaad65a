package contract

import "testing"

func TestBlock(t *testing.T) {
	for _, tt := range []struct {
		name, text, lang, want string
		ok                     bool
	}{
		{"labelled", "Here:\n```sql\nSELECT 1\n```\nDone.", "sql", "SELECT 1", true},
		{"label case", "```SQL\nSELECT 1\n```", "sql", "SELECT 1", true},
		{"labelled wins over an earlier bare block", "```\nout\n```\n```python\nprint(1)\n```", "python", "print(1)", true},
		{"bare block when none is labelled", "```\nprint(1)\n```", "python", "print(1)", true},
		{"other label is not taken", "```go\nx := 1\n```", "python", "", false},
		{"any label", "```xml\n<a/>\n```", "", "<a/>", true},
		{"several lines, CRLF", "```json\r\n{\r\n}\r\n```\r\n", "json", "{\r\n}", true},
		{"empty body", "```json\n```", "json", "", true},
		{"left open", "```python\nprint(1)\nprint(2)", "python", "print(1)\nprint(2)", true},
		{"nested block", "```markdown\n# R\n```echarts\n{}\n```\nend\n```\nafter", "markdown", "# R\n```echarts\n{}\n```\nend", true},
		{"longer fence holds a shorter one", "````md\n```\nx\n```\n````", "md", "```\nx\n```", true},
		{"indented fence", "1. run:\n   ```sh\n   ls\n   ```", "sh", "   ls", true},
		{"inline code is no fence", "use ```x``` here", "", "", false},
		{"no block", "just text", "", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Block(tt.text, tt.lang)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("Block(%q, %q) = %q, %v; want %q, %v", tt.text, tt.lang, got, ok, tt.want, tt.ok)
			}
		})
	}
}
