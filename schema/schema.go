package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/invopop/jsonschema"
	jsv "github.com/santhosh-tekuri/jsonschema/v6"
)

// ErrSchema is returned when a Go type or a JSON schema cannot be turned
// into a validator.
var ErrSchema = errors.New("unusable JSON schema")

// Schema is a compiled JSON schema: the JSON shown to a model, a compact
// format for correction prompts, and a validator
// (github.com/santhosh-tekuri/jsonschema). A Schema is immutable and safe
// for concurrent use.
type Schema struct {
	v      *jsv.Schema
	raw    json.RawMessage
	format string
}

// JSON returns the JSON schema document. The slice is shared: do not modify
// it.
func (s *Schema) JSON() json.RawMessage { return s.raw }

// Format returns a compact, human-readable description of the expected JSON
// (fields, types, enums, descriptions as comments) for prompts and
// correction feedback. Optional fields are marked with "?".
func (s *Schema) Format() string { return s.format }

// Validate checks that data is one JSON value that satisfies the schema. It
// tolerates the slips Repair repairs inside the value (trailing commas,
// comments, raw control characters in strings) but not surrounding prose.
// The error is a *SyntaxError (errors.Is ErrSyntax) or a *ValidationError
// (errors.Is ErrInvalid).
func (s *Schema) Validate(data []byte) error {
	norm := normalise(nil, string(data), nil)
	v, _, err := s.check(norm)
	switch {
	case err == errBadSyntax:
		return syntaxError(string(data), 0)
	case err != nil:
		return s.problems(norm, v, err)
	}
	return nil
}

// Check validates data, strict JSON as Repair writes it, with the
// tolerances of Validate. It returns the value with field names in the
// schema's case (data itself when none needed renaming), ErrSyntax when
// data is not JSON, or a *ValidationError. Decoders that look for a value
// among several candidates use it.
func (s *Schema) Check(data []byte) (json.RawMessage, error) {
	v, renamed, err := s.check(data)
	switch {
	case err == errBadSyntax:
		return nil, ErrSyntax
	case err != nil:
		return nil, s.problems(data, v, err)
	case !renamed:
		return data, nil
	}
	// Write the value again with the schema's field names, decoding
	// numbers as json.Number so that every digit is kept.
	n, err := jsv.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("decode checked JSON: %w", err)
	}
	var w walker
	w.walk(n, s.v)
	return json.Marshal(n)
}

var schemaCache sync.Map // reflect.Type → *Schema or error

// For returns the compiled schema of T. Schemas are cached per type, so
// after the first call this is a map lookup.
func For[T any]() (*Schema, error) {
	return Of(reflect.TypeFor[T]())
}

// Of returns the compiled schema of type t (see For).
func Of(t reflect.Type) (*Schema, error) {
	v, ok := schemaCache.Load(t)
	if !ok {
		s, err := reflectSchema(t)
		if err != nil {
			v, _ = schemaCache.LoadOrStore(t, err)
		} else {
			v, _ = schemaCache.LoadOrStore(t, s)
		}
	}
	if s, ok := v.(*Schema); ok {
		return s, nil
	}
	return nil, v.(error)
}

