package graph

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"
)

// KindCached is the event of a step whose result came from the node's
// cache (see Cache): the node function did not run. It comes between the
// step's KindNodeStart and KindNodeEnd; Data is the cache key (string).
const KindCached Kind = "cached"

// defaultCacheSize is how many results a node's in-memory cache keeps
// when its policy does not say.
const defaultCacheSize = 1024

// CachePolicy says how long and how many of a pure node's results are
// kept for reuse (LangGraph's CachePolicy).
type CachePolicy struct {
	// TTL is how long a result is reused after it was computed; it must
	// be positive.
	TTL time.Duration
	// Size bounds the results kept in memory (default 1,024); the least
	// recently used go first. Unused with Store.
	Size int
	// Store, when set, keeps the results instead of the node's own memory:
	// a store shared by replicas shares their results. Keys start with the
	// graph's name and version and the node's name.
	Store CacheStore
}

// CacheStore keeps cached node results, as JSON, each for a time. Its
// errors never fail a run: a Get that fails is a miss, a Set that fails
// is logged.
type CacheStore interface {
	// Get returns the value stored under key and true, or false when
	// there is none or it expired.
	Get(ctx context.Context, key string) ([]byte, bool, error)
	// Set stores value under key for ttl.
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
}

// Cache makes a node marked Pure reuse its result for an input it has
// seen within p.TTL: the step counts and is checkpointed as usual, but
// the node function does not run, and the step emits KindCached. The
// input is the state the node is given, keyed by a hash of its JSON (or
// by CacheKey). Results live in the compiled graph's memory unless
// p.Store says otherwise, so replicas do not share them; a cached
// result comes back through JSON, as from a checkpoint. Two runs that
// miss at once both call the node. Cache on a node that is not Pure, or
// with no TTL, is a compile error.
func Cache(p CachePolicy) NodeOption { return func(n *nodeSpec) { n.cache = &p } }

// CacheKey makes a cached node key its results by key(state) instead of a
// hash of the state's JSON: the part of the state the node reads, say.
// S must be the graph's state type (a compile error otherwise).
func CacheKey[S any](key func(S) string) NodeOption {
	return func(n *nodeSpec) { n.cacheKey = key }
}

// checkCaches adds to errs what is wrong with the nodes' cache options.
func (g *Graph[S]) checkCaches(errs []error) []error {
	for _, n := range g.nodes {
		p := n.cache
		if p == nil {
			if n.cacheKey != nil {
				errs = append(errs, fmt.Errorf("node %q: CacheKey without Cache", n.name))
			}
			continue
		}
		if !n.pure {
			errs = append(errs, fmt.Errorf("node %q: Cache needs a node marked Pure (its result must depend on its input alone)", n.name))
		}
		if p.TTL <= 0 {
			errs = append(errs, fmt.Errorf("node %q: Cache needs a positive TTL, not %s", n.name, p.TTL))
		}
		if p.Size < 0 {
			errs = append(errs, fmt.Errorf("node %q: Cache size %d is negative", n.name, p.Size))
		}
		if k, ok := n.cacheKey.(func(S) string); n.cacheKey != nil && (!ok || k == nil) {
			errs = append(errs, fmt.Errorf("node %q: CacheKey takes %T, not a func of the graph's state", n.name, n.cacheKey))
		}
	}
	return errs
}

// memo is a node's cache as the runtime uses it.
type memo[S any] struct {
	store  CacheStore
	ttl    time.Duration
	key    func(S) string // nil: a hash of the state's JSON
	prefix string         // "graph@version/node/"
	jump   bool           // a Jump node's: entries keep its choice
}

// memoFor returns node n's cache, or nil when it has none.
func (c *Compiled[S]) memoFor(n *node[S]) *memo[S] {
	p := n.cache
	if p == nil {
		return nil
	}
	m := &memo[S]{store: p.Store, ttl: p.TTL, jump: n.jump != nil,
		prefix: c.name + "@" + strconv.Itoa(max(c.src.version, 1)) + "/" + n.name + "/"}
	if m.store == nil {
		size := p.Size
		if size == 0 {
			size = defaultCacheSize
		}
		m.store = newLRU(size)
	}
	m.key, _ = n.cacheKey.(func(S) string)
	return m
}

