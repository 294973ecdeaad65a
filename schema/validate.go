package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"

	jsv "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/loomkit/loom/internal/text"
)

// Sentinel errors that callers branch on.
var (
	// ErrSyntax means a value is not valid JSON, even after Repair. The
	// error is a *SyntaxError, or ErrSyntax itself from Check.
	ErrSyntax = errors.New("invalid JSON")
	// ErrInvalid means the JSON is valid but does not match the schema. The
	// error is a *ValidationError.
	ErrInvalid = errors.New("answer does not match the expected format")
)

// Problem is one way a JSON value fails its schema.
type Problem struct {
	// Field is the path of the offending value, such as "action" or
	// "plan_steps[2].content"; empty for the whole answer.
	Field string `json:"field,omitempty"`
	// Message says what is wrong in words a model can act on, such as
	// `must be one of continue, ask_user, done; got "finish"`.
	Message string `json:"message"`
}

// String renders the problem as "field <path>: <message>".
func (p Problem) String() string {
	if p.Field == "" {
		return "answer: " + p.Message
	}
	return "field " + p.Field + ": " + p.Message
}

// ValidationError lists every way a JSON value fails its schema (up to ten),
// in the order they appear in the answer. errors.Is(err, ErrInvalid) is
// true.
type ValidationError struct {
	Problems []Problem
}

// Error lists the problems, one per line.
func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return strings.Join(parts, "\n")
}

// Is reports whether target is ErrInvalid.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// SyntaxError is a JSON syntax error at a byte offset of the answer.
// errors.Is(err, ErrSyntax) is true.
type SyntaxError struct {
	// Offset is the byte offset in the text checked (see SyntaxAt).
	Offset int
	// Message says what was expected.
	Message string
	// Near is the text around Offset.
	Near string
}

// Error renders the error with its offset and context.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at offset %d near %q: %s", e.Offset, e.Near, e.Message)
}

// Is reports whether target is ErrSyntax.
func (e *SyntaxError) Is(target error) bool { return target == ErrSyntax }

const maxProblems = 10

// errBadSyntax marks a candidate that is not JSON; the *SyntaxError is
// only built for the candidate that is reported (see syntaxError).
var errBadSyntax = errors.New("invalid JSON")

// check decodes the normalised JSON data and validates it. It returns the
// decoded value, whether field names were renamed to the schema's case, and
// errBadSyntax or the validator's error (see problems).
func (s *Schema) check(data []byte) (any, bool, error) {
	// Numbers are decoded as float64, which is faster than json.Number
	// and exact for what a decision holds; the bytes decoded into T are
	// the original ones, so T gets every digit.
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		// A number beyond float64 (1e400) is still JSON.
		if v, err = jsv.UnmarshalJSON(bytes.NewReader(data)); err != nil {
			return nil, false, errBadSyntax
		}
	}
	var w walker
	w.walk(v, s.v)
	return v, w.renamed, s.v.Validate(v)
}

// The tolerances of the schema rules that are not syntax: null for an
// absent optional field, and field names in the wrong case.

type seg struct {
	key string
	idx int // >= 0 for an array index
}

// walker prepares a decoded value for validation against a compiled
// schema: a null optional field is removed, as if absent, and a field name
// that matches a property only case-insensitively is renamed to it (as
// encoding/json matches it). With unknown set, it also records the unknown
// field names of each object, by path, for the messages.
type walker struct {
	renamed bool
	path    []seg
	unknown map[string][]string
}

// resolve follows a bare $ref.
func resolve(s *jsv.Schema) *jsv.Schema {
	for i := 0; s != nil && s.Ref != nil && s.Types == nil && len(s.Properties) == 0 && i < 32; i++ {
		s = s.Ref
	}
	return s
}

func (w *walker) walk(v any, s *jsv.Schema) {
	s = resolve(s)
	if s == nil || s.Bool != nil {
		return
	}
	additional, _ := s.AdditionalProperties.(*jsv.Schema)
	switch v := v.(type) {
	case map[string]any:
		var renames []string // pairs: from, to
		for k, e := range v {
			p, ok := s.Properties[k]
			switch {
			case ok:
				w.field(v, k, e, s, p)
			case len(s.Properties) > 0 && foldProp(s, v, k) != "":
				renames = append(renames, k, foldProp(s, v, k))
			case additional != nil:
				w.child(seg{key: k, idx: -1}, e, additional)
			case w.unknown != nil && len(s.Properties) > 0:
				path := fieldPath(w.path)
				if len(w.unknown[path]) < 3 {
					w.unknown[path] = append(w.unknown[path], k)
				}
			}
		}
		for i := 0; i < len(renames); i += 2 {
			from, to := renames[i], renames[i+1]
			e := v[from]
			delete(v, from)
			v[to] = e
			w.renamed = true
			w.field(v, to, e, s, s.Properties[to])
		}
	case []any:
		items := s.Items2020
		if items == nil {
			items, _ = s.Items.(*jsv.Schema)
		}
		if items != nil {
			for i, e := range v {
				w.child(seg{idx: i}, e, items)
			}
		}
	}
	for _, a := range s.AllOf {
		w.walk(v, a)
	}
	for _, alts := range [][]*jsv.Schema{s.AnyOf, s.OneOf} {
		for _, a := range alts {
			if admits(resolve(a), v) {
				w.walk(v, a)
				break
			}
		}
	}
}

