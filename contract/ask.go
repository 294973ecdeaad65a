package contract

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/schema"
)

// Asker asks the model once and returns its answer. feedback is empty on the
// first call; on later calls it is the correction message for the previous
// answer, which the Asker adds to the conversation (after the previous
// answer) before asking again.
type Asker func(ctx context.Context, feedback string) (string, error)

// Chat is the Asker of a conversation with model: it sends *msgs, and adds
// the feedback before and the answer after each question to *msgs, so that
// whoever checks the decoded value further can add a message of its own
// and ask again in the same conversation.
func Chat(model llm.Model, msgs *[]llm.Message, opts ...llm.Option) Asker {
	return func(ctx context.Context, feedback string) (string, error) {
		if feedback != "" {
			*msgs = append(*msgs, llm.User(feedback))
		}
		resp, err := model.Generate(ctx, *msgs, opts...)
		if err != nil {
			return "", err
		}
		*msgs = append(*msgs, llm.Assistant(resp.Message.Content))
		return resp.Message.Content, nil
	}
}

// Attempt is one rejected answer.
type Attempt struct {
	// Answer is the model's raw answer.
	Answer string
	// Err is why it was rejected: ErrNoJSON, a *SyntaxError or a
	// *ValidationError.
	Err error
}

// MarshalJSON renders the attempt with its error as text, so an Error can
// be logged or kept in graph state.
func (a Attempt) MarshalJSON() ([]byte, error) {
	msg := ""
	if a.Err != nil {
		msg = a.Err.Error()
	}
	return json.Marshal(struct {
		Answer string `json:"answer"`
		Error  string `json:"error,omitempty"`
	}{a.Answer, msg})
}

// Error is returned by Ask when no answer could be used within the bound.
// It carries every answer and why each was rejected.
type Error struct {
	Attempts []Attempt `json:"attempts"`
}

// Error names the number of attempts and the last problem.
func (e *Error) Error() string {
	if len(e.Attempts) == 0 {
		return "contract: no answer"
	}
	return fmt.Sprintf("contract: no usable answer after %d attempts; last: %v",
		len(e.Attempts), e.Attempts[len(e.Attempts)-1].Err)
}

// Unwrap returns the error of every attempt, so errors.Is(err, ErrInvalid)
// tells whether any answer was valid JSON of the wrong shape.
func (e *Error) Unwrap() []error {
	errs := make([]error, len(e.Attempts))
	for i, a := range e.Attempts {
		errs[i] = a.Err
	}
	return errs
}

// Ask runs the correction loop: it asks, decodes the answer into T with
// Decode and, while the answer cannot be used, asks again with feedback
// (the problems and the expected format, see Feedback), at most
// WithRetries times (default 3, so four answers in all). When every answer
// fails it returns a *Error. An error from ask itself or from ctx ends the
// loop at once and is returned wrapped.
func Ask[T any](ctx context.Context, ask Asker, opts ...Option) (T, error) {
	var zero T
	s, err := schema.For[T]()
	if err != nil {
		return zero, err
	}
	o := buildOptions(opts)
	log := o.logger
	if log == nil {
		log = slog.Default()
	}
	var fail Error
	fb := ""
	for attempt := 1; attempt <= o.retries+1; attempt++ {
		if err := ctx.Err(); err != nil {
			return zero, fmt.Errorf("contract ask attempt %d: %w", attempt, err)
		}
		answer, err := ask(ctx, fb)
		if err != nil {
			return zero, fmt.Errorf("contract ask attempt %d: %w", attempt, err)
		}
		var v T
		derr := decodeInto(answer, s, o, &v)
		if derr == nil {
			return v, nil
		}
		fail.Attempts = append(fail.Attempts, Attempt{Answer: answer, Err: derr})
		log.DebugContext(ctx, "contract: answer rejected", "attempt", attempt, "err", derr)
		fb = feedback(derr, s, o)
	}
	log.DebugContext(ctx, "contract: no usable answer", "attempts", len(fail.Attempts))
	return zero, &fail
}
