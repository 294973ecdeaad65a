package server

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
)

// event is a graph event as the server keeps it for streaming: with its
// data encoded once, whoever reads it and in whatever format.
// On Postgres it is stored as JSON in loom_run_events.
type event struct {
	// Seq numbers a run's events from 1; it is the SSE event id.
	Seq  int        `json:"-"`
	Kind graph.Kind `json:"kind"`
	Node string     `json:"node,omitempty"`
	// Namespace is the path of the node running the subgraph the event
	// comes from (graph.Event.Namespace); "" for the agent's own graph.
	Namespace  string    `json:"ns,omitempty"`
	Step       int       `json:"step,omitempty"`
	Checkpoint string    `json:"checkpoint,omitempty"`
	Time       time.Time `json:"time"`
	// Data is the event's data as JSON: the state for KindState and
	// KindRunEnd, the Emit value for other kinds.
	Data json.RawMessage `json:"data,omitempty"`
	// Duration is a step's duration (KindNodeEnd).
	Duration time.Duration `json:"duration,omitempty"`
	// Interrupt is the question (KindInterrupt, and KindRunEnd when the
	// run ended waiting for it).
	Interrupt *checkpoint.Interrupt `json:"interrupt,omitempty"`
	// Interrupts are all the questions pending when there are several
	// (KindRunEnd).
	Interrupts []checkpoint.Interrupt `json:"interrupts,omitempty"`
	// Status is how the run ended (KindRunEnd: done or interrupted).
	Status graph.Status `json:"status,omitempty"`
	// Err is the error text (KindError); ErrCode its API code.
	Err     string `json:"err,omitempty"`
	ErrCode string `json:"err_code,omitempty"`
}

// terminal reports whether e ends its run.
func (e *event) terminal() bool { return e.Kind == graph.KindRunEnd || e.Kind == graph.KindError }

// runResult is the part of graph.Result that a run's end carries.
type runResult struct {
	State      json.RawMessage
	Status     graph.Status
	Interrupt  *checkpoint.Interrupt
	Interrupts []checkpoint.Interrupt
}

// newEvent encodes a graph event.
func newEvent(e graph.Event) event {
	ev := event{Kind: e.Kind, Node: e.Node, Namespace: e.Namespace, Step: e.Step, Checkpoint: e.Checkpoint, Time: e.Time}
	switch e.Kind {
	case graph.KindRunStart, graph.KindNodeStart:
	case graph.KindNodeEnd:
		ev.Duration, _ = e.Data.(time.Duration)
	case graph.KindInterrupt:
		ev.Interrupt, _ = e.Data.(*checkpoint.Interrupt)
	case graph.KindError:
		if e.Err != nil {
			ev.Err = Redact(e.Err.Error()) // clients read it: no owner ids, no temporary paths
		}
	case graph.KindRunEnd:
		// *graph.Result[S] has no JSON tags: its fields encode by name.
		var r runResult
		if b, err := json.Marshal(e.Data); err == nil && json.Unmarshal(b, &r) == nil {
			ev.Data, ev.Status, ev.Interrupt = r.State, r.Status, r.Interrupt
			if len(r.Interrupts) > 1 {
				ev.Interrupts = r.Interrupts
			}
		}
	default:
		if e.Data != nil {
			b, err := json.Marshal(e.Data)
			if err != nil {
				b, _ = json.Marshal("unencodable event data: " + err.Error())
			}
			ev.Data = b
		}
	}
	return ev
}

// broadcast holds a run's events for any number of readers, who may come
// and go while the run goes on. It keeps the last max events, so a reader
// that joins late replays what is still there; publishing never waits on
// a reader.
type broadcast struct {
	mu     sync.Mutex
	buf    []event
	seq    int // seq of the last event published
	max    int
	closed bool
	wake   chan struct{} // closed and replaced at every publish
}

func newBroadcast(max int) *broadcast {
	if max <= 0 {
		max = 4096
	}
	return &broadcast{max: max, wake: make(chan struct{})}
}

// publish appends e, numbering it, and wakes the readers. A terminal event
// closes the broadcast.
func (b *broadcast) publish(e event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.seq++
	e.Seq = b.seq
	if len(b.buf) >= b.max {
		n := copy(b.buf, b.buf[len(b.buf)-b.max/2:])
		clear(b.buf[n:])
		b.buf = b.buf[:n]
	}
	b.buf = append(b.buf, e)
	if e.terminal() {
		b.closed = true
	}
	close(b.wake)
	b.wake = make(chan struct{})
}

// since implements feed.
func (b *broadcast) since(_ context.Context, after int) ([]event, <-chan struct{}, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := len(b.buf)
	for i > 0 && b.buf[i-1].Seq > after {
		i--
	}
	out := append([]event(nil), b.buf[i:]...)
	return out, b.wake, b.closed, nil
}

// feed is where a run's events are read: the broadcast of a run that this
// process executes (SQLite mode), or the run's rows in loom_run_events,
// which every replica reads (Postgres mode).
type feed interface {
	// since returns the events after seq after (perhaps not all of them
	// yet), a channel closed when more may have come, and whether the run
	// has ended, its terminal event among those returned.
	since(ctx context.Context, after int) ([]event, <-chan struct{}, bool, error)
}
