package report

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/loomkit/loom/apps/report/jrxml"
	"github.com/loomkit/loom/apps/report/layout"
)

// formText is what an uploaded form shows that a template made from it
// must keep: its title, its labels and the header of each of its tables,
// as the layout read them.
type formText struct {
	Title  string
	Labels []string
	Tables [][]string
}

// readFormText takes the title, labels and table headers out of a layout.
// The title is the tallest piece of text above the first table that is
// neither a label nor a value, when it stands out: taller than most of the
// form's text on a picture or PDF; alone in its row and merged across
// columns or bold near the top of a workbook or document.
func readFormText(l *layout.Layout) formText {
	var f formText
	paired := map[int]bool{}
	for _, p := range l.Pairs {
		paired[p.LabelCell] = true
		if p.Value >= 0 {
			paired[p.Value] = true
		}
		if label := strings.TrimSpace(p.Label); label != "" && !slices.Contains(f.Labels, label) {
			f.Labels = append(f.Labels, label)
		}
	}
	top := len(l.Rows)
	for _, t := range l.Tables {
		top = min(top, t.FirstRow)
		var head []string
		for _, h := range t.Header {
			if h = strings.TrimSpace(h); h != "" {
				head = append(head, h)
			}
		}
		if len(head) >= 2 {
			f.Tables = append(f.Tables, head)
		}
	}
	var heights []int
	for _, c := range l.Cells {
		heights = append(heights, c.Box.H)
	}
	if len(heights) == 0 {
		return f
	}
	slices.Sort(heights)
	median := heights[len(heights)/2]
	cells := l.Cells
	best := -1
	for i, c := range cells {
		if c.Row >= top || paired[i] || !hasLetters(c.Text, 2) {
			continue
		}
		stands := 10*c.Box.H >= 13*median
		if l.Source == layout.KindXLSX || l.Source == layout.KindDOCX {
			alone := c.Row < len(l.Rows) && len(l.Rows[c.Row].Cells) == 1
			stands = alone && c.Row < 3 && (strings.Contains(c.Ref, ":") || c.Bold || stands)
		}
		if stands && (best < 0 || c.Box.H > cells[best].Box.H) {
			best = i
		}
	}
	if best >= 0 {
		f.Title = strings.TrimSpace(cells[best].Text)
	}
	return f
}

// hasLetters reports whether s has at least n letters.
func hasLetters(s string, n int) bool {
	for _, r := range s {
		if unicode.IsLetter(r) {
			if n--; n <= 0 {
				return true
			}
		}
	}
	return false
}

// formTextOf reads the form's text from a design's layout schema; false
// when there is none.
func formTextOf(l *Layout) (formText, bool) {
	if l == nil || len(l.Schema) == 0 {
		return formText{}, false
	}
	var ll layout.Layout
	if err := json.Unmarshal(l.Schema, &ll); err != nil {
		return formText{}, false
	}
	return readFormText(&ll), true
}

// literalRE matches a Java string literal in an expression.
var literalRE = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)

// templateTexts are the texts a template prints whatever its data: its
// static texts and the string literals of its text fields, normalised.
func templateTexts(doc *jrxml.Document) []string {
	var out []string
	doc.Root.Walk(func(e *jrxml.Element) bool {
		switch e.Name {
		case "staticText":
			if t := e.Child("text"); t != nil {
				out = append(out, normForm(t.Text()))
			}
			return false
		case "textFieldExpression":
			for _, m := range literalRE.FindAllStringSubmatch(e.Text(), -1) {
				out = append(out, normForm(unquoteJava(m[1])))
			}
		}
		return true
	})
	return out
}

// unquoteJava reads the escapes of a Java string literal's body that
// matter for text: \uXXXX, \" and \\.
func unquoteJava(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		if s[i] == 'u' && i+4 < len(s) {
			var r rune
			if _, err := fmt.Sscanf(s[i+1:i+5], "%04x", &r); err == nil {
				b.WriteRune(r)
				i += 4
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// normForm is text as the fidelity check compares it: no spaces or
// punctuation a form puts around labels (colons, commas, underscores),
// letters in lower case, full-width forms as half-width.
func normForm(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 0xff01 && r <= 0xff5e {
			r -= 0xfee0
		}
		if unicode.IsSpace(r) || strings.ContainsRune(":,_;.、。", r) {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// keeps reports whether the template's texts hold want: a text holds it,
// or it holds a text of at least half its length (a label the template
// shortened, "数量" for "数量 Quantity").
func keeps(texts []string, want string) bool {
	w := normForm(want)
	if w == "" {
		return true
	}
	for _, t := range texts {
		if t == "" {
			continue
		}
		if strings.Contains(t, w) || utf8.RuneCountInString(t) >= 2 && 2*utf8.RuneCountInString(t) >= utf8.RuneCountInString(w) && strings.Contains(w, t) {
			return true
		}
	}
	return false
}

// fidelityProblems are the ways a template fails its form: the title
// missing, most labels missing, a table whose header is mostly missing.
func fidelityProblems(doc *jrxml.Document, f formText) []jrxml.Problem {
	texts := templateTexts(doc)
	line, col := doc.Root.Pos()
	var ps []jrxml.Problem
	add := func(msg, hint string) {
		ps = append(ps, jrxml.Problem{Element: doc.Root.Name, Line: line, Column: col, Severity: jrxml.Error, Check: "fidelity", Message: msg, Hint: hint})
	}
	if f.Title != "" && !keeps(texts, f.Title) {
		add(fmt.Sprintf("the form's title %q is not in the template", f.Title),
			"draw it as a staticText in the title band, where the form has it")
	}
	if len(f.Labels) >= 2 {
		var missing []string
		for _, l := range f.Labels {
			if !keeps(texts, l) {
				missing = append(missing, l)
			}
		}
		if 2*len(missing) > len(f.Labels) {
			add(fmt.Sprintf("the template keeps %d of the form's %d labels; missing: %s", len(f.Labels)-len(missing), len(f.Labels), quoteList(missing, 6)),
				"draw each label as a staticText with its value's field beside it")
		}
	}
	for _, head := range f.Tables {
		var missing []string
		for _, h := range head {
			if !keeps(texts, h) {
				missing = append(missing, h)
			}
		}
		if 2*len(missing) > len(head) {
			add(fmt.Sprintf("the form's table is missing: %d of its %d column headers are not in the template (%s)", len(missing), len(head), quoteList(missing, 6)),
				"draw the table's header row as staticText in the columnHeader band and one field per column in the detail band")
		}
	}
	return ps
}

// quoteList quotes at most n texts, with a count of the rest.
func quoteList(xs []string, n int) string {
	var b strings.Builder
	for i, x := range xs {
		if i == n {
			fmt.Fprintf(&b, " and %d more", len(xs)-n)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", x)
	}
	return b.String()
}
