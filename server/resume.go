package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
)

// checkAnswer checks a resume of thread t before anything runs: the
// question it answers is pending (in.Interrupt is set to its id, so a run
// that comes too late is refused, not applied to a later question) and
// the value fits the type the node asked for (422 with the schema's
// message otherwise). The LangGraph form {"<interrupt id>": value} names
// the interrupt; an id that is not pending is refused. A resume answers
// the question pending now, not one a running run may ask later.
func (s *Server) checkAnswer(ctx context.Context, t *Thread, in *graph.JSONInput) error {
	head, err := s.head(ctx, t.ID)
	if err != nil {
		return err
	}
	var pending *checkpoint.Interrupt
	if head != nil {
		pending = head.Interrupt
	}
	if ids, value, ok := idKeyed(in.Resume); ok {
		if pending == nil || len(ids) != 1 || ids[0] != pending.ID {
			return fmt.Errorf("resume thread %s: interrupt %s is not pending: %w", t.ID, strings.Join(ids, ", "), graph.ErrNoInterrupt)
		}
		in.Resume = value
	}
	if pending == nil {
		return fmt.Errorf("resume thread %s: %w", publicID(t.ID), graph.ErrNoInterrupt)
	}
	if in.Interrupt != "" && in.Interrupt != pending.ID {
		return fmt.Errorf("resume thread %s: interrupt %s is not pending: %w", publicID(t.ID), in.Interrupt, graph.ErrNoInterrupt)
	}
	in.Interrupt = pending.ID
	return graph.CheckAnswer(pending, in.Resume)
}

// idKeyed reads LangGraph's id-keyed resume, {"<interrupt id>": value}: an
// object whose every key is an interrupt id (a UUID). It returns the ids
// and the value of the first.
func idKeyed(resume json.RawMessage) ([]string, json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(resume, &m) != nil || len(m) == 0 {
		return nil, nil, false
	}
	ids := sortedKeys(m)
	for _, k := range ids {
		if _, err := uuid.Parse(k); err != nil || len(k) != 36 {
			return nil, nil, false
		}
	}
	return ids, m[ids[0]], true
}
