// Package tool defines the tools a model can call: a name, a description, a
// JSON schema for the arguments generated from a Go struct, a kind (Read or
// Write) and a call. Tools live in a Registry under domains and packs; a
// per-run View, kept in graph state, says which of them the model sees, and
// the context_tools_add / context_tools_remove tools let the model change
// it. Write tools need a person's confirmation unless a Policy lets
// them run; this package provides the request and answer types, and the
// agent package does the interrupt.
//
// Arguments are checked before a tool runs, with the tolerance and the
// schema rules of package contract (required fields are those without
// omitempty; enums from `jsonschema:"enum=a,enum=b"`), and a bad call gets an error that
// names the field, for the model to correct:
//
//	invalid arguments for tool place: field day: must be an integer; got "3"
package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/loomkit/loom/contract"
	"github.com/loomkit/loom/internal/text"
	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/schema"
)

// Kind says whether a tool only reads or also changes something.
type Kind string

// The kinds of tools.
const (
	// Read tools run as soon as the model calls them.
	Read Kind = "read"
	// Write tools change the world and need confirmation (see Policy).
	Write Kind = "write"
)

// Sentinel errors that callers branch on.
var (
	// ErrInvalidArgs means the model's arguments do not fit the tool's
	// schema; the error is an *ArgsError whose text is for the model.
	ErrInvalidArgs = errors.New("invalid tool arguments")
	// ErrUnknown means no tool has that name.
	ErrUnknown = errors.New("unknown tool")
	// ErrNotVisible means the tool exists but is not in the run's view.
	ErrNotVisible = errors.New("tool not available")
	// ErrDuplicate means a tool with that name is already registered.
	ErrDuplicate = errors.New("tool already registered")
	// ErrNoView means a context tool ran without a View in its context
	// (see WithView).
	ErrNoView = errors.New("no tool view in context")
)

// ArgsError reports arguments that do not fit a tool's schema.
// errors.Is(err, ErrInvalidArgs) is true, and the contract error is
// wrapped (contract.ErrSyntax, contract.ErrInvalid, ...).
type ArgsError struct {
	Tool string
	Err  error
}

// Error names the tool and every problem, for the model.
func (e *ArgsError) Error() string {
	msg := e.Err.Error()
	if strings.Contains(msg, "\n") {
		return "invalid arguments for tool " + e.Tool + ":\n" + msg
	}
	return "invalid arguments for tool " + e.Tool + ": " + msg
}

// Is reports whether target is ErrInvalidArgs.
func (e *ArgsError) Is(target error) bool { return target == ErrInvalidArgs }

// Unwrap returns the contract error.
func (e *ArgsError) Unwrap() error { return e.Err }

// Definition is what a model request carries for a tool: llm.Tool.
type Definition = llm.Tool

// Tool is one callable tool. The zero Tool is not usable; make one with New
// or NewRaw. A Tool is immutable and safe for concurrent use.
type Tool struct {
	name        string
	description string
	kind        Kind
	schema      *schema.Schema
	call        func(ctx context.Context, args json.RawMessage) (any, error)
	summary     func(ctx context.Context, args json.RawMessage) string
}

// Option configures a tool.
type Option func(*Tool)

// WithSummary sets how a call is described to the person asked to confirm
// it, from the decoded arguments; ctx is the run's, so a summary may read
// what the call would change. Without it the summary lists the arguments
// (see Tool.Summary).
func WithSummary[Args any](f func(ctx context.Context, args Args) string) Option {
	return func(t *Tool) {
		t.summary = func(ctx context.Context, raw json.RawMessage) string {
			var a Args
			if err := json.Unmarshal(raw, &a); err != nil {
				return defaultSummary(t.name, raw)
			}
			return f(ctx, a)
		}
	}
}

var nameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// New makes a tool whose arguments are the JSON form of Args (a struct) and
// whose result is the JSON form of Result (a string result is used as is).
// The schema is generated from Args by invopop/jsonschema with the rules
// of package contract.
//
// New panics if name is not 1 to 64 letters, digits, '_' or '-', or if Args
// has no JSON object schema: both are programming errors, found at start-up.
func New[Args, Result any](name, description string, kind Kind, fn func(ctx context.Context, args Args) (Result, error), opts ...Option) Tool {
	s, err := schema.For[Args]()
	if err != nil {
		panic(fmt.Sprintf("tool %s: %v", name, err))
	}
	var probe map[string]any
	if json.Unmarshal(s.JSON(), &probe) != nil || probe["type"] != "object" {
		panic(fmt.Sprintf("tool %s: arguments must be a struct, got %T", name, *new(Args)))
	}
	t := Tool{
		name:        name,
		description: description,
		kind:        kind,
		schema:      s,
		// Call hands call arguments that CheckArgs has already validated.
		call: func(ctx context.Context, clean json.RawMessage) (any, error) {
			var a Args
			if err := json.Unmarshal(clean, &a); err != nil {
				return nil, &ArgsError{Tool: name, Err: err}
			}
			return fn(ctx, a)
		},
	}
	return t.init(opts)
}

