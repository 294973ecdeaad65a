package graph

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"strings"
	"sync"

	"github.com/loomkit/loom/checkpoint"
)

// kept is what a run with a saver keeps beside its steps: the saver
// (which its subgraphs keep their checkpoints in), its durability (which
// they follow), and the results, as JSON, of the running node's fan-out
// branches that finished, by branch name ("node[i]"). A branch that finishes while others of its fan-out
// still run is written to the thread at once (a checkpoint with source
// branch and the same next node), so that after a crash only the
// unfinished branches run again; the results of every finished branch go
// with the node's questions when some branches asked. The node's end
// clears them.
type kept struct {
	saver checkpoint.Saver
	dur   Durability
	// nest, in a subgraph's run, marks each checkpoint it writes (see
	// checkpoint.Nest); nil otherwise.
	nest func(*checkpoint.Checkpoint)

	mu   sync.Mutex
	done map[string]json.RawMessage
	// write checkpoints the results so far; it is called under mu, which
	// keeps the writes of concurrent branches in one line.
	write func(done map[string]json.RawMessage) error
}

// result returns the kept result of branch, if it finished before.
func (k *kept) result(branch string) (json.RawMessage, bool) {
	if k == nil {
		return nil, false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	raw, ok := k.done[branch]
	return raw, ok
}

// keep records the result v of branch, and writes it to the thread when
// write is set (other branches still run). A result that does not encode
// is not kept (the branch runs again); a failed write is logged, and the
// results stay for the node's questions.
func (k *kept) keep(ctx context.Context, branch string, v any, write bool) {
	raw, err := json.Marshal(v)
	if err != nil {
		slog.WarnContext(ctx, "graph: a fan-out branch's result does not encode as JSON; it runs again if its node does", "branch", branch, "err", err)
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.done == nil {
		k.done = make(map[string]json.RawMessage)
	}
	k.done[branch] = raw
	if !write || k.write == nil {
		return
	}
	if err := k.write(maps.Clone(k.done)); err != nil {
		slog.WarnContext(ctx, "graph: could not write a finished fan-out branch", "branch", branch, "err", err)
	}
}

// all returns a copy of the results kept so far (nil when none).
func (k *kept) all() map[string]json.RawMessage {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.done) == 0 {
		return nil
	}
	return maps.Clone(k.done)
}

// reset makes done the results kept (those a checkpoint carries, or nil
// when the node finished).
func (k *kept) reset(done map[string]json.RawMessage) {
	if k == nil {
		return
	}
	k.mu.Lock()
	k.done = done
	k.mu.Unlock()
}

// keeper returns the kept results of r's run: none without a saver.
func (r *runner[S]) keeper() *kept {
	if r.c.saver == nil {
		return nil
	}
	return &kept{saver: r.c.saver, write: r.writeBranches}
}

// writeBranches checkpoints the state the running node started from,
// with done, the results of its branches that finished: the thread's head
// then still runs that node, and its finished branches take their result.
func (r *runner[S]) writeBranches(done map[string]json.RawMessage) error {
	name := strings.TrimPrefix(r.rc.node, r.rc.prefix)
	i, ok := r.c.index[name]
	if !ok {
		return nil
	}
	return r.save(checkpoint.SourceBranch, name, i, func(cp *checkpoint.Checkpoint) {
		cp.Step = r.rc.step - 1
		cp.Resumes, cp.Answers, cp.Done = r.rc.ask.resumes, r.rc.ask.branches, done
	})
}
