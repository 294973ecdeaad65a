package checkpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
)

// Memory is a Saver that keeps checkpoints in memory: for tests and for
// runs that need no durability. The zero value is ready to use.
type Memory struct {
	mu      sync.RWMutex
	threads map[string][]*Checkpoint
}

// NewMemory returns an empty in-memory saver.
func NewMemory() *Memory { return &Memory{} }

// Put implements Saver.
func (m *Memory) Put(_ context.Context, cp *Checkpoint) error {
	c := clone(cp)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.threads == nil {
		m.threads = make(map[string][]*Checkpoint)
	}
	h := m.threads[cp.Thread]
	head, seq := "", int64(0)
	if len(h) > 0 {
		head, seq = h[len(h)-1].ID, h[len(h)-1].Seq+1
	}
	if cp.ParentID != head || cp.Seq != seq {
		return fmt.Errorf("put %s/%s (parent %q, seq %d; head %q): %w", cp.Thread, cp.ID, cp.ParentID, cp.Seq, head, ErrConflict)
	}
	m.threads[cp.Thread] = append(h, c)
	return nil
}

// Get implements Saver.
func (m *Memory) Get(_ context.Context, thread, id string) (*Checkpoint, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	h := m.threads[thread]
	if len(h) == 0 {
		return nil, fmt.Errorf("get %s: %w", thread, ErrNotFound)
	}
	if id == "" {
		return clone(h[len(h)-1]), nil
	}
	for _, cp := range h {
		if cp.ID == id {
			return clone(cp), nil
		}
	}
	return nil, fmt.Errorf("get %s/%s: %w", thread, id, ErrNotFound)
}

// List implements Saver.
func (m *Memory) List(_ context.Context, thread string, limit int) ([]*Checkpoint, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	h := m.threads[thread]
	n := len(h)
	if limit > 0 && limit < n {
		n = limit
	}
	out := make([]*Checkpoint, 0, n)
	for i := len(h) - 1; i >= len(h)-n; i-- {
		out = append(out, clone(h[i]))
	}
	return out, nil
}

// DeleteThread implements Saver.
func (m *Memory) DeleteThread(_ context.Context, thread string) error {
	m.mu.Lock()
	delete(m.threads, thread)
	m.mu.Unlock()
	return nil
}

// TrimHistory deletes the checkpoints of thread older than its newest
// keep (at least 1) and returns how many it deleted.
func (m *Memory) TrimHistory(_ context.Context, thread string, keep int) (int, error) {
	if keep < 1 {
		return 0, fmt.Errorf("trim %s: keep %d checkpoints, want at least 1", thread, keep)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.threads[thread]
	n := max(len(h)-keep, 0)
	if n > 0 {
		m.threads[thread] = slices.Clone(h[n:])
	}
	return n, nil
}

// clone copies cp so that callers cannot change stored history. The byte
// slices are shared: savers and the runtime never write into them.
func clone(cp *Checkpoint) *Checkpoint {
	c := *cp
	c.Next = slices.Clone(cp.Next)
	c.Resumes = slices.Clone(cp.Resumes)
	if cp.Counters != nil {
		c.Counters = make(map[string]int, len(cp.Counters))
		for k, v := range cp.Counters {
			c.Counters[k] = v
		}
	}
	if cp.Interrupt != nil {
		i := *cp.Interrupt
		c.Interrupt = &i
	}
	c.Interrupts = slices.Clone(cp.Interrupts)
	if cp.Answers != nil {
		c.Answers = make(map[string][]json.RawMessage, len(cp.Answers))
		for k, v := range cp.Answers {
			c.Answers[k] = slices.Clone(v)
		}
	}
	if cp.Done != nil {
		c.Done = make(map[string]json.RawMessage, len(cp.Done))
		for k, v := range cp.Done {
			c.Done[k] = slices.Clone(v)
		}
	}
	if cp.Nest != nil {
		n := *cp.Nest
		c.Nest = &n
	}
	return &c
}
