package convo

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// TrimObservation bounds a tool observation. JSON is compacted, lists are
// cut to t.MaxItems items followed by a string such as "... (+37 more)",
// and strings longer than t.MaxString characters are cut with a marker,
// so the result is still valid JSON. Then any observation longer than
// t.MaxChars characters is cut there with a marker saying how much was
// left out. A bound of 0 or less means no bound.
func TrimObservation(s string, t Trim) string {
	out := s
	body := strings.TrimSpace(s)
	if body != "" && (body[0] == '{' || body[0] == '[') && json.Valid([]byte(body)) {
		j := jsonTrim{src: body, t: t, out: make([]byte, 0, min(len(body), 4096))}
		j.value(true)
		out = string(j.out)
	}
	if t.MaxChars > 0 {
		if n := utf8.RuneCountInString(out); n > t.MaxChars {
			out = cutRunes(out, t.MaxChars) + "\n… [truncated: " + strconv.Itoa(n-t.MaxChars) + " more characters]"
		}
	}
	return out
}

func cutRunes(s string, n int) string {
	i := 0
	for k := 0; k < n && i < len(s); k++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}

// jsonTrim rewrites valid JSON compactly with lists and strings cut.
type jsonTrim struct {
	src string
	i   int
	t   Trim
	out []byte
}

func (j *jsonTrim) space() {
	for j.i < len(j.src) {
		switch j.src[j.i] {
		case ' ', '\t', '\n', '\r':
			j.i++
		default:
			return
		}
	}
}

// value copies (emit) or skips one value.
func (j *jsonTrim) value(emit bool) {
	j.space()
	if j.i >= len(j.src) {
		return
	}
	switch j.src[j.i] {
	case '{':
		j.i++
		if emit {
			j.out = append(j.out, '{')
		}
		j.space()
		first := true
		for j.i < len(j.src) && j.src[j.i] != '}' {
			if !first {
				j.i++ // ,
				j.space()
				if emit {
					j.out = append(j.out, ',')
				}
			}
			first = false
			j.str(emit, false)
			j.space()
			j.i++ // :
			if emit {
				j.out = append(j.out, ':')
			}
			j.value(emit)
			j.space()
		}
		j.i++
		if emit {
			j.out = append(j.out, '}')
		}
	case '[':
		j.i++
		if emit {
			j.out = append(j.out, '[')
		}
		j.space()
		n := 0
		for j.i < len(j.src) && j.src[j.i] != ']' {
			if n > 0 {
				j.i++ // ,
				j.space()
			}
			keep := emit && (j.t.MaxItems <= 0 || n < j.t.MaxItems)
			if keep && n > 0 {
				j.out = append(j.out, ',')
			}
			j.value(keep)
			j.space()
			n++
		}
		j.i++
		if emit {
			if extra := n - j.t.MaxItems; j.t.MaxItems > 0 && extra > 0 {
				j.out = append(j.out, `,"... (+`...)
				j.out = strconv.AppendInt(j.out, int64(extra), 10)
				j.out = append(j.out, ` more)"`...)
			}
			j.out = append(j.out, ']')
		}
	case '"':
		j.str(emit, true)
	default:
		start := j.i
		for j.i < len(j.src) {
			c := j.src[j.i]
			if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				break
			}
			j.i++
		}
		if emit {
			j.out = append(j.out, j.src[start:j.i]...)
		}
	}
}

// str copies or skips a string; values (not keys) are cut at MaxString.
func (j *jsonTrim) str(emit, cut bool) {
	start := j.i
	j.i++
	runes, cutAt := 0, -1
	for j.i < len(j.src) {
		c := j.src[j.i]
		if c == '"' {
			break
		}
		if cutAt < 0 && runes == j.t.MaxString {
			cutAt = j.i
		}
		if c == '\\' {
			j.i += 2
			if j.i <= len(j.src) && j.src[j.i-1] == 'u' {
				j.i += 4
			}
		} else {
			_, size := utf8.DecodeRuneInString(j.src[j.i:])
			j.i += size
		}
		runes++
	}
	j.i++ // closing quote
	if !emit {
		return
	}
	if !cut || cutAt < 0 || j.t.MaxString <= 0 {
		j.out = append(j.out, j.src[start:j.i]...)
		return
	}
	j.out = append(j.out, j.src[start:cutAt]...)
	j.out = append(j.out, "… (+"...)
	j.out = strconv.AppendInt(j.out, int64(runes-j.t.MaxString), 10)
	j.out = append(j.out, ` chars)"`...)
}
