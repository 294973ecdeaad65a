package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"

	"github.com/loomkit/loom/schema"
)

// DefaultTag is the tag of the decision block looked for by default:
// <DECISION>{…}</DECISION>.
const DefaultTag = "DECISION"

// DefaultRetries is how many times Ask asks again after the first answer.
const DefaultRetries = 3

// Option configures Decode, Extract, Ask and Splitter.
type Option func(*options)

type options struct {
	tag      string
	retries  int
	logger   *slog.Logger
	feedback func(err error, format string) string
}

var defaults = options{tag: DefaultTag, retries: DefaultRetries}

func buildOptions(opts []Option) *options {
	if len(opts) == 0 {
		return &defaults
	}
	o := defaults
	for _, opt := range opts {
		opt(&o)
	}
	return &o
}

// WithTag sets the tag of the decision block (default DECISION); the empty
// tag turns tag blocks off.
func WithTag(tag string) Option {
	return func(o *options) { o.tag = tag }
}

// WithRetries sets how many times Ask asks again after the first answer
// (default 3; negative counts as 0).
func WithRetries(n int) Option {
	return func(o *options) { o.retries = max(n, 0) }
}

// WithLogger sets the logger for rejected answers (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// WithFeedback replaces the correction message built from a decoding error
// and the expected format (see Feedback for the default).
func WithFeedback(f func(err error, format string) string) Option {
	return func(o *options) { o.feedback = f }
}

var extractors = sync.Pool{New: func() any { return new(extractor) }}

// Decode finds the JSON object in a model's answer, validates it against
// the schema of T (a struct or a map: the answer is one JSON object) and
// decodes it with encoding/json. See the package documentation for where
// the object is looked for, what is tolerated and the schema rules.
//
// The error is ErrNoJSON, a *SyntaxError (ErrSyntax) or a
// *ValidationError (ErrInvalid); its text is meant to be shown to the
// model, as Feedback does.
func Decode[T any](text string, opts ...Option) (T, error) {
	var v T
	s, err := schema.For[T]()
	if err != nil {
		return v, err
	}
	return v, decodeInto(text, s, buildOptions(opts), &v)
}

func decodeInto(text string, s *schema.Schema, o *options, v any) error {
	x := extractors.Get().(*extractor)
	defer extractors.Put(x) // c.obj is x's scratch
	c := x.find(text, o.tag, s)
	if c.err != nil {
		return c.err
	}
	if err := json.Unmarshal(c.obj, v); err != nil {
		reflect.ValueOf(v).Elem().SetZero()
		return unmarshalError(err)
	}
	return nil
}

// unmarshalError turns what json.Unmarshal still rejects after validation
// (a number too large for its Go type, a custom UnmarshalJSON) into a
// problem the model can act on.
func unmarshalError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &ValidationError{Problems: []Problem{{
			Field:   te.Field,
			Message: fmt.Sprintf("cannot hold %s (must fit %s)", te.Value, goTypeWords(te.Type)),
		}}}
	}
	return &ValidationError{Problems: []Problem{{Message: err.Error()}}}
}

func goTypeWords(t reflect.Type) string {
	if t == nil {
		return "the expected type"
	}
	switch t.Kind() {
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int,
		reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint:
		return "a " + t.Kind().String()
	}
	return t.String()
}

// Feedback renders the correction message for err: what was wrong with the
// answer and the format expected, for the model's next turn. Graph nodes
// that run their own bounded correction loop (rather than Ask) use it to
// build the message they append to the history.
func Feedback[T any](err error, opts ...Option) string {
	s, serr := schema.For[T]()
	if serr != nil {
		return err.Error()
	}
	return feedback(err, s, buildOptions(opts))
}

func feedback(err error, s *schema.Schema, o *options) string {
	if o.feedback != nil {
		return o.feedback(err, s.Format())
	}
	var b strings.Builder
	var ve *ValidationError
	switch {
	case errors.As(err, &ve):
		b.WriteString("Your previous answer could not be used:\n")
		for _, p := range ve.Problems {
			b.WriteString("- ")
			b.WriteString(p.String())
			b.WriteByte('\n')
		}
	case errors.Is(err, ErrSyntax):
		b.WriteString("Your previous answer is not valid JSON: ")
		b.WriteString(err.Error())
		b.WriteString("\nUse double quotes around field names and strings, and escape quotes inside strings.\n")
	case errors.Is(err, ErrNoJSON):
		b.WriteString("Your previous answer did not contain a JSON object.\n")
	default:
		b.WriteString("Your previous answer could not be used: ")
		b.WriteString(err.Error())
		b.WriteByte('\n')
	}
	b.WriteString("Answer again with one JSON object")
	if o.tag != "" {
		fmt.Fprintf(&b, " inside <%s></%s>", o.tag, o.tag)
	}
	b.WriteString(" in this format (fields marked ? are optional):\n")
	b.WriteString(s.Format())
	return b.String()
}

// The errors of Decode, Ask and Splitter other than ErrNoJSON are those of
// package schema.
var (
	// ErrSyntax: a JSON object was found but it is not valid JSON, even
	// after the tolerated repairs. The error is a *SyntaxError.
	ErrSyntax = schema.ErrSyntax
	// ErrInvalid: the JSON is valid but does not match the schema. The error
	// is a *ValidationError.
	ErrInvalid = schema.ErrInvalid
	// ErrNoJSON means the answer contains no JSON object at all.
	ErrNoJSON = errors.New("no JSON object found in the answer")
)

type (
	// SyntaxError is a JSON syntax error at a byte offset of the answer.
	SyntaxError = schema.SyntaxError
	// ValidationError lists every way the answer fails its schema.
	ValidationError = schema.ValidationError
	// Problem is one way the answer fails its schema.
	Problem = schema.Problem
)
