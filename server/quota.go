package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"golang.org/x/time/rate"

	"github.com/loomkit/loom/graph"
)

// Quotas bound what one API key may hold and do, so that one client
// cannot fill the disk, the heap or the workers that every key shares.
// A field left zero takes its default; a negative one means no limit.
//
// Going over a count or the request rate gets 429 with a Retry-After
// header and the error code quota_exceeded, and nothing is written; a
// value over a size limit gets 413 (code too_large), since sending it
// again will not help. Without API keys (one local person, or a load
// test on one's own machine) only the size limits apply, unless Keyless
// is set.
type Quotas struct {
	// ThreadsPerKey is how many threads one key may hold (default
	// 10,000). Creating one more, with POST /threads, a copy, a run or a
	// chat on a new thread, or an agent's own endpoint, is refused until
	// the key deletes some.
	ThreadsPerKey int
	// RunningPerKey is how many of one key's threads may run at once
	// (default 50; a thread runs one run at a time). A run that would
	// start on one more thread is refused; the key's runs queued behind a
	// busy thread count under QueuedPerKey instead.
	RunningPerKey int
	// QueuedPerThread is how many runs may wait behind a thread's running
	// run, queued by multitask_strategy enqueue (default 50).
	QueuedPerThread int
	// QueuedPerKey is how many of one key's runs may wait, over all its
	// threads (default 200).
	QueuedPerKey int
	// RatePerKey is how many requests a second one key may make on
	// average (default 100), as a token bucket that holds Burst requests
	// (default 200): a key that was quiet may send Burst at once.
	RatePerKey float64
	Burst      int
	// Keyless applies the counts and the rate above to a server without
	// API keys too (off by default).
	Keyless bool
	// MaxInput bounds a run's input and a resume value, in bytes of JSON
	// (default 256 KiB).
	MaxInput int
	// MaxMetadata bounds the metadata of a thread (after a PATCH merged
	// it) and of a run, in bytes of JSON (default 16 KiB).
	MaxMetadata int
}

// WithDefaults returns q with the fields left zero set to their
// defaults, as the server uses them.
func (q Quotas) WithDefaults() Quotas {
	for _, f := range []struct {
		v *int
		d int
	}{
		{&q.ThreadsPerKey, 10_000}, {&q.RunningPerKey, 50}, {&q.QueuedPerThread, 50}, {&q.QueuedPerKey, 200},
		{&q.Burst, 200}, {&q.MaxInput, 256 << 10}, {&q.MaxMetadata, 16 << 10},
	} {
		if *f.v == 0 {
			*f.v = f.d
		}
	}
	if q.RatePerKey == 0 {
		q.RatePerKey = 100
	}
	return q
}

// quotas enforces Quotas: the counts are read where they are kept (the
// run lanes on SQLite, the tables on Postgres), the rate is a token
// bucket per owner, made for every key when the server starts.
type quotas struct {
	Quotas
	keyless bool                     // the server has no keys
	buckets map[string]*rate.Limiter // by owner id; nil without a rate
	users   *userBuckets             // bearer-token users' (jwt.go); nil without
}

func newQuotas(q Quotas, owners []string) *quotas {
	qs := &quotas{Quotas: q.WithDefaults(), keyless: len(owners) == 0}
	if qs.RatePerKey < 0 || qs.Burst < 0 {
		return qs
	}
	if qs.keyless {
		if !qs.Keyless {
			return qs
		}
		owners = []string{""}
	}
	qs.buckets = map[string]*rate.Limiter{}
	for _, o := range owners {
		qs.buckets[o] = rate.NewLimiter(rate.Limit(qs.RatePerKey), qs.Burst)
	}
	return qs
}

// counted reports whether the counts apply to owner's requests.
func (q *quotas) counted() bool { return !q.keyless || q.Keyless }

// quotaError is an API error that says when to try again.
type quotaError struct {
	*apiError
	retry time.Duration
}

func (e *quotaError) Unwrap() error { return e.apiError }

// overQuota is the 429 for a quota: what is over, and what to do.
func overQuota(retry time.Duration, format string, args ...any) error {
	return &quotaError{apiError: errorf(http.StatusTooManyRequests, "quota_exceeded", format, args...), retry: retry}
}

// setRetryAfter sets Retry-After when err is over a quota.
func setRetryAfter(w http.ResponseWriter, err error) {
	var qe *quotaError
	if errors.As(err, &qe) {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(qe.retry.Seconds())))))
	}
}

// who names the caller in quota messages.
func who(owner string) string {
	if owner == "" {
		return "this server's keyless use"
	}
	return "this API key"
}

