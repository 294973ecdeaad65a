// Package schema compiles JSON schemas, from Go types or from documents,
// and checks JSON values against them with messages a model or a person
// can act on.
//
// The schema of a Go type is reflected by github.com/invopop/jsonschema
// and is the one shown to a model, so what is validated is what was asked
// for. It is compiled once per type by github.com/santhosh-tekuri/jsonschema
// (draft 2020-12 unless the document says otherwise).
//
//   - A field is required unless its json tag has omitempty or omitzero;
//     `jsonschema:"required"` makes an omitempty field required as well.
//   - Keywords come from the one tag invopop reads:
//     `jsonschema:"enum=a,enum=b,description=…"` (minimum, maximum,
//     minLength, maxLength, pattern, minItems, maxItems, nullable too). A
//     comma inside a value is written \\, in the Go tag.
//   - JSON null is accepted for an optional field, as if it were absent.
//   - Unknown fields are ignored, as encoding/json ignores them (the
//     additionalProperties: false that invopop writes is shown to the model
//     but not enforced); a missing required field names the unknown fields
//     given, to catch typos.
//   - Field names match exactly or, failing that, case-insensitively, as in
//     encoding/json.
//
// Problems are listed in the order of the value, up to ten:
// `field day: must be an integer; got "3"`.
//
// Repair forgives the slips that cannot change what a document means:
// trailing commas before } or ], // and /* */ comments, and raw control
// characters (a real newline) inside strings. Nothing else is guessed:
// single quotes, bare keys and Python literals are syntax errors, reported
// with their offset.
package schema
