package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/schema"
)

// runCtx is what a node's context knows about the run it is in.
type runCtx struct {
	thread, run string
	node        string
	step        int
	emit        func(Event) bool
	ask         *askState
	// prefix is prepended to node names in a subgraph ("outer/");
	// keyBase starts StepKey (the thread, or the outer step's key).
	prefix, keyBase string
	// budgets is what Left reads; nil when the graph has none.
	budgets budgetView
	// kept is what the run keeps beside its steps; nil without a saver.
	kept *kept
}

// askState tracks a node's questions, or a fan-out branch's: the answers
// given so far, and how many the current try has consumed. A subgraph
// shares its node's askState; a fan-out branch has its own.
type askState struct {
	resumes []json.RawMessage
	asked   int
	// branch names the fan-out branch that asks ("node[2]"); "" for the
	// node itself.
	branch string
	// branches holds the answers given so far to the node's fan-out
	// branches, by branch; shared by the node and its branches.
	branches map[string][]json.RawMessage
}

type runKey struct{}

func runOf(ctx context.Context) *runCtx {
	rc, _ := ctx.Value(runKey{}).(*runCtx)
	return rc
}

// interruptError is how Ask stops a node: the questions it asked (one, or
// one per fan-out branch that asked). It never escapes the runtime.
type interruptError struct {
	asks []question
}

// question is one question of an interruptError.
type question struct {
	branch   string
	payload  json.RawMessage
	schema   json.RawMessage // what an answer must satisfy; nil: anything
	deadline time.Time
	def      json.RawMessage // the answer when the deadline passed
}

func (e *interruptError) Error() string { return "graph: node interrupted to ask a person" }

// AskOption qualifies a question asked with Ask.
type AskOption func(*question) error

// Expires gives the question a deadline and the answer it takes when the
// deadline has passed with no answer, def, which must fit the type asked
// for. An expired question is answered with def by the next Resume or
// Continue of the thread (the server sweeps its threads for them), and
// the run says so with a KindExpired event: an unanswered approval then
// takes the path its default answer leads to instead of holding the
// thread forever.
func Expires(deadline time.Time, def any) AskOption {
	return func(q *question) error {
		if deadline.IsZero() {
			return errors.New("expires: no deadline")
		}
		d, err := json.Marshal(def)
		if err != nil {
			return fmt.Errorf("expires: encode default answer: %w", err)
		}
		q.deadline, q.def = deadline.UTC(), d
		return nil
	}
}

// IsInterrupt reports whether err is the interrupt that Ask returns. A node
// that gets it from Ask must return it (wrapped or not) unchanged.
func IsInterrupt(err error) bool {
	var ie *interruptError
	return errors.As(err, &ie)
}