// allow takes a request from owner's token bucket.
func (q *quotas) allow(owner string) error {
	b := q.buckets[owner]
	if b == nil && q.users != nil && owner != "" {
		b = q.users.get(owner)
	}
	if b == nil || b.Allow() {
		return nil
	}
	r := b.Reserve()
	wait := r.Delay()
	r.Cancel()
	return overQuota(wait, "rate limit: %s may make %g requests a second on average, %d at once (loom serve --rate, --burst); try again in %s",
		who(owner), q.RatePerKey, q.Burst, wait.Round(time.Millisecond))
}

// tooLarge is the 413 for a value over a size limit.
func tooLarge(what string, n, limit int, flag string) error {
	return errorf(http.StatusRequestEntityTooLarge, "too_large", "%s is %d bytes of JSON; the most is %d (loom serve %s)", what, n, limit, flag)
}

// metadataSize bounds metadata of a thread or a run.
func (q *quotas) metadataSize(what string, meta json.RawMessage) error {
	if q.MaxMetadata > 0 && len(meta) > q.MaxMetadata {
		return tooLarge(what+" metadata", len(meta), q.MaxMetadata, "--max-metadata")
	}
	return nil
}

// admitThread checks that owner may create one more thread with metadata
// meta. It reads the count with a query bounded by the quota, so a key
// with many threads costs no more than one at the limit.
func (s *Server) admitThread(ctx context.Context, owner string, meta json.RawMessage) error {
	q := s.quotas
	if err := q.metadataSize("thread", meta); err != nil {
		return err
	}
	if !q.counted() || q.ThreadsPerKey < 0 {
		return nil
	}
	var n int
	err := s.db.SQL().QueryRowContext(ctx, s.records.q(`SELECT count(*) FROM (SELECT 1 FROM loom_threads WHERE owner = ? LIMIT ?) AS owned`),
		owner, q.ThreadsPerKey).Scan(&n)
	if err != nil {
		return fmt.Errorf("count threads of the caller: %w", err)
	}
	if n >= q.ThreadsPerKey {
		return overQuota(time.Minute, "quota exceeded: %s holds %d threads, the most it may (threads per key, loom serve --max-threads); delete threads it no longer needs (DELETE /threads/{thread_id}) and try again",
			who(owner), q.ThreadsPerKey)
	}
	return nil
}

// usage is what a key's runs take at a moment.
type usage struct {
	running int // threads of the key that run a run
	queued  int // runs of the key that wait behind another
	// busy and waiting: whether the thread asked about runs a run, and
	// how many wait behind it.
	busy    bool
	waiting int
}

// usage reads owner's runs, and thread's, from the executor: on SQLite
// this process's run lanes, on Postgres the runs table.
func (s *Server) usage(ctx context.Context, owner, thread string) (usage, error) {
	return s.exec.usage(ctx, owner, thread)
}

// admitRun checks that owner may start or queue a run on thread t (nil:
// a thread the run creates) with strategy, input in and metadata meta.
// The counts are read before the run is submitted, so requests that
// arrive together may pass a count by as many as arrive at once.
func (s *Server) admitRun(ctx context.Context, owner string, t *Thread, strategy string, in graph.JSONInput, meta json.RawMessage) error {
	q := s.quotas
	if q.MaxInput > 0 {
		for what, v := range map[string]json.RawMessage{"run input": in.Update, "resume value": in.Resume} {
			if len(v) > q.MaxInput {
				return tooLarge(what, len(v), q.MaxInput, "--max-input")
			}
		}
	}
	if err := q.metadataSize("run", meta); err != nil {
		return err
	}
	if !q.counted() {
		return nil
	}
	thread := ""
	if t != nil {
		thread = t.ID
	}
	u, err := s.usage(ctx, owner, thread)
	if err != nil {
		return err
	}
	const retry = 2 * time.Second
	switch {
	case !u.busy && q.RunningPerKey >= 0 && u.running >= q.RunningPerKey:
		return overQuota(retry, "quota exceeded: %s runs %d threads at once, the most it may (running runs per key, loom serve --max-running); wait for a run to end and try again",
			who(owner), q.RunningPerKey)
	case !u.busy || strategy == strategyReject:
		return nil // starts at once, or is refused as busy
	case strategy == strategyEnqueue && q.QueuedPerThread >= 0 && u.waiting >= q.QueuedPerThread:
		return overQuota(retry, "quota exceeded: %d runs wait on thread %s already, the most a thread may queue (queued runs per thread, loom serve --max-queued-per-thread); wait for them to run and try again",
			u.waiting, publicID(thread))
	}
	// enqueue adds one to the key's waiting runs; interrupt and rollback
	// drop the thread's queue and wait alone in it.
	after := u.queued + 1
	if strategy != strategyEnqueue {
		after -= u.waiting
	}
	if q.QueuedPerKey >= 0 && after > q.QueuedPerKey {
		return overQuota(retry, "quota exceeded: %s has %d runs waiting over its threads, the most it may (queued runs per key, loom serve --max-queued); wait for them to run and try again",
			who(owner), q.QueuedPerKey)
	}
	return nil
}