// NewRaw makes a tool from a JSON schema written by hand or received from
// elsewhere (an MCP server, a config file). fn gets the arguments already
// checked against the schema, as strict JSON.
func NewRaw(name, description string, kind Kind, parameters json.RawMessage, fn func(ctx context.Context, args json.RawMessage) (any, error), opts ...Option) (Tool, error) {
	if !nameRE.MatchString(name) {
		return Tool{}, fmt.Errorf("tool %q: name must be 1 to 64 letters, digits, '_' or '-'", name)
	}
	s, err := schema.Parse(parameters)
	if err != nil {
		return Tool{}, fmt.Errorf("tool %s: %w", name, err)
	}
	t := Tool{name: name, description: description, kind: kind, schema: s, call: fn}
	return t.init(opts), nil
}

func (t Tool) init(opts []Option) Tool {
	if !nameRE.MatchString(t.name) {
		panic(fmt.Sprintf("tool %q: name must be 1 to 64 letters, digits, '_' or '-'", t.name))
	}
	if t.kind != Read && t.kind != Write {
		panic(fmt.Sprintf("tool %s: kind must be tool.Read or tool.Write, got %q", t.name, t.kind))
	}
	for _, o := range opts {
		o(&t)
	}
	return t
}

// Name returns the tool's name, as the model calls it.
func (t Tool) Name() string { return t.name }

// Description returns what the model is told the tool does.
func (t Tool) Description() string { return t.description }

// Kind returns Read or Write.
func (t Tool) Kind() Kind { return t.kind }

// Parameters returns the JSON schema of the arguments. The slice is shared:
// do not modify it.
func (t Tool) Parameters() json.RawMessage { return t.schema.JSON() }

// Definition returns the tool's definition for a model request.
func (t Tool) Definition() Definition {
	return Definition{Name: t.name, Description: t.description, Parameters: t.schema.JSON()}
}

// CheckArgs checks the model's arguments against the schema and returns
// them as strict JSON. Empty arguments count as {}. Tolerated slips (a code
// fence, trailing commas) are repaired. The error is an *ArgsError.
func (t Tool) CheckArgs(args json.RawMessage) (json.RawMessage, error) {
	text := strings.TrimSpace(string(args))
	if text == "" || text == "null" {
		text = "{}"
	}
	clean, err := contract.ExtractFor(text, t.schema, contract.WithTag(""))
	if err != nil {
		return nil, &ArgsError{Tool: t.name, Err: err}
	}
	return clean, nil
}

// Call checks the arguments and runs the tool. It returns the content of
// the tool message: a string result as is, any other result as JSON. An
// error is an *ArgsError for bad arguments, or the tool's own error wrapped
// with the tool's name; either way its text can be shown to the model.
func (t Tool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	clean, err := t.CheckArgs(args)
	if err != nil {
		return "", err
	}
	out, err := t.call(ctx, clean)
	if err != nil {
		var ae *ArgsError
		if errors.As(err, &ae) {
			return "", err
		}
		return "", fmt.Errorf("tool %s: %w", t.name, err)
	}
	return render(out)
}

func render(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "null", nil
	case string:
		return x, nil
	case []byte:
		return string(x), nil
	case json.RawMessage:
		return string(x), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encode tool result: %w", err)
	}
	return string(b), nil
}

// Summary describes a call for the person asked to confirm it: the tool's
// summariser (WithSummary) if it has one, else the tool's name and
// arguments, such as `place(task_id: 12, day: 3)`.
func (t Tool) Summary(ctx context.Context, args json.RawMessage) string {
	if t.summary != nil {
		return t.summary(ctx, args)
	}
	return defaultSummary(t.name, args)
}

func defaultSummary(name string, args json.RawMessage) string {
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('(')
	dec := json.NewDecoder(strings.NewReader(string(args)))
	if tok, err := dec.Token(); err == nil && tok == json.Delim('{') {
		for i := 0; dec.More(); i++ {
			key, err := dec.Token()
			if err != nil {
				break
			}
			var val json.RawMessage
			if err := dec.Decode(&val); err != nil {
				break
			}
			if i > 0 {
				b.WriteString(", ")
			}
			if b.Len() > 300 {
				b.WriteString("…")
				break
			}
			fmt.Fprintf(&b, "%v: %s", key, text.Clip(string(val), 80))
		}
	}
	b.WriteByte(')')
	return b.String()
}