// Parse compiles a JSON schema document written by hand (or received
// from elsewhere, such as an MCP server). References inside the document
// ($ref to "#/$defs/...", anchors) are resolved; references to other
// documents are an error, as nothing is loaded from files or the network.
func Parse(raw json.RawMessage) (*Schema, error) {
	var js jsonschema.Schema
	if err := json.Unmarshal(raw, &js); err != nil {
		return nil, fmt.Errorf("%w: parse JSON schema: %v", ErrSchema, err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	return newSchema(&js, compact.Bytes())
}

// newSchema compiles raw, the JSON form of js, for validation.
func newSchema(js *jsonschema.Schema, raw json.RawMessage) (*Schema, error) {
	doc, err := jsv.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	allowAdditional(doc)
	const url = "loom:///schema.json"
	c := jsv.NewCompiler()
	c.DefaultDraft(jsv.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	v, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	return &Schema{v: v, raw: raw, format: formatSchema(js)}, nil
}

// noLoader refuses to load referenced documents: a schema from elsewhere
// must not make Loom read files or the network.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("referenced schema %s is not loaded: only references inside the document are supported", url)
}

// allowAdditional removes "additionalProperties": false from the schema
// that is compiled (not from the one shown to the model): unknown fields are
// ignored, as encoding/json ignores them, and a missing required field
// names them instead.
func allowAdditional(v any) {
	eachSchema(v, func(m map[string]any) {
		if m["additionalProperties"] == false {
			delete(m, "additionalProperties")
		}
	})
}

// eachSchema calls fn on every object of a schema document, skipping the
// values of enum, const, default and examples, which are not schemas.
func eachSchema(v any, fn func(map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		fn(v)
		for k, e := range v {
			switch k {
			case "enum", "const", "default", "examples":
				continue
			}
			eachSchema(e, fn)
		}
	case []any:
		for _, e := range v {
			eachSchema(e, fn)
		}
	}
}

// Lenient returns the schema's document with no field required: the
// values that decode into the type, a field left out being its zero
// value (what an interrupt's answer must satisfy, see graph.Ask).
func (s *Schema) Lenient() json.RawMessage {
	var doc any
	if json.Unmarshal(s.raw, &doc) != nil {
		return s.raw
	}
	eachSchema(doc, func(m map[string]any) { delete(m, "required") })
	raw, err := json.Marshal(doc)
	if err != nil {
		return s.raw
	}
	return raw
}

func reflectSchema(t reflect.Type) (s *Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("%w: reflect %s: %v", ErrSchema, t, r)
		}
	}()
	recursive := isRecursive(t, map[reflect.Type]int{})
	r := jsonschema.Reflector{
		Anonymous:      true,
		ExpandedStruct: !recursive,
		DoNotReference: !recursive,
	}
	js := r.ReflectFromType(t)
	if recursive {
		// Inline the root definition, keeping $defs for the inner references,
		// so the document is an object schema as tool parameters must be.
		if name, ok := refName(js.Ref); ok && js.Definitions[name] != nil {
			root := *js.Definitions[name]
			root.Definitions = js.Definitions
			js = &root
		}
	}
	js.Version = ""
	js.ID = ""
	raw, err := json.Marshal(js)
	if err != nil {
		return nil, fmt.Errorf("%w: marshal schema of %s: %v", ErrSchema, t, err)
	}
	s, err = newSchema(js, raw)
	if err != nil {
		return nil, fmt.Errorf("compile schema of %s: %w", t, err)
	}
	return s, nil
}

// isRecursive reports whether t refers to itself through struct fields,
// slices, arrays, maps or pointers (invopop would recurse forever inlining
// such a type, so it gets $defs instead).
func isRecursive(t reflect.Type, state map[reflect.Type]int) bool {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return false
	}
	switch state[t] {
	case 1:
		return true
	case 2:
		return false
	}
	state[t] = 1
	for i := range t.NumField() {
		if isRecursive(t.Field(i).Type, state) {
			return true
		}
	}
	state[t] = 2
	return false
}

func deref(root, s *jsonschema.Schema) *jsonschema.Schema {
	for i := 0; s != nil && s.Ref != "" && i < 32; i++ {
		name, ok := refName(s.Ref)
		if !ok {
			return s
		}
		s = root.Definitions[name]
	}
	return s
}

func refName(ref string) (string, bool) {
	for _, p := range []string{"#/$defs/", "#/definitions/"} {
		if name, ok := strings.CutPrefix(ref, p); ok {
			return name, true
		}
	}
	return "", false
}

// formatSchema renders the compact format shown to models.
func formatSchema(js *jsonschema.Schema) string {
	f := formatter{root: js, seen: map[*jsonschema.Schema]bool{}}
	f.write(js, 0)
	return f.b.String()
}

