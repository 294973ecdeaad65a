package schema

import (
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/loomkit/loom/internal/text"
)

// Normalising: the tolerated slips are repaired lexically, before
// encoding/json sees the text.

// edit records where normalising changed a length: from out on, offsets in
// the normalised text correspond to offsets in the original from in.
type edit struct{ out, in int }

// strSpecial marks the bytes that end a run of plain string contents;
// outSpecial those that end a run outside strings.
var strSpecial, outSpecial = func() (s, o [256]bool) {
	for c := range 0x20 {
		s[c] = true
	}
	s['"'], s['\\'] = true, true
	o['"'], o['/'], o[','] = true, true, true
	return s, o
}()

// normalise appends to dst the strict JSON form of s: // and /* */ comments
// and trailing commas before } or ] dropped, raw control characters inside
// strings escaped. It only tells strings from the rest, so it cannot
// change what a valid document means; anything else wrong is left for
// encoding/json to report. When edits is not nil it records the changes of
// length, to map error offsets back (see inputOffset).
func normalise(dst []byte, s string, edits *[]edit) []byte {
	base := len(dst)
	mark := func(in int) {
		if edits != nil {
			*edits = append(*edits, edit{len(dst) - base, in})
		}
	}
	inStr := false
	for i := 0; i < len(s); {
		j := i
		if inStr {
			for j < len(s) && !strSpecial[s[j]] {
				j++
			}
		} else {
			for j < len(s) && !outSpecial[s[j]] {
				j++
			}
		}
		dst = append(dst, s[i:j]...)
		if j == len(s) {
			break
		}
		c := s[j]
		i = j + 1
		switch {
		case c == '"':
			inStr = !inStr
			dst = append(dst, c)
		case inStr && c == '\\':
			dst = append(dst, c)
			if i < len(s) {
				dst = append(dst, s[i])
				i++
			}
		case inStr: // a raw control character, such as a real newline
			switch c {
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				const hex = "0123456789abcdef"
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			}
			mark(i)
		case c == '/':
			if k := skipComment(s, j); k > j {
				i = k
				mark(i)
			} else {
				dst = append(dst, c)
			}
		default: // ','
			k := i
			for k < len(s) {
				if isSpace(s[k]) {
					k++
				} else if e := skipComment(s, k); e > k {
					k = e
				} else {
					break
				}
			}
			if k < len(s) && (s[k] == '}' || s[k] == ']') {
				mark(i) // a trailing comma, dropped
			} else {
				dst = append(dst, c)
			}
		}
	}
	return dst
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipComment returns the offset after a comment starting at i, or i (also
// for an unterminated /* comment, so that its '/' is reported).
func skipComment(s string, i int) int {
	if i+1 >= len(s) || s[i] != '/' {
		return i
	}
	switch s[i+1] {
	case '/':
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			return len(s)
		}
		return i + j + 1
	case '*':
		if j := strings.Index(s[i+2:], "*/"); j >= 0 {
			return i + j + 4
		}
	}
	return i
}

// inputOffset maps an offset of the normalised text back to the original.
func inputOffset(edits []edit, off int) int {
	in := off
	for _, e := range edits {
		if e.out > off {
			break
		}
		in = e.in + off - e.out
	}
	return in
}

// syntaxError reports where s, at offset base of the answer, is not valid
// JSON after normalising, as encoding/json finds it; nil if it is valid.
func syntaxError(s string, base int) *SyntaxError {
	var edits []edit
	data := normalise(nil, s, &edits)
	var raw json.RawMessage
	var se *json.SyntaxError
	if err := json.Unmarshal(data, &raw); !errors.As(err, &se) {
		if err != nil {
			return &SyntaxError{Offset: base, Message: err.Error(), Near: text.Clip(s, 40)}
		}
		return nil
	}
	off := int(se.Offset) - 1 // Offset counts the offending byte
	if strings.HasPrefix(se.Error(), "unexpected end") {
		off = len(data)
	}
	off = min(inputOffset(edits, max(off, 0)), len(s))
	lo, hi := max(off-20, 0), min(off+20, len(s))
	for lo > 0 && lo < len(s) && !utf8.RuneStart(s[lo]) {
		lo--
	}
	for hi < len(s) && !utf8.RuneStart(s[hi]) {
		hi++
	}
	return &SyntaxError{Offset: base + off, Message: se.Error(), Near: s[lo:hi]}
}

// Repair appends to dst the strict JSON form of text: the slips models make
// and that cannot change what a document means are repaired (// and /* */
// comments and trailing commas before } or ] dropped, raw control
// characters inside strings escaped). Anything else wrong is left for a
// JSON decoder to report; SyntaxAt says where.
func Repair(dst []byte, text string) []byte { return normalise(dst, text, nil) }

// SyntaxAt reports where text is not valid JSON after Repair, as
// encoding/json finds it, with offsets counted from offset (where text
// starts in a longer answer); nil if text is valid.
func SyntaxAt(text string, offset int) *SyntaxError { return syntaxError(text, offset) }
