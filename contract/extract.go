package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	jsv "github.com/santhosh-tekuri/jsonschema/v6"
)

// span is a candidate JSON object text[lo:hi].
type span struct{ lo, hi int }

// maxRestarts bounds the extra scans started after a stray '{' in prose
// swallowed the answer's real object; each scan is linear, so extraction
// stays linear.
const maxRestarts = 3

// objectSpans appends to dst the maximal balanced {...} spans of text[lo:hi],
// in order. It is one pass with a bracket stack and string state: strings
// are only tracked inside brackets (prose quotes do not count), a
// mismatched closing bracket abandons every open bracket, and a closed
// object replaces the objects it contains.
func objectSpans(text string, lo, hi int, dst []span, stack []int32) ([]span, []int32) {
	base := len(dst)
	stack = stack[:0] // positions of open brackets; the sign bit marks '['
	for i := lo; i < hi; i++ {
		if len(stack) == 0 {
			// Outside any object only '{' matters.
			j := strings.IndexByte(text[i:hi], '{')
			if j < 0 {
				break
			}
			i += j
			stack = append(stack, int32(i))
			continue
		}
		switch c := text[i]; c {
		case '"':
			// Skip the string: find the closing quote not escaped by an odd
			// run of backslashes.
			for {
				j := strings.IndexByte(text[i+1:hi], '"')
				if j < 0 {
					return dst, stack
				}
				i += j + 1
				k := i - 1
				for text[k] == '\\' {
					k--
				}
				if (i-1-k)%2 == 0 {
					break
				}
			}
		case '{':
			stack = append(stack, int32(i))
		case '[':
			stack = append(stack, ^int32(i))
		case '}', ']':
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if (top >= 0) != (c == '}') {
				stack = stack[:0] // mismatched brackets: prose, start over
				continue
			}
			if c == '}' {
				start := int(top)
				for len(dst) > base && dst[len(dst)-1].lo > start {
					dst = dst[:len(dst)-1]
				}
				dst = append(dst, span{start, i + 1})
			}
		}
	}
	return dst, stack
}

// region is part of the text where the answer's object is looked for.
type region struct{ lo, hi int }

// findTag returns the contents of the first <tag>…</tag> block (matched
// case-insensitively; an unclosed block runs to the end of the text).
func findTag(text, tag string) (region, bool) {
	if tag == "" {
		return region{}, false
	}
	open := "<" + tag + ">"
	i := indexFold(text, open, 0)
	if i < 0 {
		return region{}, false
	}
	lo := i + len(open)
	j := indexFold(text, "</"+tag+">", lo)
	if j < 0 {
		return region{lo, len(text)}, true
	}
	return region{lo, j}, true
}

// indexFold is a case-insensitive strings.Index for an ASCII needle that
// starts with '<', linear in len(s) times len(needle).
func indexFold(s, needle string, from int) int {
	for i := from; i+len(needle) <= len(s); {
		j := strings.IndexByte(s[i:], '<')
		if j < 0 {
			return -1
		}
		i += j
		if i+len(needle) > len(s) {
			return -1
		}
		if equalFoldASCII(s[i:i+len(needle)], needle) {
			return i
		}
		i++
	}
	return -1
}

// equalFoldASCII compares two equally long strings, folding ASCII case.
func equalFoldASCII(a, b string) bool {
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if x|0x20 != y|0x20 || x|0x20 < 'a' || x|0x20 > 'z' {
			return false
		}
	}
	return true
}

// fences returns the contents of ```json (or unlabelled) code fences that
// look like they hold an object.
func fences(text string, dst []region) []region {
	i := 0
	for {
		j := strings.Index(text[i:], "```")
		if j < 0 {
			return dst
		}
		open := i + j + 3
		nl := strings.IndexByte(text[open:], '\n')
		if nl < 0 {
			return dst
		}
		lang := strings.TrimSpace(text[open : open+nl])
		lo := open + nl + 1
		k := strings.Index(text[lo:], "```")
		hi := len(text)
		if k >= 0 {
			hi = lo + k
		}
		switch strings.ToLower(lang) {
		case "json", "jsonc", "json5", "":
			dst = append(dst, region{lo, hi})
		}
		if k < 0 {
			return dst
		}
		i = hi + 3
	}
}

// choice is the outcome of looking for an object that satisfies a schema.
type choice struct {
	obj     []byte // the object, strict JSON; may be the extractor's scratch
	val     any    // obj decoded, when there is a schema
	renamed bool   // field names in val were renamed to the schema's case
	lo      int    // offset of obj in the text
	err     error  // when no object was acceptable
}

// extractor carries reusable scratch space.
type extractor struct {
	spans []span
	stack []int32
	regs  []region
	buf   []byte
}

// find looks for the first object in text that satisfies s (nil: any
// valid object). Objects in the tag block win, then objects in JSON code
// fences, then the rest of the text.
func (x *extractor) find(text, tag string, s *Schema) choice {
	if r, ok := findTag(text, tag); ok {
		c := x.findIn(text, r.lo, r.hi, s)
		if c.err == ErrNoJSON {
			c.err = fmt.Errorf("%w: the <%s> block holds no JSON object", ErrNoJSON, tag)
		}
		return c
	}
	x.regs = fences(text, x.regs[:0])
	var firstErr choice
	for _, r := range x.regs {
		c := x.findIn(text, r.lo, r.hi, s)
		if c.err == nil {
			return c
		}
		if firstErr.err == nil && c.err != ErrNoJSON {
			firstErr = c
		}
	}
	c := x.findIn(text, 0, len(text), s)
	if c.err == nil || firstErr.err == nil {
		return c
	}
	return firstErr
}

