package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/loomkit/loom/llm"
)

// Redis is the long-term store of every API key on a Redis server, for
// deployments whose checkpoints live there (see checkpoint/redis). An
// item is a hash, expired by Redis itself a minute after its time to
// live (reads go by the time it holds); a sorted set per key orders its
// items by update time, and search scans it. It is safe for concurrent
// use.
type Redis struct {
	c      goredis.UniversalClient
	prefix string
	opts   Options
}

// NewRedis returns the store on c, its keys under prefix ("loom:store:"
// when empty).
func NewRedis(c goredis.UniversalClient, prefix string, opts Options) *Redis {
	if prefix == "" {
		prefix = "loom:store:"
	}
	if opts.MaxItems <= 0 {
		opts.MaxItems = DefaultMaxItems
	}
	if opts.now == nil {
		opts.now = time.Now
	}
	return &Redis{c: c, prefix: prefix, opts: opts}
}

// For returns the store of owner, the id of an API key ("" without
// keys).
func (r *Redis) For(owner string) Store { return &redisStore{r: r, owner: owner} }

type redisStore struct {
	r     *Redis
	owner string
}

// Keys: {prefix}{len(owner)}:{owner}:z is the owner's sorted set of
// members ns + "\x00" + key; {prefix}{len(owner)}:{owner}:i:{member} an
// item's hash. The owner's length keeps one owner's keys from being a
// prefix of another's.
func (s *redisStore) base() string {
	return s.r.prefix + strconv.Itoa(len(s.owner)) + ":" + s.owner + ":"
}
func (s *redisStore) zset() string              { return s.base() + "z" }
func (s *redisStore) item(member string) string { return s.base() + "i:" + member }

const redisSlack = time.Minute // Redis deletes an expired item this long after its time

func (s *redisStore) Put(ctx context.Context, namespace []string, key string, value json.RawMessage, opts PutOptions) error {
	ns, err := checkLabels("namespace", namespace, false, false)
	if err == nil {
		err = checkKey(key)
	}
	if err == nil {
		err = checkValue(value)
	}
	if err == nil {
		err = checkPut(opts)
	}
	if err != nil {
		return err
	}
	stored, body, vec, err := s.r.opts.stored(ctx, value, opts)
	if err != nil {
		return fmt.Errorf("store put %s: %w", key, err)
	}
	member := ns + "\x00" + key
	now := s.r.opts.now().UnixMilli()
	prev, err := s.read(ctx, member, now)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("store put %s: %w", key, err)
	}
	created := now
	if prev != nil {
		created = prev.created
	} else {
		n, err := s.r.c.ZCard(ctx, s.zset()).Result()
		if err != nil {
			return fmt.Errorf("store put %s: %w", key, err)
		}
		if n >= int64(s.r.opts.MaxItems) {
			return fmt.Errorf("store put %s: %w: it holds %d items, the most one API key may; delete some first", key, ErrFull, n)
		}
	}
	ttl, expires := opts.TTL.Milliseconds(), int64(0)
	if opts.TTL > 0 {
		ttl = max(ttl, 1)
		expires = now + ttl
	}
	_, err = s.r.c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		k := s.item(member)
		p.Del(ctx, k)
		p.HSet(ctx, k, "value", stored, "body", body, "vec", vec, "created", created, "updated", now, "ttl", ttl, "expires", expires)
		if ttl > 0 {
			p.PExpire(ctx, k, time.Duration(ttl)*time.Millisecond+redisSlack)
		}
		p.ZAdd(ctx, s.zset(), goredis.Z{Score: float64(now), Member: member})
		return nil
	})
	if err != nil {
		return fmt.Errorf("store put %s: %w", key, err)
	}
	return nil
}

// indexed is the text a query searches in value, and its embedding when
// there is an embedder.
func indexed(ctx context.Context, e llm.Embedder, value json.RawMessage, opts PutOptions) (string, []byte, error) {
	if opts.Index != nil && len(opts.Index) == 0 {
		return "", nil, nil
	}
	var v any
	if err := json.Unmarshal(value, &v); err != nil {
		return "", nil, invalid("value must be a JSON object")
	}
	body := indexText(v, opts.Index)
	if e == nil || body == "" {
		return body, nil, nil
	}
	vs, err := e.Embed(ctx, []string{body})
	if err != nil || len(vs) != 1 {
		return "", nil, fmt.Errorf("%w: %v", ErrEmbed, err)
	}
	return body, packVec(vs[0]), nil
}

// read returns the item member, or ErrNotFound when it is missing or has
// expired (its member is then removed from the sorted set).
func (s *redisStore) read(ctx context.Context, member string, now int64) (*row, error) {
	rows, err := s.readAll(ctx, []string{member}, now)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, ErrNotFound
	}
	return &rows[0], nil
}

// readAll returns the items of members that exist, in order, and removes
// the members of those that do not.
func (s *redisStore) readAll(ctx context.Context, members []string, now int64) ([]row, error) {
	cmds := make([]*goredis.SliceCmd, len(members))
	_, err := s.r.c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, m := range members {
			cmds[i] = p.HMGet(ctx, s.item(m), "value", "body", "vec", "created", "updated", "ttl", "expires")
		}
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		return nil, err
	}
	var out []row
	var gone []any
	for i, c := range cmds {
		f := c.Val()
		if len(f) != 7 || f[0] == nil {
			gone = append(gone, members[i])
			continue
		}
		str := func(x any) string { s, _ := x.(string); return s }
		num := func(x any) int64 { n, _ := strconv.ParseInt(str(x), 10, 64); return n }
		r := row{value: str(f[0]), body: str(f[1]), vec: []byte(str(f[2])), created: num(f[3]), updated: num(f[4]), ttl: num(f[5])}
		if exp := num(f[6]); exp > 0 && exp <= now {
			gone = append(gone, members[i])
			continue
		}
		r.ns, r.key, _ = strings.Cut(members[i], "\x00")
		if err := r.open(s.r.opts.Codec); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if len(gone) > 0 {
		s.r.c.ZRem(ctx, s.zset(), gone...) // the hash goes with its Redis expiry
	}
	return out, nil
}

