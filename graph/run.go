package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/seal"
)

// Errors that callers branch on. Conflicts between two writers of one
// thread come from the saver as checkpoint.ErrConflict.
var (
	// ErrNoInterrupt: Resume on a thread that is not waiting for a person.
	ErrNoInterrupt = errors.New("graph: thread has no pending interrupt to resume")
	// ErrInterrupted: Continue on a thread that waits for a person's answer.
	ErrInterrupted = errors.New("graph: thread waits for an answer; resume it")
	// ErrStepLimit: a run took its step limit; Continue goes on from there.
	ErrStepLimit = errors.New("graph: step limit reached")
	// ErrInvalidAnswer: Resume with a value that does not fit the type the
	// node asked for. Nothing is written: the question stays pending.
	ErrInvalidAnswer = errors.New("graph: the answer does not fit the question")
	// ErrNoSaver: Resume or Continue on a graph compiled without a saver.
	ErrNoSaver = errors.New("graph: no saver; compile with WithSaver to resume or continue")
	// ErrWhichInterrupt: a resume with one value while several questions
	// are pending; answer them by id (Input.Answers, or the map form).
	ErrWhichInterrupt = errors.New("graph: several questions are pending; answer them by id")
)

// Status is how a run ended.
type Status string

// Run statuses.
const (
	StatusDone        Status = "done"
	StatusInterrupted Status = "interrupted"
)

// Input says how a run starts. Exactly one way applies: with Update set, a
// new run starts from Start (or Goto) on the thread's latest state (the
// zero S for a new thread) after Update changed it — any unfinished work
// or pending interrupt of the thread is set aside. Else, with Resume or
// Answers set, pending questions are answered. Else the thread continues
// where its last checkpoint says (after a crash, a cancel or the step
// limit).
//
// Questions that expired unanswered (see Expires) take their default
// answers when a resume or a continue finds them.
type Input[S any] struct {
	Update func(*S)
	// Goto, with Update, starts the run at this node instead of Start.
	Goto string
	// Resume answers the pending question. A json.RawMessage that is an
	// object whose keys are all ids of pending questions answers those
	// (LangGraph's map form).
	Resume any
	// Answers answers pending questions by id; any subset may be given.
	// The node that asked runs again once none of its questions is
	// pending; until then the run ends interrupted with the rest.
	Answers map[string]any
	// Interrupt, with Resume, names the interrupt being answered. When it is
	// no longer pending (someone else answered it first) the resume fails
	// with checkpoint.ErrConflict rather than ErrNoInterrupt.
	Interrupt string
	// Run, when set, is the id of the run (recorded in its checkpoints and
	// events); by default a new one is made.
	Run string
	// InterruptBefore and InterruptAfter, when not nil, are this run's
	// breakpoints instead of the compiled graph's (see
	// WithInterruptBefore); an empty list means none.
	InterruptBefore, InterruptAfter []string
	// Durability, when set, says when this run writes its checkpoints
	// instead of the compiled graph's (see WithDurability).
	Durability Durability
	// Budgets, with Update, lowers declared budgets' bounds for this run:
	// budget name (a Loop's is "from>to") → its bound, from 0 up to the
	// declared max. An unknown name or a bound out of range refuses the
	// run before anything is written. The bounds are checkpointed: a
	// resume or continue of the run keeps them, and the next new run
	// starts from the declared ones.
	Budgets map[string]int
}

// Result is how a run ended.
type Result[S any] struct {
	State  S      `json:"state"`
	Status Status `json:"status"`
	// Interrupt is the first pending question when Status is interrupted;
	// Interrupts lists every one.
	Interrupt  *checkpoint.Interrupt  `json:"interrupt,omitempty"`
	Interrupts []checkpoint.Interrupt `json:"interrupts,omitempty"`
	// Checkpoint is the id of the thread's head after the run ("" without a saver).
	Checkpoint string `json:"checkpoint,omitempty"`
	Run        string `json:"run"`
	// Steps is how many node steps this run took.
	Steps int `json:"steps"`
	// Breakpoint, when the run stopped at one, says where (Status is
	// interrupted, Interrupt nil).
	Breakpoint *Breakpoint `json:"breakpoint,omitempty"`
}