// cacheEntry is a Jump node's cached result: the state it returned and
// where it chose to go. A plain node's is the state's JSON alone.
type cacheEntry struct {
	State json.RawMessage `json:"state"`
	Next  string          `json:"next,omitempty"`
}

// call runs node n on the run's state, or takes its result from the
// node's cache.
func (r *runner[S]) call(n *cnode[S]) (S, string, error) {
	m := n.memo
	if m == nil {
		return r.c.call(r.ctx, r.rc, n, r.state)
	}
	key, err := m.keyOf(r.ctx, n.name, r.state)
	if err != nil {
		return r.state, "", fmt.Errorf("node %s: cache key: %w", n.name, err)
	}
	if out, to, ok := m.get(r.ctx, key); ok {
		r.send(KindCached, r.rc.node, "", key)
		return out, to, nil
	}
	out, to, err := r.c.call(r.ctx, r.rc, n, r.state)
	if err == nil {
		m.put(r.ctx, key, out, to)
	}
	return out, to, err
}

// keyOf returns the cache key of state s for node name: a panic in the
// key function fails the run, as one in the node would.
func (m *memo[S]) keyOf(ctx context.Context, name string, s S) (key string, err error) {
	if m.key != nil {
		defer func() {
			if p := recover(); p != nil {
				err = recovered(ctx, name, p)
			}
		}()
		return m.prefix + m.key(s), nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("encode state: %w", err)
	}
	sum := sha256.Sum256(b)
	var h [2 * sha256.Size]byte
	hex.Encode(h[:], sum[:])
	return m.prefix + string(h[:]), nil
}

func (m *memo[S]) get(ctx context.Context, key string) (out S, to string, ok bool) {
	b, ok, err := m.store.Get(ctx, key)
	if err != nil {
		slog.WarnContext(ctx, "graph: node cache read failed; running the node", "key", key, "err", err)
		return out, "", false
	}
	if !ok {
		return out, "", false
	}
	var next string
	if m.jump {
		var e cacheEntry
		err = json.Unmarshal(b, &e)
		b, next = e.State, e.Next
	}
	if err == nil {
		err = json.Unmarshal(b, &out)
	}
	if err != nil {
		slog.WarnContext(ctx, "graph: node cache holds what is not this node's result; running the node", "key", key, "err", err)
		var zero S
		return zero, "", false
	}
	return out, next, true
}

func (m *memo[S]) put(ctx context.Context, key string, out S, to string) {
	b, err := json.Marshal(out)
	if err == nil && m.jump {
		b, err = json.Marshal(cacheEntry{State: b, Next: to})
	}
	if err == nil {
		err = m.store.Set(ctx, key, b, m.ttl)
	}
	if err != nil {
		slog.WarnContext(ctx, "graph: node cache write failed", "key", key, "err", err)
	}
}

// lru is the in-memory CacheStore: at most size values, the least
// recently used dropped first, each until it expires.
type lru struct {
	mu    sync.Mutex
	size  int
	order list.List // of *lruItem, most recently used first
	items map[string]*list.Element
	now   func() time.Time
}

type lruItem struct {
	key     string
	value   []byte
	expires time.Time
}

func newLRU(size int) *lru {
	return &lru{size: size, items: make(map[string]*list.Element), now: time.Now}
}

// Get implements CacheStore.
func (l *lru) Get(_ context.Context, key string) ([]byte, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	el, ok := l.items[key]
	if !ok {
		return nil, false, nil
	}
	it := el.Value.(*lruItem)
	if !l.now().Before(it.expires) {
		l.order.Remove(el)
		delete(l.items, key)
		return nil, false, nil
	}
	l.order.MoveToFront(el)
	return it.value, true, nil
}

// Set implements CacheStore.
func (l *lru) Set(_ context.Context, key string, value []byte, ttl time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	expires := l.now().Add(ttl)
	if el, ok := l.items[key]; ok {
		it := el.Value.(*lruItem)
		it.value, it.expires = value, expires
		l.order.MoveToFront(el)
		return nil
	}
	l.items[key] = l.order.PushFront(&lruItem{key: key, value: value, expires: expires})
	for l.order.Len() > l.size {
		last := l.order.Back()
		l.order.Remove(last)
		delete(l.items, last.Value.(*lruItem).key)
	}
	return nil
}
