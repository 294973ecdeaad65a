// Package checkpoint stores the history of a graph thread: one checkpoint
// after every step, so a run can be resumed after an interrupt or a crash,
// undone, or forked.
//
// A thread's history is linear. Every checkpoint names its parent, and a Put
// is compare-and-set on that parent: it succeeds only when the parent is the
// thread's current head. Two writers that start from the same head cannot
// both win; the loser gets ErrConflict and the history stays a single line.
// Undo and fork never rewrite history: they append a new head whose state is
// taken from an older checkpoint.
package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
)

// Sentinel errors that callers branch on.
var (
	// ErrConflict is returned by Put when the checkpoint's parent is not the
	// thread's current head: another writer got there first.
	ErrConflict = errors.New("checkpoint conflict: parent is not the thread head")
	// ErrNotFound is returned when a thread or checkpoint does not exist.
	ErrNotFound = errors.New("checkpoint not found")
	// ErrCorrupt is returned when a stored checkpoint cannot be decoded.
	ErrCorrupt = errors.New("checkpoint corrupt")
)

// Source says why a checkpoint was written.
type Source string

// The sources of checkpoints.
const (
	SourceInput  Source = "input"  // a run started with new input
	SourceStep   Source = "step"   // a node finished
	SourceResume Source = "resume" // a person answered an interrupt
	SourceUpdate Source = "update" // state edited from outside a run
	SourceFork   Source = "fork"   // a branch from an older checkpoint
	SourceUndo   Source = "undo"   // an older checkpoint made head again
	SourceBranch Source = "branch" // a fan-out branch finished before its node
)

// Interrupt is a question a node asked a person. The run that asked it
// ends with status interrupted and continues when a value is given back.
type Interrupt struct {
	// ID identifies this interrupt; a resume may name it.
	ID string `json:"id"`
	// Node is the node that asked.
	Node string `json:"node"`
	// Payload is what the node asked, as JSON (a confirm card, a question).
	Payload json.RawMessage `json:"payload,omitempty"`
	// Schema is the JSON schema an answer must satisfy, derived from the
	// Go type the node asked for (empty: any value). Fields may be left
	// out; a value of the wrong type may not.
	Schema json.RawMessage `json:"schema,omitempty"`
	// Branch names the fan-out branch that asked ("node[2]"); empty when
	// the node itself asked.
	Branch string `json:"branch,omitempty"`
	// Deadline, when set, is when the question expires: from then on the
	// run may go on with Default as the answer.
	Deadline time.Time `json:"deadline,omitzero"`
	// Default is the answer an expired question takes.
	Default json.RawMessage `json:"default,omitempty"`
}

// Expired reports whether the question has a deadline that is not after now.
func (i *Interrupt) Expired(now time.Time) bool {
	return !i.Deadline.IsZero() && !i.Deadline.After(now)
}

// Meta describes how a checkpoint came to be.
type Meta struct {
	Source Source `json:"source"`
	// Node is the node whose step produced this checkpoint, if any.
	Node string `json:"node,omitempty"`
	// Run identifies the run (one Invoke, Resume or Continue) that wrote it.
	Run string `json:"run,omitempty"`
	// Duration is how long the step took.
	Duration time.Duration `json:"duration,omitempty"`
	// From names the checkpoint a fork or undo copied its state from.
	From string `json:"from,omitempty"`
	// Created is when the checkpoint was made.
	Created time.Time `json:"created"`
	// Version is the version of the graph that wrote the checkpoint's
	// state and next nodes (see graph.Graph.Version); 0 when the graph
	// declared none, which graphs read as version 1. Next carries it
	// forward; Fork and Undo copy it with the state.
	Version int `json:"version,omitempty"`
}

// Checkpoint is one point in a thread's history.
type Checkpoint struct {
	Thread string `json:"thread"`
	ID     string `json:"id"`
	// ParentID is the checkpoint this one follows; empty for the first.
	ParentID string `json:"parent_id,omitempty"`
	// Seq is the position in the thread's history: 0 for the first
	// checkpoint, parent's Seq + 1 after that.
	Seq int64 `json:"seq"`
	// Step counts the node steps taken on the thread.
	Step int `json:"step"`
	// State is the graph state as JSON.
	State json.RawMessage `json:"state"`
	// Next lists the node(s) to run from here; empty when the run is done.
	Next []string `json:"next,omitempty"`
	// Interrupt is the first pending question, if the run waits for a
	// person; Interrupts lists them all. Read both with Pending.
	Interrupt *Interrupt `json:"interrupt,omitempty"`
	// Interrupts are the pending questions when the node in Next asked
	// more than one at once (its fan-out branches each asked); each is
	// answered by its ID. Empty when at most one is pending (older
	// checkpoints keep only Interrupt).
	Interrupts []Interrupt `json:"interrupts,omitempty"`
	// Resumes holds the answers given so far to the node in Next, in the
	// order that node asked its questions.
	Resumes []json.RawMessage `json:"resumes,omitempty"`
	// Answers holds the answers given so far to the fan-out branches of
	// the node in Next, by branch (Interrupt.Branch), in the order each
	// branch asked.
	Answers map[string][]json.RawMessage `json:"answers,omitempty"`
	// Done holds the results, as JSON, of the fan-out branches of the
	// node in Next that finished before the node did, by branch name (as
	// Answers): when the node runs again, after a crash or a resume, those
	// branches take their result instead of running again.
	Done map[string]json.RawMessage `json:"done,omitempty"`
	// Nest, in a subgraph's checkpoint, ties it to the outer step that
	// runs the subgraph.
	Nest *Nest `json:"nest,omitempty"`
	// Counters counts traversals of bounded loop edges in the current run.
	Counters map[string]int `json:"counters,omitempty"`
	Meta     Meta           `json:"meta"`
}