// Invoke starts a new run on thread: the thread's latest state, changed by
// update (which may be nil), runs from Start.
func (c *Compiled[S]) Invoke(ctx context.Context, thread string, update func(*S)) (*Result[S], error) {
	if update == nil {
		update = func(*S) {}
	}
	return c.exec(ctx, thread, Input[S]{Update: update}, nil)
}

// Resume answers thread's pending interrupt with value and runs on.
func (c *Compiled[S]) Resume(ctx context.Context, thread string, value any) (*Result[S], error) {
	if value == nil {
		return nil, errors.New("graph: resume value must not be nil")
	}
	return c.exec(ctx, thread, Input[S]{Resume: value}, nil)
}

// Continue runs thread on from its last checkpoint.
func (c *Compiled[S]) Continue(ctx context.Context, thread string) (*Result[S], error) {
	return c.exec(ctx, thread, Input[S]{}, nil)
}

// Run runs as in says and returns how the run ended.
func (c *Compiled[S]) Run(ctx context.Context, thread string, in Input[S]) (*Result[S], error) {
	return c.exec(ctx, thread, in, nil)
}

// Stream runs as in says, yielding its events as they happen. The last
// event is KindRunEnd (Data: *Result[S]) or KindError, which is yielded
// with the error. Breaking out of the loop stops the run at the next step
// boundary; every step taken is checkpointed.
func (c *Compiled[S]) Stream(ctx context.Context, thread string, in Input[S]) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		var mu sync.Mutex
		stopped := false
		emit := func(e Event) bool {
			mu.Lock()
			defer mu.Unlock()
			if !stopped && !yield(e, nil) {
				stopped = true
			}
			return !stopped
		}
		res, err := c.exec(ctx, thread, in, emit)
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		if err != nil {
			e := Event{Kind: KindError, Thread: thread, Time: time.Now(), Err: err}
			if res != nil {
				e.Run, e.Checkpoint = res.Run, res.Checkpoint
			}
			yield(e, err)
		}
	}
}

// errStopped ends a run whose stream consumer went away.
var errStopped = errors.New("graph: stream consumer stopped")

// runner is one run in progress.
type runner[S any] struct {
	c        *Compiled[S]
	ctx      context.Context
	rc       *runCtx
	state    S
	head     *checkpoint.Checkpoint
	counters tally
	steps    int  // steps of this run
	nested   bool // a subgraph's run: interrupts go up to the outer node
	// before and after are the run's breakpoints by node index;
	// skipBefore lets the first node pass its breakpoint (the run
	// continues from it).
	before, after []bool
	skipBefore    bool
	unsaved       string // the pure node whose step is not written yet
	dur           durable[S]
}

func (c *Compiled[S]) exec(ctx context.Context, thread string, in Input[S], emit func(Event) bool) (*Result[S], error) {
	run := in.Run
	if run == "" {
		run = checkpoint.NewID()
	}
	r := &runner[S]{c: c, rc: &runCtx{thread: thread, run: run, emit: emit, ask: &askState{}}}
	if len(c.budgets) > 0 {
		r.rc.budgets = r
	}
	r.rc.kept = r.keeper()
	r.ctx = context.WithValue(ctx, runKey{}, r.rc)
	if err := r.setDurability(in.Durability); err != nil {
		return nil, err
	}
	res, err := r.settle(r.run(in))
	if res != nil && err == nil {
		r.send(KindRunEnd, "", "", res)
	}
	return res, err
}

func (r *runner[S]) result(status Status) *Result[S] {
	res := &Result[S]{State: r.state, Status: status, Run: r.rc.run, Steps: r.steps}
	if r.head != nil {
		res.Checkpoint = r.head.ID
		res.Interrupt = r.head.Interrupt
		res.Interrupts = r.head.Pending()
	}
	return res
}

func (r *runner[S]) send(kind Kind, node, cp string, data any) bool {
	if r.rc.emit == nil {
		return true
	}
	step := r.rc.step
	return r.rc.emit(Event{Kind: kind, Thread: r.rc.thread, Run: r.rc.run, Node: node, Step: step, Checkpoint: cp, Time: time.Now(), Data: data})
}