// check normalises one candidate and, with a schema, decodes and
// validates it.
func (x *extractor) check(obj string, s *Schema) choice {
	x.buf = normalise(x.buf[:0], obj, nil)
	if s == nil {
		if !json.Valid(x.buf) {
			return choice{err: errBadSyntax}
		}
		return choice{obj: x.buf}
	}
	v, renamed, err := s.check(x.buf)
	return choice{obj: x.buf, val: v, renamed: renamed, err: err}
}

// invalid is the first candidate that is JSON but fails the schema; its
// problems are only worded if no candidate passes.
type invalid struct {
	data []byte
	val  any
	err  error
	lo   int
}

// findIn scans text[lo:hi]. Of the candidate objects it returns the first
// that validates; failing that, the problems of the first syntactically
// valid one; failing that, the syntax error of the first that looks like
// JSON (only that one gets its *SyntaxError built).
func (x *extractor) findIn(text string, lo, hi int, s *Schema) choice {
	none := span{-1, -1}
	syntax := none
	syntaxLooks := false
	var bad *invalid
	start := lo
	for pass := 0; pass <= maxRestarts; pass++ {
		x.spans, x.stack = objectSpans(text, start, hi, x.spans[:0], x.stack)
		// A '{' or quote left open at the end, or a failed candidate with
		// an object inside, may be prose that swallowed the real object.
		restart := len(x.stack) > 0
		for _, sp := range x.spans {
			c := x.check(text[sp.lo:sp.hi], s)
			if c.err == nil {
				c.lo = sp.lo
				return c
			}
			if c.err != errBadSyntax {
				if bad == nil {
					bad = &invalid{bytes.Clone(c.obj), c.val, c.err, sp.lo}
				}
				continue
			}
			looks := looksLikeObject(text, sp.lo, sp.hi)
			if syntax == none || (!syntaxLooks && looks) {
				syntax, syntaxLooks = sp, looks
			}
			if !restart && nextObjectStart(text, sp.lo+1, sp.hi) >= 0 {
				restart = true
			}
		}
		if bad != nil || !restart {
			break
		}
		first := strings.IndexByte(text[start:hi], '{')
		if first < 0 {
			break
		}
		next := nextObjectStart(text, start+first+1, hi)
		if next < 0 {
			break
		}
		start = next
	}
	switch {
	case bad != nil:
		return choice{lo: bad.lo, err: s.problems(bad.data, bad.val, bad.err)}
	case syntax != none:
		if err := syntaxError(text[syntax.lo:syntax.hi], syntax.lo); err != nil {
			return choice{lo: syntax.lo, err: err}
		}
	}
	if i := strings.IndexByte(text[lo:hi], '{'); i >= 0 {
		// An object that never closes: report where it breaks.
		if err := syntaxError(text[lo+i:hi], lo+i); err != nil {
			return choice{lo: lo + i, err: err}
		}
	}
	return choice{err: ErrNoJSON}
}

// looksLikeObject reports whether text[lo:hi] starts like a JSON object:
// '{' then, after spaces, '"' or '}'.
func looksLikeObject(text string, lo, hi int) bool {
	k := lo + 1
	for k < hi && isSpace(text[k]) {
		k++
	}
	return k < hi && (text[k] == '"' || text[k] == '}')
}

// nextObjectStart finds the next '{' followed (after spaces) by '"' or '}'.
func nextObjectStart(text string, from, hi int) int {
	for from < hi {
		j := strings.IndexByte(text[from:hi], '{')
		if j < 0 {
			return -1
		}
		i := from + j
		if looksLikeObject(text, i, hi) {
			return i
		}
		from = i + 1
	}
	return -1
}

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
			return &SyntaxError{Offset: base, Message: err.Error(), Near: cut(s, 40)}
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

// Extract returns the first valid JSON object in text, as strict JSON: from
// the tag block if there is one (see WithTag), else from a ```json fence,
// else from anywhere in the text. Tolerated slips are repaired. The error
// is ErrNoJSON or a *SyntaxError.
func Extract(text string, opts ...Option) (json.RawMessage, error) {
	return extract(text, nil, opts)
}

func extract(text string, s *Schema, opts []Option) (json.RawMessage, error) {
	o := buildOptions(opts)
	x := extractors.Get().(*extractor)
	defer extractors.Put(x)
	c := x.find(text, o.tag, s)
	if c.err != nil {
		return nil, c.err
	}
	if c.renamed {
		// Write the object again with the schema's field names, decoding
		// numbers as json.Number so that every digit is kept.
		v, err := jsv.UnmarshalJSON(bytes.NewReader(c.obj))
		if err != nil {
			return nil, err
		}
		var w walker
		w.walk(v, s.v)
		return json.Marshal(v)
	}
	return json.RawMessage(bytes.Clone(c.obj)), nil
}