// Nest ties a subgraph's checkpoint (kept on a thread of its own) to the
// step of the outer thread that runs the subgraph.
type Nest struct {
	// Step is the outer step's key (graph.StepKey); a subgraph whose head
	// names another step starts afresh.
	Step string `json:"step"`
	// Used counts the outer node's answers that the subgraph's steps
	// before Next have taken.
	Used int `json:"used,omitempty"`
}

// Pending returns the questions the thread waits on at cp: Interrupts,
// or Interrupt alone when only it is set (as older checkpoints have it).
func (cp *Checkpoint) Pending() []Interrupt {
	if len(cp.Interrupts) > 0 {
		return cp.Interrupts
	}
	if cp.Interrupt != nil {
		return []Interrupt{*cp.Interrupt}
	}
	return nil
}

// SetPending records pending as the questions the thread waits on: the
// first in Interrupt (for readers of one question) and, when there are
// several, all in Interrupts.
func (cp *Checkpoint) SetPending(pending []Interrupt) {
	cp.Interrupt, cp.Interrupts = nil, nil
	if len(pending) == 0 {
		return
	}
	first := pending[0]
	cp.Interrupt = &first
	if len(pending) > 1 {
		cp.Interrupts = slices.Clone(pending)
	}
}

// Saver stores checkpoints. Implementations must be safe for concurrent use.
type Saver interface {
	// Put appends cp to its thread. It is compare-and-set on cp.ParentID:
	// the parent must be the thread's head (empty for a new thread) and
	// cp.Seq must be the parent's Seq + 1 (0 for a new thread); otherwise Put
	// returns an error wrapping ErrConflict and stores nothing.
	Put(ctx context.Context, cp *Checkpoint) error
	// Get returns the checkpoint id of thread, or the head when id is empty.
	// A missing thread or id gives an error wrapping ErrNotFound.
	Get(ctx context.Context, thread, id string) (*Checkpoint, error)
	// List returns up to limit checkpoints of thread, newest first
	// (all of them when limit <= 0).
	List(ctx context.Context, thread string, limit int) ([]*Checkpoint, error)
	// DeleteThread removes a thread and its whole history.
	DeleteThread(ctx context.Context, thread string) error
}

// NewID returns a new checkpoint id: a UUIDv7, so ids sort by creation time.
func NewID() string {
	return uuid.Must(uuid.NewV7()).String()
}

// Next returns a checkpoint that follows head on the same thread: parent,
// sequence number, step and run bookkeeping carried forward, with a fresh id.
// head may be nil for a new thread.
func Next(thread string, head *Checkpoint, src Source) *Checkpoint {
	cp := &Checkpoint{Thread: thread, ID: NewID(), Meta: Meta{Source: src, Created: time.Now().UTC()}}
	if head != nil {
		cp.ParentID = head.ID
		cp.Seq = head.Seq + 1
		cp.Step = head.Step
		cp.Meta.Version = head.Meta.Version
	}
	return cp
}

// Undo makes checkpoint id of thread the head again by appending a copy of
// it (state and pending work) as a new checkpoint. History is kept, so an
// undo can itself be undone.
func Undo(ctx context.Context, s Saver, thread, id string) (*Checkpoint, error) {
	return Fork(ctx, s, thread, id, thread, nil)
}

// Fork starts a branch from checkpoint id of thread. The branch is a new
// head on thread dst (which may be thread itself, or a new thread), with
// the old checkpoint's state passed through edit when edit is not nil.
// On dst == thread the fork is recorded with source undo when edit is nil.
func Fork(ctx context.Context, s Saver, thread, id, dst string, edit func(state json.RawMessage) (json.RawMessage, error)) (*Checkpoint, error) {
	from, err := s.Get(ctx, thread, id)
	if err != nil {
		return nil, fmt.Errorf("fork %s/%s: %w", thread, id, err)
	}
	head, err := s.Get(ctx, dst, "")
	if errors.Is(err, ErrNotFound) {
		head = nil
	} else if err != nil {
		return nil, fmt.Errorf("fork %s/%s: read head of %s: %w", thread, id, dst, err)
	}
	src := SourceFork
	if dst == thread && edit == nil {
		src = SourceUndo
	}
	cp := Next(dst, head, src)
	cp.Step = from.Step
	if head != nil && head.Step > cp.Step {
		cp.Step = head.Step
	}
	cp.State = from.State
	cp.Next = from.Next
	cp.Interrupt = from.Interrupt
	cp.Interrupts = from.Interrupts
	cp.Resumes = from.Resumes
	cp.Answers = from.Answers
	cp.Done = from.Done
	cp.Nest = from.Nest
	cp.Counters = from.Counters
	cp.Meta.From, cp.Meta.Version = from.ID, from.Meta.Version
	if edit != nil {
		if cp.State, err = edit(from.State); err != nil {
			return nil, fmt.Errorf("fork %s/%s: edit state: %w", thread, id, err)
		}
	}
	if err := s.Put(ctx, cp); err != nil {
		return nil, fmt.Errorf("fork %s/%s to %s: %w", thread, id, dst, err)
	}
	return cp, nil
}