func (w *walker) field(obj map[string]any, k string, e any, s, p *jsv.Schema) {
	if e == nil && !slices.Contains(s.Required, k) {
		delete(obj, k)
		return
	}
	w.child(seg{key: k, idx: -1}, e, p)
}

func (w *walker) child(sg seg, e any, s *jsv.Schema) {
	switch e.(type) {
	case map[string]any, []any:
	default:
		return // scalars have nothing to prepare
	}
	if w.unknown != nil {
		w.path = append(w.path, sg)
		defer func() { w.path = w.path[:len(w.path)-1] }()
	}
	w.walk(e, s)
}

// foldProp returns the property that k matches case-insensitively when obj
// does not have it already, or "".
func foldProp(s *jsv.Schema, obj map[string]any, k string) string {
	found := ""
	for name := range s.Properties {
		if strings.EqualFold(name, k) {
			if found != "" {
				return "" // ambiguous
			}
			found = name
		}
	}
	if _, dup := obj[found]; dup {
		return ""
	}
	return found
}

// admits reports whether s allows the JSON type of v.
func admits(s *jsv.Schema, v any) bool {
	if s == nil || s.Types == nil {
		return true
	}
	t := jsonType(v)
	for _, want := range s.Types.ToStrings() {
		if want == t || want == "integer" && t == "number" {
			return true
		}
	}
	return false
}

func jsonType(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return "number"
}

// Messages: the validator's errors, turned into problems a model can act on.

var printer = message.NewPrinter(language.English)

// problems turns the validator's error for v (decoded from data) into a
// *ValidationError.
func (s *Schema) problems(data []byte, v any, err error) *ValidationError {
	var ve *jsv.ValidationError
	if !errors.As(err, &ve) {
		return &ValidationError{Problems: []Problem{{Message: err.Error()}}}
	}
	w := walker{unknown: map[string][]string{}}
	w.walk(v, s.v)
	var leaves []*jsv.ValidationError
	collectLeaves(ve, &leaves)
	pos := positions(data)
	type placed struct {
		Problem
		at int64
	}
	var ps []placed
	for _, l := range leaves {
		path, got := locate(v, l.InstanceLocation)
		at := position(pos, path)
		if k, ok := l.ErrorKind.(*kind.Required); ok {
			msg := "required but missing"
			if u := w.unknown[fieldPath(path)]; len(u) > 0 {
				msg += " (unknown fields given: " + strings.Join(quoteAll(u), ", ") + ")"
			}
			for _, m := range k.Missing {
				f := fieldPath(append(path[:len(path):len(path)], seg{key: m, idx: -1}))
				ps = append(ps, placed{Problem{f, msg}, at[1]})
			}
			continue
		}
		ps = append(ps, placed{Problem{fieldPath(path), describeProblem(l.ErrorKind, got)}, at[0]})
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].at < ps[j].at })
	out := &ValidationError{}
	for _, p := range ps[:min(len(ps), maxProblems)] {
		out.Problems = append(out.Problems, p.Problem)
	}
	if len(out.Problems) == 0 {
		out.Problems = []Problem{{Message: ve.Error()}}
	}
	return out
}

// collectLeaves gathers the errors that say what is wrong, skipping the
// ones that only group others. Of the alternatives of anyOf or oneOf it
// keeps the problems of the first one the value's type fits.
func collectLeaves(e *jsv.ValidationError, out *[]*jsv.ValidationError) {
	switch e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
		for _, c := range e.Causes {
			collectLeaves(c, out)
		}
		return
	case *kind.AnyOf, *kind.OneOf:
		if len(e.Causes) == 0 {
			break
		}
		var want []string
		for _, c := range e.Causes {
			t := typeMismatch(c, e.InstanceLocation)
			if t == nil {
				collectLeaves(c, out)
				return
			}
			want = append(want, t.Want...)
		}
		*out = append(*out, &jsv.ValidationError{InstanceLocation: e.InstanceLocation, ErrorKind: &kind.Type{Want: want}})
		return
	}
	*out = append(*out, e)
}