type formatter struct {
	root *jsonschema.Schema
	b    strings.Builder
	seen map[*jsonschema.Schema]bool
}

func (f *formatter) write(s *jsonschema.Schema, indent int) {
	b := &f.b
	s = deref(f.root, s)
	if s == nil {
		b.WriteString("any")
		return
	}
	if alts := append(s.AnyOf[:len(s.AnyOf):len(s.AnyOf)], s.OneOf...); len(alts) > 0 && s.Type == "" {
		nullable, n := false, 0
		for _, a := range alts {
			if a := deref(f.root, a); a != nil && a.Type == "null" {
				nullable = true
				continue
			}
			if n > 0 {
				b.WriteString(" | ")
			}
			n++
			f.write(a, indent)
		}
		if nullable {
			b.WriteString(" | null")
		}
		return
	}
	if len(s.Enum) > 0 {
		for i, e := range s.Enum {
			if i > 0 {
				b.WriteString(" | ")
			}
			if str, ok := e.(string); ok {
				q, _ := json.Marshal(str)
				b.Write(q)
			} else {
				fmt.Fprint(b, e)
			}
		}
		return
	}
	if f.seen[s] {
		b.WriteString("{…same as above…}")
		return
	}
	ap := s.AdditionalProperties
	switch {
	case s.Properties != nil && s.Properties.Len() > 0:
		f.seen[s] = true
		b.WriteString("{\n")
		i := 0
		for pair := s.Properties.Oldest(); pair != nil; pair = pair.Next() {
			pad(b, indent+1)
			q, _ := json.Marshal(pair.Key)
			b.Write(q)
			if !slices.Contains(s.Required, pair.Key) {
				b.WriteByte('?')
			}
			b.WriteString(": ")
			f.write(pair.Value, indent+1)
			if i++; i < s.Properties.Len() {
				b.WriteByte(',')
			}
			desc := ""
			if pair.Value != nil {
				desc = pair.Value.Description
			}
			if t := deref(f.root, pair.Value); desc == "" && t != nil {
				desc = t.Description
			}
			if d := oneLine(desc); d != "" {
				b.WriteString("  // ")
				b.WriteString(d)
			}
			b.WriteByte('\n')
		}
		pad(b, indent)
		b.WriteByte('}')
		delete(f.seen, s)
	case s.Type == "object" && ap != nil && ap != jsonschema.TrueSchema && ap != jsonschema.FalseSchema:
		b.WriteString(`{"<key>": `)
		f.write(ap, indent)
		b.WriteString(", …}")
	case s.Type == "object":
		b.WriteString("object")
	case s.Type == "array":
		b.WriteByte('[')
		f.write(s.Items, indent)
		b.WriteString(", …]")
	case s.Type == "integer" || s.Type == "number":
		b.WriteString(s.Type)
		writeRange(b, s)
	case s.Type == "string":
		b.WriteString("string")
	case s.Type == "boolean":
		b.WriteString("true | false")
	case s.Type == "null":
		b.WriteString("null")
	default:
		b.WriteString("any")
	}
}

func writeRange(b *strings.Builder, s *jsonschema.Schema) {
	var parts []string
	if s.ExclusiveMinimum != "" {
		parts = append(parts, "> "+string(s.ExclusiveMinimum))
	} else if s.Minimum != "" {
		parts = append(parts, ">= "+string(s.Minimum))
	}
	if s.ExclusiveMaximum != "" {
		parts = append(parts, "< "+string(s.ExclusiveMaximum))
	} else if s.Maximum != "" {
		parts = append(parts, "<= "+string(s.Maximum))
	}
	if len(parts) > 0 {
		b.WriteString(" (" + strings.Join(parts, ", ") + ")")
	}
}

func pad(b *strings.Builder, n int) {
	for range n {
		b.WriteString("  ")
	}
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}