// load reads the thread's head into r.head and r.state.
func (r *runner[S]) load() error {
	cp, err := r.c.saver.Get(r.ctx, r.rc.thread, "")
	if errors.Is(err, checkpoint.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("graph %s: load thread %s: %w", r.c.name, r.rc.thread, err)
	}
	if cp, err = r.c.upgrade(cp); err != nil {
		return fmt.Errorf("graph %s: thread %s: %w", r.c.name, r.rc.thread, err)
	}
	if err := json.Unmarshal(cp.State, &r.state); err != nil {
		if seal.IsSealed(cp.State) {
			return fmt.Errorf("graph %s: thread %s checkpoint %s: the state is sealed (encrypted at rest) and this saver cannot open it: give it the keys that sealed it (%s): %w", r.c.name, cp.Thread, cp.ID, seal.EnvKeys, checkpoint.ErrCorrupt)
		}
		return fmt.Errorf("graph %s: thread %s checkpoint %s: decode state: %w: %w", r.c.name, cp.Thread, cp.ID, checkpoint.ErrCorrupt, err)
	}
	r.head = cp
	return nil
}

// save checkpoints the current state as the thread's new head.
func (r *runner[S]) save(src checkpoint.Source, node string, next int, fill func(*checkpoint.Checkpoint)) error {
	if r.c.saver == nil {
		return nil
	}
	cp := checkpoint.Next(r.rc.thread, r.head, src)
	cp.Meta.Run, cp.Meta.Node, cp.Meta.Version = r.rc.run, node, r.c.src.version
	if src == checkpoint.SourceStep {
		cp.Step = r.rc.step
	}
	if next != endIndex {
		cp.Next = []string{r.c.nodeName(next)}
	}
	cp.Counters = r.c.countersToMap(r.counters)
	if k := r.rc.kept; k != nil && k.nest != nil {
		k.nest(cp)
	}
	if fill != nil {
		fill(cp)
	}
	b, err := json.Marshal(r.state)
	if err != nil {
		return fmt.Errorf("graph %s: thread %s: encode state: %w", r.c.name, r.rc.thread, err)
	}
	cp.State = b
	// A cancelled run still records the step it finished.
	if err := r.put(cp); err != nil {
		return fmt.Errorf("graph %s: thread %s: %w", r.c.name, r.rc.thread, err)
	}
	r.head = cp
	return nil
}

func (r *runner[S]) run(in Input[S]) (*Result[S], error) {
	c := r.c
	if in.Budgets != nil && in.Update == nil {
		return nil, fmt.Errorf("graph %s: thread %s: budgets without an update (a resume or continue keeps its run's)", c.name, r.rc.thread)
	}
	var fresh tally // a new run's budgets
	if in.Update != nil {
		fresh = c.countersFromMap(nil)
		if err := c.lower(fresh, in.Budgets); err != nil {
			return nil, fmt.Errorf("graph %s: thread %s: %w", c.name, r.rc.thread, err)
		}
	}
	if c.saver != nil {
		if err := r.load(); err != nil {
			return nil, err
		}
	} else if in.Update == nil {
		return nil, ErrNoSaver
	}
	if r.head != nil {
		r.rc.step = r.head.Step
	}
	if err := r.setBreakpoints(in); err != nil {
		return nil, fmt.Errorf("graph %s: thread %s: %w", c.name, r.rc.thread, err)
	}
	r.skipBefore = in.Update == nil
	if in.Goto != "" && in.Update == nil {
		return nil, fmt.Errorf("graph %s: thread %s: goto %q without an update", c.name, r.rc.thread, in.Goto)
	}
	r.send(KindRunStart, "", "", nil)

	var cur int
	switch {
	case in.Update != nil:
		in.Update(&r.state)
		r.counters = fresh
		var next int
		if in.Goto != "" {
			i, ok := c.index[in.Goto]
			if !ok {
				return nil, fmt.Errorf("graph %s: thread %s: goto %q: no such node (the nodes: %v)", c.name, r.rc.thread, in.Goto, c.nodeNames())
			}
			next = i
		} else {
			var err error
			if next, err = c.next(r.ctx, &c.start, r.state, r.counters); err != nil {
				return nil, fmt.Errorf("graph %s: %w", c.name, err)
			}
		}
		if err := r.save(checkpoint.SourceInput, "", next, nil); err != nil {
			return nil, err
		}
		cur = next
	case in.Resume != nil || in.Answers != nil:
		pending := r.pending()
		answers, err := r.answers(in, pending)
		if err != nil {
			return nil, fmt.Errorf("graph %s: resume thread %s: %w", c.name, r.rc.thread, err)
		}
		res, err := r.answer(pending, answers)
		if res != nil || err != nil {
			return res, err
		}
		if cur, err = r.headNext(); err != nil {
			return nil, err
		}
	default:
		if r.head == nil {
			return nil, fmt.Errorf("graph %s: continue thread %s: %w", c.name, r.rc.thread, checkpoint.ErrNotFound)
		}
		if pending := r.head.Pending(); len(pending) > 0 {
			if !expiredAny(pending, time.Now()) {
				return nil, fmt.Errorf("graph %s: continue thread %s: %w", c.name, r.rc.thread, ErrInterrupted)
			}
			res, err := r.answer(pending, nil)
			if res != nil || err != nil {
				return res, err
			}
		} else {
			if len(r.head.Next) == 0 {
				return r.result(StatusDone), nil
			}
			r.rc.ask.resumes = r.head.Resumes
			r.rc.ask.branches = r.head.Answers
			r.counters = c.countersFromMap(r.head.Counters)
		}
		var err error
		if cur, err = r.headNext(); err != nil {
			return nil, err
		}
	}
	if r.head != nil && in.Update == nil {
		// The branches of the node that runs first which finished before.
		r.rc.kept.reset(r.head.Done)
	}
	return r.loop(cur)
}

