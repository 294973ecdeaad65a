// Package redis provides a checkpoint.Saver that keeps checkpoints in
// Redis, through go-redis.
//
// Each thread has three keys, all under one hash tag so that they share a
// cluster slot:
//
//	<prefix>{<thread>}:log   list: the record of the checkpoint with seq i at index i
//	<prefix>{<thread>}:ids   hash: checkpoint id -> seq
//	<prefix>{<thread>}:full  sorted set: the seqs whose record holds a full state
//
// The prefix is "loom:" unless WithPrefix says otherwise. A Put is one Lua
// script (EVALSHA) that checks the parent is the head at seq - 1 and appends,
// atomically, so compare-and-set holds across any number of savers and
// processes; a read is one script too, which returns the records from the
// last full state up to the wanted checkpoint. Records hold a full state or
// a delta against the parent's state (see stored.DeltaCache), with a
// full state every so often, so a step that appends a message to a long
// conversation stores about the size of the message. Wrapped in
// checkpoint.Sealed, the saver makes its deltas in the clear and seals
// each state or delta it stores (see SealBlobs).
//
// Redis keeps its data in memory and writes it to disk as it is configured
// to (RDB snapshots, an append-only file, or not at all): a checkpoint is
// as durable as that configuration makes it.
package redis

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	goredis "github.com/redis/go-redis/v9"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/checkpoint/internal/stored"
	"github.com/loomkit/loom/seal"
)

// DefaultPrefix starts every key the saver uses unless WithPrefix is given.
const DefaultPrefix = "loom:"

// putScript is the compare-and-set. It appends the record when the list is
// as long as seq and either the thread is empty and there is no parent, or
// the parent is the checkpoint at seq - 1, which is then the head. It
// returns 1 when it stored the record, 0 on a conflict, -1 when the id is
// already in the thread.
var putScript = goredis.NewScript(`
local n = redis.call('LLEN', KEYS[1])
if tonumber(ARGV[1]) ~= n then return 0 end
if n == 0 then
	if ARGV[3] ~= '' then return 0 end
else
	local p = redis.call('HGET', KEYS[2], ARGV[3])
	if not p or tonumber(p) ~= n - 1 then return 0 end
end
if redis.call('HSETNX', KEYS[2], ARGV[2], ARGV[1]) == 0 then return -1 end
redis.call('RPUSH', KEYS[1], ARGV[5])
if ARGV[4] == '1' then redis.call('ZADD', KEYS[3], n, n) end
return 1
`)

// getScript reads checkpoints: the head (ARGV[1] 'h'), one by id ('i',
// ARGV[2] the id), the last ARGV[2] ('l') or all ('a'). It returns nothing
// when there is no such checkpoint, else {base, lo, hi, records...}: the
// records from seq base, the last full state at or before lo, to seq hi,
// where lo..hi are the wanted checkpoints.
var getScript = goredis.NewScript(`
local lo, hi
if ARGV[1] == 'i' then
	local s = redis.call('HGET', KEYS[2], ARGV[2])
	if not s then return {} end
	lo = tonumber(s)
	hi = lo
else
	local n = redis.call('LLEN', KEYS[1])
	if n == 0 then return {} end
	hi = n - 1
	if ARGV[1] == 'h' then
		lo = hi
	elseif ARGV[1] == 'l' then
		lo = math.max(0, n - tonumber(ARGV[2]))
	else
		lo = 0
	end
	-- After a trim (see trimScript) the first kept record is the
	-- lowest full one; the records before it are gone.
	local first = redis.call('ZRANGE', KEYS[3], 0, 0)
	if #first > 0 and tonumber(first[1]) > lo then lo = tonumber(first[1]) end
end
local base = 0
local f = redis.call('ZREVRANGEBYSCORE', KEYS[3], lo, '-inf', 'LIMIT', 0, 1)
if #f > 0 then base = tonumber(f[1]) end
local out = {base, lo, hi}
for _, r in ipairs(redis.call('LRANGE', KEYS[1], base, hi)) do
	out[#out + 1] = r
end
return out
`)