// Ask stops the run to ask a person, and returns their answer once the run
// is resumed.
//
// The first time a node calls Ask, Ask returns an interrupt error; the node
// must return it, with the state it wants kept. The runtime checkpoints that
// state with the question (payload, as JSON) and ends the run with status
// interrupted. Resume(value) writes the answer to the thread and runs the
// node again, from its top, on the state it returned with the interrupt;
// this time Ask returns the value, decoded into T.
//
// The re-run contract: everything a node does before Ask runs again on
// resume. A node that must not repeat a side effect either does it after
// Ask, or records in the state it returns with the interrupt that the
// effect is done, and checks that record first. A node may call Ask several
// times; the k-th call returns the k-th answer. For effects that must
// survive a crash between a node's end and its checkpoint, use StepKey as
// an idempotency key.
//
// Rejection is a value: make T carry it (e.g. struct{ Accept bool }).
//
// Fan-out branches (Map, Parallel) may each ask: the node stops when
// every branch has finished or asked, with all the questions pending,
// each with its own id; it runs again once every one is answered, and
// each branch's k-th Ask returns that branch's k-th answer. Expires gives
// a question a deadline and a default answer.
func Ask[T any](ctx context.Context, payload any, opts ...AskOption) (T, error) {
	var zero T
	rc := runOf(ctx)
	if rc == nil {
		return zero, errors.New("graph.Ask called outside a graph run")
	}
	if rc.ask == nil {
		return zero, fmt.Errorf("graph.Ask in %s: no question can be asked here", rc.node)
	}
	i := rc.ask.asked
	rc.ask.asked++
	if i < len(rc.ask.resumes) {
		var v T
		if err := json.Unmarshal(rc.ask.resumes[i], &v); err != nil {
			return zero, fmt.Errorf("graph.Ask in %s: decode answer %d as %T: %w", rc.node, i+1, v, err)
		}
		return v, nil
	}
	p, err := json.Marshal(payload)
	if err != nil {
		return zero, fmt.Errorf("graph.Ask in %s: encode question: %w", rc.node, err)
	}
	q := question{branch: rc.ask.branch, payload: p, schema: answerSchema(reflect.TypeFor[T]())}
	for _, o := range opts {
		if err := o(&q); err != nil {
			return zero, fmt.Errorf("graph.Ask in %s: %w", rc.node, err)
		}
	}
	if q.def != nil {
		var v T
		if err := json.Unmarshal(q.def, &v); err != nil {
			return zero, fmt.Errorf("graph.Ask in %s: default answer does not decode as %T: %w", rc.node, v, err)
		}
		if err := CheckAnswer(&checkpoint.Interrupt{Schema: q.schema}, q.def); err != nil {
			return zero, fmt.Errorf("graph.Ask in %s: default answer: %w", rc.node, err)
		}
	}
	return zero, &interruptError{asks: []question{q}}
}

var answerSchemas sync.Map // reflect.Type → json.RawMessage (nil: any value)

// answerSchema is the JSON schema of the answers a node asking for t
// accepts: t's schema with no field required, since a field left out of
// an answer decodes to its zero value. Types without a schema (any,
// json.RawMessage) accept any value.
func answerSchema(t reflect.Type) json.RawMessage {
	if v, ok := answerSchemas.Load(t); ok {
		return v.(json.RawMessage)
	}
	var raw json.RawMessage
	if t.Kind() != reflect.Interface && t != reflect.TypeFor[json.RawMessage]() {
		if s, err := schema.Of(t); err == nil {
			raw = s.Lenient()
		}
	}
	v, _ := answerSchemas.LoadOrStore(t, raw)
	return v.(json.RawMessage)
}

// CheckAnswer reports whether value fits what interrupt i asked for: an
// error wrapping ErrInvalidAnswer, with the schema's message, when it
// does not.
func CheckAnswer(i *checkpoint.Interrupt, value json.RawMessage) error {
	if i == nil || len(i.Schema) == 0 {
		return nil
	}
	s, err := answerValidator(i.Schema)
	if err != nil {
		return nil // a schema this build cannot read checks nothing
	}
	if err := s.Validate(value); err != nil {
		return fmt.Errorf("%w: %v (want %s)", ErrInvalidAnswer, err, oneLine(s.Format()))
	}
	return nil
}

var validators sync.Map // schema text → *schema.Schema

func answerValidator(raw json.RawMessage) (*schema.Schema, error) {
	if v, ok := validators.Load(string(raw)); ok {
		return v.(*schema.Schema), nil
	}
	s, err := schema.Parse(raw)
	if err != nil {
		return nil, err
	}
	v, _ := validators.LoadOrStore(string(raw), s)
	return v.(*schema.Schema), nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// StepKey returns a key that is the same every time this step of this
// thread runs — after a crash before its checkpoint, or again on resume —
// and different for every other step. Use it as an idempotency key for
// side effects outside Loom (a payment, an email, a row insert).
func StepKey(ctx context.Context) string {
	rc := runOf(ctx)
	if rc == nil {
		return ""
	}
	base := rc.keyBase
	if base == "" {
		base = rc.thread
	}
	return base + "/" + strconv.Itoa(rc.step) + "/" + rc.node
}
