package contract

import "strings"

// Block returns the body of a fenced code block of text, and whether there
// is one: the first block labelled lang or, failing that, the first with
// no label (lang "" takes the first block of any label). The rule:
//
//   - A fence is a line of three or more backticks, after any indentation;
//     the first word after them (compared case-insensitively) is the
//     block's label.
//   - A block ends at a line of only backticks, at least as many as its
//     opening fence had. Inside it, a fence with a label opens an inner
//     block, closed the same way, so a markdown block holding a chart block
//     is one block.
//   - A block left open runs to the end of the text (an answer cut short).
//
// The body is the lines between the fences, without the line break before
// the closing fence.
func Block(text, lang string) (string, bool) {
	lang = strings.ToLower(lang)
	var first, bare *fence
	eachFence(text, func(f fence) bool {
		switch {
		case f.lang == lang || lang == "":
			first = &f
			return false
		case f.lang == "" && bare == nil:
			bare = &f
		}
		return true
	})
	if first == nil {
		first = bare
	}
	if first == nil {
		return "", false
	}
	return text[first.lo:first.hi], true
}

// fence is a fenced block of a text: its label, lowercased, and its body
// text[lo:hi].
type fence struct {
	lang   string
	lo, hi int
}

// eachFence calls fn with the outermost fenced blocks of text in order
// (see Block for the rule), until fn returns false. It is one pass over
// the text.
func eachFence(text string, fn func(fence) bool) {
	var open []int // backtick counts of the open blocks, innermost last
	var cur fence
	for i := 0; i < len(text); {
		end := strings.IndexByte(text[i:], '\n')
		next := len(text)
		if end < 0 {
			end = len(text)
		} else {
			end += i
			next = end + 1
		}
		n, label, ok := fenceLine(text[i:end])
		switch {
		case !ok:
		case len(open) == 0:
			open = append(open, n)
			cur = fence{lang: label, lo: next}
		case label != "":
			open = append(open, n)
		case n >= open[len(open)-1]:
			open = open[:len(open)-1]
			if len(open) == 0 {
				hi := i
				if hi > cur.lo {
					hi-- // the line break before the closing fence
					if hi > cur.lo && text[hi-1] == '\r' {
						hi--
					}
				}
				cur.hi = hi
				if !fn(cur) {
					return
				}
			}
		}
		i = next
	}
	if len(open) > 0 {
		cur.hi = len(text)
		fn(cur)
	}
}

// fenceLine reports whether line is a fence: its number of backticks and
// its label ("" for a closing fence or a block with no label).
func fenceLine(line string) (n int, label string, ok bool) {
	line = strings.TrimLeft(line, " \t")
	for n < len(line) && line[n] == '`' {
		n++
	}
	if n < 3 {
		return 0, "", false
	}
	info := strings.TrimSpace(line[n:])
	if strings.Contains(info, "`") {
		return 0, "", false // inline code, not a fence
	}
	label, _, _ = strings.Cut(info, " ")
	return n, strings.ToLower(label), true
}