// refresh moves the expiry of the rows that have a time to live.
func (s *redisStore) refresh(ctx context.Context, rows []row, now int64) error {
	_, err := s.r.c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for _, r := range rows {
			if r.ttl > 0 {
				k := s.item(r.ns + "\x00" + r.key)
				p.HSet(ctx, k, "expires", now+r.ttl)
				p.PExpire(ctx, k, time.Duration(r.ttl)*time.Millisecond+redisSlack)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store refresh ttl: %w", err)
	}
	return nil
}

func (s *redisStore) Get(ctx context.Context, namespace []string, key string, noRefresh bool) (*Item, error) {
	ns, err := checkLabels("namespace", namespace, false, false)
	if err == nil {
		err = checkKey(key)
	}
	if err != nil {
		return nil, err
	}
	now := s.r.opts.now().UnixMilli()
	r, err := s.read(ctx, ns+"\x00"+key, now)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("store get %s in %s: %w", key, strings.Join(namespace, "."), ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store get %s: %w", key, err)
	}
	if !noRefresh {
		if err := s.refresh(ctx, []row{*r}, now); err != nil {
			return nil, err
		}
	}
	return &Item{Namespace: slices.Clone(namespace), Key: key, Value: json.RawMessage(r.value), CreatedAt: fromMS(r.created), UpdatedAt: fromMS(r.updated)}, nil
}

func (s *redisStore) Delete(ctx context.Context, namespace []string, key string) error {
	ns, err := checkLabels("namespace", namespace, false, false)
	if err == nil {
		err = checkKey(key)
	}
	if err != nil {
		return err
	}
	member := ns + "\x00" + key
	_, err = s.r.c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.Del(ctx, s.item(member))
		p.ZRem(ctx, s.zset(), member)
		return nil
	})
	if err != nil {
		return fmt.Errorf("store delete %s: %w", key, err)
	}
	return nil
}

// members returns the owner's members under the stored prefix p, newest
// first, at most n.
func (s *redisStore) members(ctx context.Context, p string, n int) ([]string, error) {
	all, err := s.r.c.ZRevRange(ctx, s.zset(), 0, -1).Result()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range all {
		if strings.HasPrefix(m, p) {
			out = append(out, m)
			if len(out) == n {
				break
			}
		}
	}
	return out, nil
}

func (s *redisStore) Search(ctx context.Context, prefix []string, opts SearchOptions) ([]Item, error) {
	req, err := checkSearch(ctx, s.r.opts.Embedder, prefix, opts)
	if err != nil {
		return nil, err
	}
	p, limit, offset, filter, query, qvec := req.prefix, req.limit, req.offset, req.filter, req.query, req.qvec
	now := s.r.opts.now().UnixMilli()
	members, err := s.members(ctx, p, maxScan)
	if err != nil {
		return nil, fmt.Errorf("store search: %w", err)
	}
	rows, err := s.readAll(ctx, members, now)
	if err != nil {
		return nil, fmt.Errorf("store search: %w", err)
	}
	found := rows[:0]
	for _, r := range rows {
		if len(filter) == 0 || filter.match(r.value) {
			found = append(found, r)
		}
	}
	var scores []float64
	if query != "" {
		found, scores = rank(found, query, qvec)
	}
	lo, hi := min(offset, len(found)), min(offset+limit, len(found))
	found = found[lo:hi]
	out := make([]Item, len(found))
	for i, r := range found {
		out[i] = Item{Namespace: split(r.ns), Key: r.key, Value: json.RawMessage(r.value), CreatedAt: fromMS(r.created), UpdatedAt: fromMS(r.updated)}
		if scores != nil {
			out[i].Score = &scores[lo+i]
		}
	}
	if !opts.NoRefresh {
		if err := s.refresh(ctx, found, now); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *redisStore) ListNamespaces(ctx context.Context, opts NamespaceOptions) ([][]string, error) {
	limit, offset, err := checkNamespaces(opts)
	if err != nil {
		return nil, err
	}
	fixed := opts.Prefix
	if i := slices.Index(fixed, "*"); i >= 0 {
		fixed = fixed[:i]
	}
	p, _ := checkLabels("prefix", fixed, true, false)
	members, err := s.members(ctx, p, -1)
	if err != nil {
		return nil, fmt.Errorf("store list namespaces: %w", err)
	}
	rows, err := s.readAll(ctx, members, s.r.opts.now().UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("store list namespaces: %w", err)
	}
	var out [][]string
	seen := map[string]bool{}
	for _, r := range rows {
		labels := split(r.ns)
		if !matches(labels, opts.Prefix) || !matches(reversed(labels), reversed(opts.Suffix)) {
			continue
		}
		if opts.MaxDepth > 0 && len(labels) > opts.MaxDepth {
			labels = labels[:opts.MaxDepth]
		}
		if j := strings.Join(labels, "."); !seen[j] {
			seen[j] = true
			out = append(out, labels)
		}
	}
	slices.SortFunc(out, func(a, b []string) int { return slices.Compare(a, b) })
	lo, hi := min(offset, len(out)), min(offset+limit, len(out))
	return out[lo:hi], nil
}