func (r *runner[S]) headNext() (int, error) {
	if len(r.head.Next) == 0 {
		return endIndex, nil
	}
	i, ok := r.c.index[r.head.Next[0]]
	if !ok {
		return 0, fmt.Errorf("graph %s: thread %s checkpoint %s: %w", r.c.name, r.rc.thread, r.head.ID, r.c.notInGraph(r.head, r.head.Next[0]))
	}
	return i, nil
}

func (r *runner[S]) loop(cur int) (*Result[S], error) {
	c := r.c
	for cur != endIndex {
		if err := r.ctx.Err(); err != nil {
			return r.result(""), fmt.Errorf("graph %s: thread %s stopped before %s: %w", c.name, r.rc.thread, c.nodes[cur].name, err)
		}
		if r.steps >= c.stepLimit {
			return r.result(""), fmt.Errorf("graph %s: thread %s: %w after %d steps (next: %s)", c.name, r.rc.thread, ErrStepLimit, r.steps, c.nodes[cur].name)
		}
		if r.before != nil && r.before[cur] && !r.skipBefore {
			return r.breakpoint(cur, "before")
		}
		r.skipBefore = false
		n := &c.nodes[cur]
		r.rc.node = n.name
		if r.rc.prefix != "" {
			r.rc.node = r.rc.prefix + n.name
		}
		r.rc.step++
		if !r.send(KindNodeStart, r.rc.node, "", nil) {
			return r.result(""), errStopped
		}
		var began time.Time
		if c.saver != nil || r.rc.emit != nil {
			began = time.Now()
		}
		out, to, err := r.call(n)
		if err != nil {
			r.rc.step--
			if ie := (*interruptError)(nil); errors.As(err, &ie) {
				if r.nested {
					return nil, err
				}
				return r.interrupt(n, out, ie)
			}
			return r.result(""), fmt.Errorf("graph %s: thread %s: %w", c.name, r.rc.thread, err)
		}
		r.state = out
		r.steps++
		next, err := c.follow(r.ctx, n, r.state, to, r.counters)
		if err != nil {
			return r.result(""), fmt.Errorf("graph %s: thread %s: %w", c.name, r.rc.thread, err)
		}
		if !r.nested {
			// The answers belonged to the node just done.
			r.rc.ask.resumes, r.rc.ask.branches = nil, nil
		}
		r.rc.kept.reset(nil)
		var took time.Duration
		if !began.IsZero() {
			took = time.Since(began)
		}
		stop := r.after != nil && r.after[cur] && next != endIndex
		saved := !(n.pure || r.dur.exit) || next == endIndex || stop
		r.unsaved = ""
		if !saved {
			r.unsaved = n.name
			r.keep(next)
		}
		if saved {
			err = r.save(checkpoint.SourceStep, n.name, next, func(cp *checkpoint.Checkpoint) { cp.Meta.Duration = took })
			if err != nil {
				return r.result(""), err
			}
		}
		if r.rc.emit != nil {
			var id string
			if r.head != nil && saved {
				id = r.head.ID
			}
			r.send(KindNodeEnd, r.rc.node, id, took)
			if !r.send(KindState, r.rc.node, id, r.state) {
				return r.result(""), errStopped
			}
		}
		if stop {
			return r.breakpoint(cur, "after")
		}
		cur = next
	}
	return r.result(StatusDone), nil
}