// typeMismatch returns the type error if e only says that the value at loc
// has another type.
func typeMismatch(e *jsv.ValidationError, loc []string) *kind.Type {
	for len(e.Causes) == 1 {
		switch e.ErrorKind.(type) {
		case *kind.Schema, *kind.Group, *kind.Reference:
			e = e.Causes[0]
			continue
		}
		break
	}
	if t, ok := e.ErrorKind.(*kind.Type); ok && slices.Equal(e.InstanceLocation, loc) {
		return t
	}
	return nil
}

func describeProblem(k jsv.ErrorKind, got any) string {
	switch k := k.(type) {
	case *kind.Type:
		return "must be " + typeWords(k.Want) + "; got " + describe(got)
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = fmt.Sprint(w)
		}
		return "must be one of " + strings.Join(want, ", ") + "; got " + describe(got)
	case *kind.Const:
		return "must be " + describe(k.Want) + "; got " + describe(got)
	case *kind.Minimum:
		return "must be >= " + ratText(k.Want) + "; got " + describe(got)
	case *kind.ExclusiveMinimum:
		return "must be > " + ratText(k.Want) + "; got " + describe(got)
	case *kind.Maximum:
		return "must be <= " + ratText(k.Want) + "; got " + describe(got)
	case *kind.ExclusiveMaximum:
		return "must be < " + ratText(k.Want) + "; got " + describe(got)
	case *kind.MinLength:
		return fmt.Sprintf("must be at least %d characters long; got %d", k.Want, k.Got)
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %d characters long; got %d", k.Want, k.Got)
	case *kind.Pattern:
		return "must match the pattern " + k.Want + "; got " + describe(got)
	case *kind.MinItems:
		return fmt.Sprintf("must have at least %d items; got %d", k.Want, k.Got)
	case *kind.MaxItems:
		return fmt.Sprintf("must have at most %d items; got %d", k.Want, k.Got)
	case *kind.OneOf:
		return "must match exactly one of the allowed forms; it matches several"
	}
	return k.LocalizedString(printer)
}

// typeWords renders JSON type names as "a string or null".
func typeWords(want []string) string {
	var parts []string
	for _, t := range []string{"object", "array", "string", "integer", "number", "boolean", "null"} {
		if !slices.Contains(want, t) || t == "integer" && slices.Contains(want, "number") {
			continue
		}
		switch t {
		case "null":
			parts = append(parts, t)
		case "object", "array", "integer":
			parts = append(parts, "an "+t)
		default:
			parts = append(parts, "a "+t)
		}
	}
	return strings.Join(parts, " or ")
}

// describe renders a value for a message: scalars as JSON (cut at 40
// characters), containers by kind.
func describe(v any) string {
	switch v := v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return text.Clip(strconv.Quote(v), 40)
	case nil:
		return "null"
	}
	return text.Clip(fmt.Sprint(v), 40)
}

func ratText(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// locate follows an instance location into v: the path (telling array
// indexes from keys) and the value there.
func locate(v any, loc []string) ([]seg, any) {
	path := make([]seg, 0, len(loc))
	for _, tok := range loc {
		switch c := v.(type) {
		case []any:
			i, _ := strconv.Atoi(tok)
			path = append(path, seg{idx: i})
			if i >= 0 && i < len(c) {
				v = c[i]
			}
		case map[string]any:
			path = append(path, seg{key: tok, idx: -1})
			v = c[tok]
		default:
			path = append(path, seg{key: tok, idx: -1})
		}
	}
	return path, v
}

func fieldPath(path []seg) string {
	var b strings.Builder
	for i, s := range path {
		if s.idx >= 0 {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.idx))
			b.WriteByte(']')
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.key)
	}
	return b.String()
}

// positions maps the path of every value in data to the offsets where it
// starts and ends, to list problems in the order of the answer.
func positions(data []byte) map[string][2]int64 {
	pos := map[string][2]int64{}
	dec := json.NewDecoder(bytes.NewReader(data))
	var path []seg
	var value func() bool
	value = func() bool {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch tok {
		case json.Delim('{'):
			for dec.More() {
				k, err := dec.Token()
				key, ok := k.(string)
				if err != nil || !ok {
					return false
				}
				path = append(path, seg{key: key, idx: -1})
				ok = value()
				path = path[:len(path)-1]
				if !ok {
					return false
				}
			}
			if _, err := dec.Token(); err != nil {
				return false
			}
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				path = append(path, seg{idx: i})
				ok := value()
				path = path[:len(path)-1]
				if !ok {
					return false
				}
			}
			if _, err := dec.Token(); err != nil {
				return false
			}
		}
		pos[fieldPath(path)] = [2]int64{start, dec.InputOffset()}
		return true
	}
	value()
	return pos
}

// position returns the offsets of path, or of its nearest ancestor found
// (a renamed field is not in the text under its new name).
func position(pos map[string][2]int64, path []seg) [2]int64 {
	for n := len(path); n >= 0; n-- {
		if p, ok := pos[fieldPath(path[:n])]; ok {
			return p
		}
	}
	return [2]int64{}
}