// trimScript drops the records of the seqs before ARGV[1], whose record
// becomes ARGV[3], a full one, if it still holds checkpoint ARGV[2]: the
// dropped records become empty strings (the log stays indexed by seq),
// their ids leave the index and their seqs the full set, whose lowest
// seq is then the first kept (getScript starts there). It returns how
// many it dropped, or -1 when the record changed.
var trimScript = goredis.NewScript(`
local keep = tonumber(ARGV[1])
if redis.call('HGET', KEYS[2], ARGV[2]) ~= ARGV[1] then return -1 end
local from = 0
local first = redis.call('ZRANGE', KEYS[3], 0, 0)
if #first > 0 then from = tonumber(first[1]) end
if from >= keep then return 0 end
local ids = {}
local all = redis.call('HGETALL', KEYS[2])
for i = 1, #all, 2 do
	if tonumber(all[i + 1]) < keep then ids[#ids + 1] = all[i] end
end
for i = 1, #ids, 1000 do
	redis.call('HDEL', KEYS[2], unpack(ids, i, math.min(i + 999, #ids)))
end
for i = from, keep - 1 do redis.call('LSET', KEYS[1], i, '') end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. keep)
redis.call('ZADD', KEYS[3], keep, keep)
redis.call('LSET', KEYS[1], keep, ARGV[3])
return keep - from
`)

// Option configures a Saver.
type Option func(*Saver)

// WithPrefix sets the prefix of every key the saver uses, so that savers
// with different prefixes share a database without seeing each other's
// threads. It should not contain '{' or '}', which would break the hash
// tag that keeps a thread's keys in one cluster slot.
func WithPrefix(prefix string) Option {
	return func(s *Saver) { s.prefix = prefix }
}

// Saver is a checkpoint.Saver over Redis. It is safe for concurrent use;
// commands run on go-redis's pool of connections.
type Saver struct {
	client *goredis.Client
	prefix string
	cache  stored.DeltaCache
	codec  seal.Codec // seals the states and deltas stored (see SealBlobs)

	closeOnce sync.Once
	closeErr  error
}

var _ checkpoint.BlobSealer = (*Saver)(nil)

// SealBlobs makes the saver seal every state and delta it stores with c,
// and open each one it reads (those stored in the clear are read as they
// are); checkpoint.Sealed calls it. Call it once, before the saver is
// used.
func (s *Saver) SealBlobs(c seal.Codec) { s.codec = c }

// Open connects to the Redis server at url (redis://, rediss:// or
// unix://, as go-redis's ParseURL takes), checks that it answers and loads
// the saver's scripts. Deadlines of the contexts given to the Saver's
// methods bound their commands. Close the Saver when done with it.
func Open(ctx context.Context, url string, opts ...Option) (*Saver, error) {
	o, err := goredis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("checkpoint redis open: parse url: %w", err)
	}
	o.ContextTimeoutEnabled = true
	s := &Saver{client: goredis.NewClient(o), prefix: DefaultPrefix}
	for _, opt := range opts {
		opt(s)
	}
	where := fmt.Sprintf("%s/%d", o.Addr, o.DB)
	if err := s.client.Ping(ctx).Err(); err != nil {
		s.client.Close()
		return nil, fmt.Errorf("checkpoint redis open %s: %w", where, err)
	}
	for _, sc := range []*goredis.Script{putScript, getScript, trimScript} {
		if err := sc.Load(ctx, s.client).Err(); err != nil {
			s.client.Close()
			return nil, fmt.Errorf("checkpoint redis open %s: load script: %w", where, err)
		}
	}
	return s, nil
}

// Close closes the client's connections. The Saver must not be used
// afterwards; Close may be called again and returns the first call's
// result.
func (s *Saver) Close() error {
	s.closeOnce.Do(func() {
		if err := s.client.Close(); err != nil {
			s.closeErr = fmt.Errorf("checkpoint redis close: %w", err)
		}
	})
	return s.closeErr
}

