package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
)

// checkAnswer checks a resume of thread t before anything runs: the
// questions it answers are pending and each value fits the type the node
// asked for (422 with the schema's message otherwise). One value answers
// the one question pending (in.Interrupt is set to its id, so a run that
// comes too late is refused, not applied to a later question). The
// LangGraph form {"<interrupt id>": value, …} answers the questions it
// names, any subset of those pending; an id that is not pending is
// refused. A resume answers the questions pending now, not ones a
// running run may ask later. It returns the head it checked the answer
// on (nil for none).
func (s *Server) checkAnswer(ctx context.Context, t *Thread, in *graph.JSONInput) (*checkpoint.Checkpoint, error) {
	head, err := s.head(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	return head, answerFits(t, head, in)
}

// answerFits is checkAnswer on head, the thread's head (nil for none).
func answerFits(t *Thread, head *checkpoint.Checkpoint, in *graph.JSONInput) error {
	var pending []checkpoint.Interrupt
	if head != nil {
		pending = head.Pending()
	}
	find := func(id string) *checkpoint.Interrupt {
		for i := range pending {
			if pending[i].ID == id {
				return &pending[i]
			}
		}
		return nil
	}
	if answers, ok := idKeyed(in.Resume); ok {
		for _, id := range sortedKeys(answers) {
			p := find(id)
			if p == nil {
				return fmt.Errorf("resume thread %s: interrupt %s is not pending: %w", publicID(t.ID), id, graph.ErrNoInterrupt)
			}
			if err := graph.CheckAnswer(p, answers[id]); err != nil {
				return fmt.Errorf("interrupt %s: %w", id, err)
			}
		}
		if len(pending) > 1 {
			// Several questions: the graph answers those named and
			// keeps the rest pending.
			in.Resume, in.Answers = nil, answers
			return nil
		}
		in.Resume = answers[pending[0].ID]
	}
	if len(pending) == 0 {
		return fmt.Errorf("resume thread %s: %w", publicID(t.ID), graph.ErrNoInterrupt)
	}
	if in.Interrupt != "" && find(in.Interrupt) == nil {
		return fmt.Errorf("resume thread %s: interrupt %s is not pending: %w", publicID(t.ID), in.Interrupt, graph.ErrNoInterrupt)
	}
	if in.Interrupt == "" {
		if len(pending) > 1 {
			ids := make([]string, len(pending))
			for i, p := range pending {
				ids[i] = p.ID
			}
			return errorf(http.StatusUnprocessableEntity, "invalid_input", "thread %s waits on %d questions: answer them by id, as {\"<id>\": value, …} (pending: %s)", publicID(t.ID), len(pending), strings.Join(ids, ", "))
		}
		in.Interrupt = pending[0].ID
	}
	return graph.CheckAnswer(find(in.Interrupt), in.Resume)
}

// idKeyed reads LangGraph's id-keyed resume, {"<interrupt id>": value,
// …}: an object whose every key is an interrupt id (a UUID).
func idKeyed(resume json.RawMessage) (map[string]json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(resume, &m) != nil || len(m) == 0 {
		return nil, false
	}
	for k := range m {
		if _, err := uuid.Parse(k); err != nil || len(k) != 36 {
			return nil, false
		}
	}
	return m, true
}
