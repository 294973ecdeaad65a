package graph

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/loomkit/loom/checkpoint"
)

// pending returns the questions the thread's head waits on.
func (r *runner[S]) pending() []checkpoint.Interrupt {
	if r.head == nil {
		return nil
	}
	return r.head.Pending()
}

// answers reads in's answers by question id, each checked against its
// question: Answers, or Resume for the question in.Interrupt names, for
// the questions its map form names, or for the only question pending.
func (r *runner[S]) answers(in Input[S], pending []checkpoint.Interrupt) (map[string]json.RawMessage, error) {
	gone := func(id string) error {
		return fmt.Errorf("interrupt %s is no longer pending: %w (%w)", id, ErrNoInterrupt, checkpoint.ErrConflict)
	}
	if len(pending) == 0 {
		if in.Interrupt != "" {
			return nil, gone(in.Interrupt)
		}
		for id := range in.Answers {
			return nil, gone(id)
		}
		return nil, ErrNoInterrupt
	}
	out := make(map[string]json.RawMessage)
	if in.Answers != nil {
		for id, v := range in.Answers {
			b, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("encode answer to %s: %w", id, err)
			}
			out[id] = b
		}
	} else {
		v, err := json.Marshal(in.Resume)
		if err != nil {
			return nil, fmt.Errorf("encode value: %w", err)
		}
		switch m := byID(v, pending); {
		case in.Interrupt != "":
			out[in.Interrupt] = v
		case m != nil:
			out = m
		case len(pending) == 1:
			out[pending[0].ID] = v
		default:
			return nil, fmt.Errorf("%w (%d pending)", ErrWhichInterrupt, len(pending))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no answer given", ErrInvalidAnswer)
	}
	for _, id := range slices.Sorted(maps.Keys(out)) {
		i := slices.IndexFunc(pending, func(p checkpoint.Interrupt) bool { return p.ID == id })
		if i < 0 {
			return nil, gone(id)
		}
		if err := CheckAnswer(&pending[i], out[id]); err != nil {
			if len(pending) > 1 {
				return nil, fmt.Errorf("interrupt %s: %w", id, err)
			}
			return nil, err
		}
	}
	return out, nil
}

// byID reads v as LangGraph's map form of a resume, {id: answer, …}: an
// object whose keys are all ids of pending questions. It returns nil for
// any other value.
func byID(v json.RawMessage, pending []checkpoint.Interrupt) map[string]json.RawMessage {
	if len(v) == 0 || v[0] != '{' {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(v, &m) != nil || len(m) == 0 {
		return nil
	}
	for id := range m {
		if !slices.ContainsFunc(pending, func(p checkpoint.Interrupt) bool { return p.ID == id }) {
			return nil
		}
	}
	return m
}

// expiredAny reports whether a question of pending has expired.
func expiredAny(pending []checkpoint.Interrupt, now time.Time) bool {
	return slices.ContainsFunc(pending, func(p checkpoint.Interrupt) bool { return p.Expired(now) })
}

// answer records answers (by question id), and the default answers of
// the questions that expired unanswered, for the head's pending
// questions. When some stay pending it checkpoints that and returns the
// interrupted result: the node that asked runs again only once all are
// answered. Else it checkpoints the answers and returns nil, nil, with
// the run set to run that node.
func (r *runner[S]) answer(pending []checkpoint.Interrupt, answers map[string]json.RawMessage) (*Result[S], error) {
	now := time.Now()
	resumes := slices.Clip(r.head.Resumes)
	branches := maps.Clone(r.head.Answers)
	var rest []checkpoint.Interrupt
	var expired []int
	for i, p := range pending {
		v, ok := answers[p.ID]
		if !ok && p.Expired(now) {
			v, ok = p.Default, true
			if v == nil {
				v = json.RawMessage("null")
			}
			expired = append(expired, i)
		}
		if !ok {
			rest = append(rest, p)
			continue
		}
		if p.Branch == "" {
			resumes = append(resumes, v)
			continue
		}
		if branches == nil {
			branches = make(map[string][]json.RawMessage)
		}
		branches[p.Branch] = append(slices.Clip(branches[p.Branch]), v)
	}
	r.counters = r.c.countersFromMap(r.head.Counters)
	next, err := r.headNext()
	if err != nil {
		return nil, err
	}
	err = r.save(checkpoint.SourceResume, "", next, func(cp *checkpoint.Checkpoint) {
		cp.SetPending(rest)
		cp.Resumes, cp.Answers, cp.Done = resumes, branches, r.head.Done
	})
	if err != nil {
		return nil, err
	}
	for _, i := range expired {
		p := &pending[i]
		slog.InfoContext(r.ctx, "graph: question expired; taking its default answer", "graph", r.c.name, "thread", r.rc.thread, "node", p.Node, "interrupt", p.ID, "deadline", p.Deadline)
		r.send(KindExpired, p.Node, r.head.ID, p)
	}
	if len(rest) > 0 {
		return r.result(StatusInterrupted), nil
	}
	r.rc.ask.resumes, r.rc.ask.branches = resumes, branches
	return nil, nil
}