// keys returns the keys of thread: its log, its id index and its set of
// full records, in the order the scripts take them.
func (s *Saver) keys(thread string) []string {
	base := s.prefix + "{" + thread + "}:"
	return []string{base + "log", base + "ids", base + "full"}
}

// Put implements checkpoint.Saver.
func (s *Saver) Put(ctx context.Context, cp *checkpoint.Checkpoint) error {
	if cp.ID == "" {
		return fmt.Errorf("checkpoint redis put %s: empty checkpoint id", cp.Thread)
	}
	meta, err := stored.EncodeMeta(cp)
	if err != nil {
		return fmt.Errorf("checkpoint redis put %s/%s: encode meta: %w", cp.Thread, cp.ID, err)
	}
	state := cp.State
	if state == nil {
		state = []byte{}
	}
	blob, delta, chain := s.cache.Encode(cp.Thread, cp.ParentID, state)
	if blob, err = stored.SealBlob(s.codec, blob); err != nil {
		return fmt.Errorf("checkpoint redis put %s/%s: %w", cp.Thread, cp.ID, err)
	}
	rec := appendRecord(make([]byte, 0, 64+len(cp.ID)+len(cp.ParentID)+len(meta)+len(blob)), cp, !delta, meta, blob)
	full := "1"
	if delta {
		full = "0"
	}
	res, err := putScript.Run(ctx, s.client, s.keys(cp.Thread), cp.Seq, cp.ID, cp.ParentID, full, rec).Int64()
	if err != nil {
		return fmt.Errorf("checkpoint redis put %s/%s: %w", cp.Thread, cp.ID, err)
	}
	switch res {
	case 1:
	case 0:
		return fmt.Errorf("checkpoint redis put %s/%s (parent %q, seq %d): %w", cp.Thread, cp.ID, cp.ParentID, cp.Seq, checkpoint.ErrConflict)
	case -1:
		return fmt.Errorf("checkpoint redis put %s/%s: id already used in the thread", cp.Thread, cp.ID)
	default:
		return fmt.Errorf("checkpoint redis put %s/%s: script returned %d", cp.Thread, cp.ID, res)
	}
	// A copy: the caller may reuse cp.State, and the cache must keep
	// exactly what the next delta is made against.
	s.cache.Remember(cp.Thread, cp.ID, bytes.Clone(state), chain)
	return nil
}

// Get implements checkpoint.Saver.
func (s *Saver) Get(ctx context.Context, thread, id string) (*checkpoint.Checkpoint, error) {
	var r *stored.Resolver
	var err error
	if id == "" {
		r, err = s.read(ctx, thread, "h", "")
	} else {
		r, err = s.read(ctx, thread, "i", id)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint redis get %s/%s: %w", thread, id, err)
	}
	cp := r.Last(&s.cache, id == "")
	if cp == nil {
		return nil, fmt.Errorf("checkpoint redis get %s/%s: %w", thread, id, checkpoint.ErrNotFound)
	}
	return cp, nil
}

// List implements checkpoint.Saver.
func (s *Saver) List(ctx context.Context, thread string, limit int) ([]*checkpoint.Checkpoint, error) {
	var r *stored.Resolver
	var err error
	if limit > 0 {
		r, err = s.read(ctx, thread, "l", limit)
	} else {
		r, err = s.read(ctx, thread, "a", "")
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint redis list %s: %w", thread, err)
	}
	return r.NewestFirst(&s.cache), nil
}

// DeleteThread implements checkpoint.Saver.
func (s *Saver) DeleteThread(ctx context.Context, thread string) error {
	defer s.cache.Forget(thread)
	if err := s.client.Del(ctx, s.keys(thread)...).Err(); err != nil {
		return fmt.Errorf("checkpoint redis delete %s: %w", thread, err)
	}
	return nil
}