// breakpoint stops the run at node i's breakpoint: the head is
// checkpointed with the node that runs next.
func (r *runner[S]) breakpoint(i int, when string) (*Result[S], error) {
	name := r.c.nodes[i].name
	if when == "before" && r.unsaved != "" {
		// The pure steps before it are written now, so that Continue
		// starts at the breakpoint's node.
		if err := r.save(checkpoint.SourceStep, r.unsaved, i, nil); err != nil {
			return r.result(""), err
		}
	}
	res := r.result(StatusInterrupted)
	res.Breakpoint = &Breakpoint{Node: name, When: when}
	return res, nil
}

// interrupt checkpoints the state node n returned with its questions.
func (r *runner[S]) interrupt(n *cnode[S], out S, ie *interruptError) (*Result[S], error) {
	if r.c.saver == nil {
		return nil, fmt.Errorf("graph %s: node %s asked a question: %w", r.c.name, n.name, ErrNoSaver)
	}
	r.state = out
	pending := make([]checkpoint.Interrupt, len(ie.asks))
	for i, q := range ie.asks {
		pending[i] = checkpoint.Interrupt{ID: checkpoint.NewID(), Node: n.name, Branch: q.branch,
			Payload: q.payload, Schema: q.schema, Deadline: q.deadline, Default: q.def}
	}
	err := r.save(checkpoint.SourceStep, n.name, r.c.index[n.name], func(cp *checkpoint.Checkpoint) {
		cp.SetPending(pending)
		cp.Resumes = r.rc.ask.resumes
		cp.Answers = r.rc.ask.branches
		cp.Done = r.rc.kept.all()
	})
	if err != nil {
		return r.result(""), err
	}
	for i := range pending {
		r.send(KindInterrupt, n.name, r.head.ID, &pending[i])
	}
	return r.result(StatusInterrupted), nil
}

// call runs node n on s with its timeout and retry policy; a Jump node
// also returns where it chose to go.
func (c *Compiled[S]) call(ctx context.Context, rc *runCtx, n *cnode[S], s S) (S, string, error) {
	attempts, wait := 1, time.Duration(0)
	if n.retry != nil {
		attempts, wait = n.retry.Attempts, n.retry.Backoff
	}
	for try := 1; ; try++ {
		// A try asks its questions from the first answer again. Inside a
		// subgraph (prefix set) the count runs on across the inner nodes,
		// which share the outer node's answers.
		if rc.ask != nil && rc.prefix == "" {
			rc.ask.asked = 0
		}
		out, to, err := tryNode(ctx, n, s)
		if err == nil || IsInterrupt(err) {
			return out, to, err
		}
		if try >= attempts || ctx.Err() != nil || (n.retry.If != nil && !n.retry.If(err)) {
			if try > 1 {
				return out, "", fmt.Errorf("node %s (try %d of %d): %w", n.name, try, attempts, err)
			}
			return out, "", fmt.Errorf("node %s: %w", n.name, err)
		}
		if wait > 0 {
			// Full jitter: wait a random time up to the backoff.
			t := time.NewTimer(time.Duration(rand.Int64N(int64(wait)) + 1))
			select {
			case <-ctx.Done():
				t.Stop()
				return out, "", fmt.Errorf("node %s: waiting to retry: %w", n.name, ctx.Err())
			case <-t.C:
			}
			wait *= 2
			if n.retry.MaxBackoff > 0 && wait > n.retry.MaxBackoff {
				wait = n.retry.MaxBackoff
			}
		}
	}
}

// tryNode runs one try of n, turning a panic into an error.
func tryNode[S any](ctx context.Context, n *cnode[S], s S) (out S, to string, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, to, err = s, "", recovered(ctx, n.name, p)
		}
	}()
	if n.timeout <= 0 {
		return n.invoke(ctx, s)
	}
	tctx, cancel := context.WithTimeout(ctx, n.timeout)
	defer cancel()
	out, to, err = n.invoke(tctx, s)
	if err != nil && ctx.Err() == nil && errors.Is(tctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("timed out after %s: %w", n.timeout, err)
	}
	return out, to, err
}
