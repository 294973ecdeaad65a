package stored

import (
	"github.com/loomkit/loom/checkpoint"

	"bytes"
	"encoding/binary"
	"fmt"
	"sync"
)

// Diff encodes next as a splice of prev: the length of the prefix they
// share, the length of the suffix they share, and the bytes in between.
// Appending a message to a list in state, or changing one field, yields a
// delta the size of the change rather than of the whole state. Comparing
// is two memory scans, so Diff costs far less than the JSON encoding that
// produced its inputs.
func Diff(prev, next []byte) []byte {
	p := commonPrefix(prev, next)
	s := commonSuffix(prev[p:], next[p:])
	mid := next[p : len(next)-s]
	out := make([]byte, 0, 2*binary.MaxVarintLen64+len(mid))
	out = binary.AppendUvarint(out, uint64(p))
	out = binary.AppendUvarint(out, uint64(s))
	return append(out, mid...)
}

// Patch applies a delta made by Diff to prev. A delta that does not fit
// prev gives an error wrapping checkpoint.ErrCorrupt.
func Patch(prev, delta []byte) ([]byte, error) {
	p, n := binary.Uvarint(delta)
	if n <= 0 {
		return nil, fmt.Errorf("%w: delta prefix length unreadable", checkpoint.ErrCorrupt)
	}
	delta = delta[n:]
	s, n := binary.Uvarint(delta)
	if n <= 0 {
		return nil, fmt.Errorf("%w: delta suffix length unreadable", checkpoint.ErrCorrupt)
	}
	mid := delta[n:]
	if p > uint64(len(prev)) || s > uint64(len(prev))-p {
		return nil, fmt.Errorf("%w: delta keeps %d+%d bytes of a %d-byte base", checkpoint.ErrCorrupt, p, s, len(prev))
	}
	out := make([]byte, 0, int(p)+len(mid)+int(s))
	out = append(out, prev[:p]...)
	out = append(out, mid...)
	return append(out, prev[len(prev)-int(s):]...), nil
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	// Compare in 64-byte blocks first; bytes.Equal is vectorised.
	i := 0
	for i+64 <= n && bytes.Equal(a[i:i+64], b[i:i+64]) {
		i += 64
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

func commonSuffix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i+64 <= n && bytes.Equal(a[len(a)-i-64:len(a)-i], b[len(b)-i-64:len(b)-i]) {
		i += 64
	}
	for i < n && a[len(a)-1-i] == b[len(b)-1-i] {
		i++
	}
	return i
}

// maxChainDeltas bounds how many deltas follow a full state: each delta in
// a chain costs at least 1/maxChainDeltas of the state it produces (see
// ChainCost), so replaying a chain never takes more than about that many
// copies of the state, however small the deltas are.
const maxChainDeltas = 64

// deltaCacheMaxBytes bounds the states a DeltaCache holds. Past it, entries
// of other threads are dropped; a dropped entry only costs one full write.
const deltaCacheMaxBytes = 64 << 20

// ChainCost is what storing delta, which produces a state of stateLen bytes,
// adds to a delta chain: the delta's length plus 1/64 of the state. Encode
// stores a full state once the chain since the last full state would reach
// the state's size. Savers that rebuild a chain on read sum ChainCost over
// the deltas they applied to get the chain value for Remember.
func ChainCost(delta []byte, stateLen int) int {
	return len(delta) + stateLen/maxChainDeltas
}

// DeltaCache remembers the last state a saver wrote or read per thread, so
// the next Put can store a delta against its parent instead of the whole
// state. Checkpoints are immutable, so an entry keyed by checkpoint id is
// never stale; a miss only means the next Put stores the full state.
//
// A full state is stored again once the chain of deltas since the last full
// state costs as much as the state (see ChainCost): when the deltas add up
// to its size, or after about 64 deltas. So reading any checkpoint reads
// at most about twice one full state and replays about 64 deltas at most. The
// cache holds at most 64 MiB of states, dropping other threads' entries
// past that. The zero value is ready to use.
type DeltaCache struct {
	mu   sync.Mutex
	m    map[string]deltaEntry
	size int // bytes of state held in m
}

type deltaEntry struct {
	id    string
	state []byte
	chain int // bytes of deltas stored since the last full state
}

// Encode returns what to store for state, whose parent is parentID on
// thread: a delta (delta true) when the parent's state is cached and the
// chain is short enough, else the full state. chain is the value to pass
// to Remember once the write succeeds.
func (c *DeltaCache) Encode(thread, parentID string, state []byte) (blob []byte, delta bool, chain int) {
	c.mu.Lock()
	e, ok := c.m[thread]
	c.mu.Unlock()
	if !ok || parentID == "" || e.id != parentID {
		return state, false, 0
	}
	d := Diff(e.state, state)
	chain = e.chain + ChainCost(d, len(state))
	if chain >= len(state) {
		return state, false, 0
	}
	return d, true, chain
}

// Remember records that checkpoint id of thread has state, with chain the
// sum of ChainCost over the deltas since its last full state (0 for a full
// state). The cache keeps state as is: it must not change afterwards.
func (c *DeltaCache) Remember(thread, id string, state []byte, chain int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]deltaEntry)
	}
	c.size += len(state) - len(c.m[thread].state)
	c.m[thread] = deltaEntry{id: id, state: state, chain: chain}
	if c.size <= deltaCacheMaxBytes {
		return
	}
	// Drop other threads' entries (in map order, which is as good as any)
	// until the cache fits again.
	for t, e := range c.m {
		if t != thread {
			c.size -= len(e.state)
			delete(c.m, t)
		}
		if c.size <= deltaCacheMaxBytes {
			return
		}
	}
}

// Cached returns the state cached for checkpoint id of thread, if that
// checkpoint is the one cached. The state is the cache's own: the caller
// must not change it.
func (c *DeltaCache) Cached(thread, id string) (state []byte, ok bool) {
	c.mu.Lock()
	e, ok := c.m[thread]
	c.mu.Unlock()
	if !ok || e.id != id {
		return nil, false
	}
	return e.state, true
}

// Forget drops what is cached for thread.
func (c *DeltaCache) Forget(thread string) {
	c.mu.Lock()
	c.size -= len(c.m[thread].state)
	delete(c.m, thread)
	c.mu.Unlock()
}