// TrimHistory deletes the checkpoints of thread older than its newest
// keep (at least 1) and returns how many it deleted. The oldest kept gets
// its full state, so that reading it needs no record before it. Puts only
// append, so it is safe beside a run that goes on on the thread.
func (s *Saver) TrimHistory(ctx context.Context, thread string, keep int) (int, error) {
	if keep < 1 {
		return 0, fmt.Errorf("checkpoint redis trim %s: keep %d checkpoints, want at least 1", thread, keep)
	}
	kept, err := s.List(ctx, thread, keep)
	if err != nil || len(kept) < keep {
		return 0, err
	}
	oldest := kept[len(kept)-1]
	meta, err := stored.EncodeMeta(oldest)
	if err != nil {
		return 0, fmt.Errorf("checkpoint redis trim %s: encode meta: %w", thread, err)
	}
	full, err := stored.SealBlob(s.codec, oldest.State)
	if err != nil {
		return 0, fmt.Errorf("checkpoint redis trim %s: %w", thread, err)
	}
	rec := appendRecord(nil, oldest, true, meta, full)
	n, err := trimScript.Run(ctx, s.client, s.keys(thread), oldest.Seq, oldest.ID, rec).Int64()
	if err != nil {
		return 0, fmt.Errorf("checkpoint redis trim %s: %w", thread, err)
	}
	if n < 0 {
		return 0, fmt.Errorf("checkpoint redis trim %s: checkpoint %s changed meanwhile: %w", thread, oldest.ID, checkpoint.ErrConflict)
	}
	return int(n), nil
}

// read runs getScript in the given mode and rebuilds the checkpoints it
// returns.
func (s *Saver) read(ctx context.Context, thread, mode string, arg any) (*stored.Resolver, error) {
	vals, err := getScript.Run(ctx, s.client, s.keys(thread), mode, arg).Slice()
	if err != nil {
		return nil, err
	}
	id := ""
	if mode == "i" {
		id, _ = arg.(string)
	}
	return resolveReply(&stored.Resolver{Thread: thread, Codec: s.codec}, id, vals)
}

// resolveReply rebuilds checkpoints into r from getScript's reply to a
// read of r.Thread (of checkpoint id, when not empty).
func resolveReply(r *stored.Resolver, id string, vals []any) (*stored.Resolver, error) {
	thread := r.Thread
	if len(vals) == 0 {
		return r, nil
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("checkpoint %s/%s: %w: %s", thread, id, checkpoint.ErrCorrupt, fmt.Sprintf(format, args...))
	}
	if len(vals) < 3 {
		return nil, bad("read script returned %d values", len(vals))
	}
	var bounds [3]int64
	for i := range bounds {
		n, ok := vals[i].(int64)
		if !ok {
			return nil, bad("read script returned %T for a seq", vals[i])
		}
		bounds[i] = n
	}
	base, lo, hi := bounds[0], bounds[1], bounds[2]
	recs := vals[3:]
	var rw stored.Row
	for i, v := range recs {
		seq := base + int64(i)
		str, ok := v.(string)
		if !ok {
			return nil, bad("record at seq %d is a %T", seq, v)
		}
		if err := parseRecord([]byte(str), &rw); err != nil {
			return nil, fmt.Errorf("checkpoint %s/%s (seq %d): %w: %w", thread, rw.ID, seq, checkpoint.ErrCorrupt, err)
		}
		if rw.Seq != seq {
			return nil, fmt.Errorf("checkpoint %s/%s (seq %d): %w: record says seq %d", thread, rw.ID, seq, checkpoint.ErrCorrupt, rw.Seq)
		}
		rw.Keep = seq >= lo
		if err := r.Add(&rw); err != nil {
			return nil, err
		}
	}
	if int64(len(recs)) != hi-base+1 {
		return nil, bad("seqs %d to %d wanted, %d records stored", base, hi, len(recs))
	}
	return r, nil
}
