package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/loomkit/loom/schema"
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

// fences returns the bodies of the ```json (or unlabelled) code blocks
// of text (see Block for the rule).
func fences(text string, dst []region) []region {
	eachFence(text, func(f fence) bool {
		switch f.lang {
		case "json", "jsonc", "json5", "":
			dst = append(dst, region{f.lo, f.hi})
		}
		return true
	})
	return dst
}

// choice is the outcome of looking for an object that satisfies a schema.
type choice struct {
	obj []byte // the object, strict JSON, with the schema's field names; may be the extractor's scratch
	lo  int    // offset of obj in the text
	err error  // when no object was acceptable
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
func (x *extractor) find(text, tag string, s *schema.Schema) choice {
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

// check repairs one candidate and, with a schema, validates it. A
// candidate that is not JSON gets the bare ErrSyntax: only the one that
// is reported gets its *SyntaxError built.
func (x *extractor) check(obj string, s *schema.Schema) choice {
	x.buf = schema.Repair(x.buf[:0], obj)
	if s == nil {
		if !json.Valid(x.buf) {
			return choice{err: ErrSyntax}
		}
		return choice{obj: x.buf}
	}
	out, err := s.Check(x.buf)
	return choice{obj: out, err: err}
}

// invalid is the first candidate that is JSON but fails the schema.
type invalid struct {
	err error
	lo  int
}

// findIn scans text[lo:hi]. Of the candidate objects it returns the first
// that validates; failing that, the problems of the first syntactically
// valid one; failing that, the syntax error of the first that looks like
// JSON (only that one gets its *SyntaxError built).
func (x *extractor) findIn(text string, lo, hi int, s *schema.Schema) choice {
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
			if c.err != ErrSyntax {
				if bad == nil {
					bad = &invalid{c.err, sp.lo}
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
		return choice{lo: bad.lo, err: bad.err}
	case syntax != none:
		if err := schema.SyntaxAt(text[syntax.lo:syntax.hi], syntax.lo); err != nil {
			return choice{lo: syntax.lo, err: err}
		}
	}
	if i := strings.IndexByte(text[lo:hi], '{'); i >= 0 {
		// An object that never closes: report where it breaks.
		if err := schema.SyntaxAt(text[lo+i:hi], lo+i); err != nil {
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

// Extract returns the first valid JSON object in text, as strict JSON: from
// the tag block if there is one (see WithTag), else from a ```json fence,
// else from anywhere in the text. Tolerated slips are repaired. The error
// is ErrNoJSON or a *SyntaxError.
func Extract(text string, opts ...Option) (json.RawMessage, error) {
	return extract(text, nil, opts)
}

// ExtractFor finds the first JSON object in text that satisfies s, as
// Decode does, and returns it as strict JSON (tolerated slips repaired,
// field names in the schema's case), ready for json.Unmarshal. Tool
// arguments go through it.
func ExtractFor(text string, s *schema.Schema, opts ...Option) (json.RawMessage, error) {
	return extract(text, s, opts)
}

func extract(text string, s *schema.Schema, opts []Option) (json.RawMessage, error) {
	o := buildOptions(opts)
	x := extractors.Get().(*extractor)
	defer extractors.Put(x)
	c := x.find(text, o.tag, s)
	if c.err != nil {
		return nil, c.err
	}
	return json.RawMessage(bytes.Clone(c.obj)), nil
}

// isSpace reports whether c is JSON white space.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
