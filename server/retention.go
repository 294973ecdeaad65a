package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/store"
)

// This file bounds what the server keeps: a thread may have a time to
// live (ttl on POST /threads: after so many minutes without a run or an
// edit it is deleted, or cut to its latest checkpoint); POST
// /threads/prune does either at once; and Retention.KeepCheckpoints
// keeps the last N checkpoints of every thread. A sweeper applies them
// (see crons_tick.go): on SQLite in the server, on Postgres in whichever
// replica works the tick.

// Retention bounds what the server keeps of threads.
type Retention struct {
	// KeepCheckpoints, above 0, is how many checkpoints of each thread
	// the sweeper keeps, the newest, and of each thread on which its
	// agent's subgraphs keep theirs; the older are deleted, and an undo,
	// fork or run from one of them is refused (410). 0 keeps them all.
	KeepCheckpoints int
	// SweepEvery is how often the sweeper deletes what the thread TTLs
	// and KeepCheckpoints no longer keep, and webhook deliveries over a
	// week old (default 1 minute).
	SweepEvery time.Duration
}

// TTL strategies.
const (
	ttlDelete     = "delete"      // delete the thread
	ttlKeepLatest = "keep_latest" // keep only its latest checkpoint
)

// Limits of retention requests.
const (
	maxTTLMinutes  = 10 * 365 * 24 * 60
	maxPruneIDs    = 1000
	webhookHistory = 7 * 24 * time.Hour // how long delivered and failed webhooks are shown
)

// threadTTL is a thread's time to live.
type threadTTL struct {
	Minutes  float64
	Strategy string
}

// parseTTL reads a thread's ttl: minutes, or {"ttl": minutes, "strategy":
// "delete" | "keep_latest"}, as the LangGraph API takes it; nil for none.
func parseTTL(raw json.RawMessage) (*threadTTL, error) {
	if !present(raw) {
		return nil, nil
	}
	t := threadTTL{Strategy: ttlDelete}
	if err := json.Unmarshal(raw, &t.Minutes); err != nil {
		var obj struct {
			TTL      *float64 `json:"ttl"`
			Strategy string   `json:"strategy"`
		}
		if err := unmarshalKnown(raw, "ttl", &obj); err != nil {
			return nil, errorf(http.StatusUnprocessableEntity, "invalid_ttl", "ttl: want minutes, or {\"ttl\": minutes, \"strategy\": \"delete\" or \"keep_latest\"}")
		}
		if obj.TTL == nil {
			return nil, errorf(http.StatusUnprocessableEntity, "invalid_ttl", "ttl.ttl is required: the minutes a thread lives after its last update")
		}
		t.Minutes = *obj.TTL
		if obj.Strategy != "" {
			t.Strategy = obj.Strategy
		}
	}
	if err := oneOf("ttl.strategy", t.Strategy, ttlDelete, ttlKeepLatest); err != nil {
		return nil, err
	}
	if t.Minutes <= 0 || t.Minutes > maxTTLMinutes {
		return nil, errorf(http.StatusUnprocessableEntity, "invalid_ttl", "ttl: want minutes above 0 and at most %d (ten years), not %v", maxTTLMinutes, t.Minutes)
	}
	return &t, nil
}

// setThreadTTL gives thread (its key) ttl; nil leaves it as it is.
func (s *Server) setThreadTTL(ctx context.Context, thread string, ttl *threadTTL) error {
	if ttl == nil {
		return nil
	}
	_, err := s.records.exec(ctx, `INSERT INTO loom_thread_ttl (thread, strategy, ttl_ms, done) VALUES (?, ?, ?, 0)
ON CONFLICT (thread) DO UPDATE SET strategy = excluded.strategy, ttl_ms = excluded.ttl_ms, done = 0`,
		thread, ttl.Strategy, int64(ttl.Minutes*float64(time.Minute/time.Millisecond)))
	if err != nil {
		return fmt.Errorf("set ttl of thread %s: %w", publicID(thread), err)
	}
	return nil
}

// pruneThreads serves POST /threads/prune: {"thread_ids": [...],
// "strategy": "delete" | "keep_latest"} deletes the caller's threads
// named, or cuts each to its latest checkpoint; threads not found or
// busy are left. It answers {"pruned_count": n}.
func (s *Server) pruneThreads(w http.ResponseWriter, r *http.Request, owner string) error {
	var req struct {
		ThreadIDs []string `json:"thread_ids"`
		Strategy  string   `json:"strategy"`
	}
	if err := decodeKnown(r, "prune", &req); err != nil {
		return err
	}
	if req.Strategy == "" {
		req.Strategy = ttlDelete
	}
	if err := oneOf("strategy", req.Strategy, ttlDelete, ttlKeepLatest); err != nil {
		return err
	}
	if len(req.ThreadIDs) == 0 || len(req.ThreadIDs) > maxPruneIDs {
		return errorf(http.StatusUnprocessableEntity, "invalid_input", "thread_ids: want from 1 to %d thread ids", maxPruneIDs)
	}
	n := 0
	for _, id := range req.ThreadIDs {
		t, err := s.thread(r.Context(), id, owner)
		if err != nil {
			if toAPI(err).status == http.StatusNotFound {
				continue
			}
			return err
		}
		done, err := s.pruneThread(r.Context(), t, req.Strategy)
		if err != nil {
			return err
		}
		if done {
			n++
		}
	}
	writeJSON(w, http.StatusOK, map[string]int{"pruned_count": n})
	return nil
}

// pruneThread applies strategy to thread t: it reports false when t is
// busy, and left as it is.
func (s *Server) pruneThread(ctx context.Context, t *Thread, strategy string) (bool, error) {
	if t.Status == StatusBusy || s.busy(t.ID) {
		return false, nil
	}
	if strategy == ttlDelete {
		var n int
		if err := s.db.SQL().QueryRowContext(ctx, s.records.q(`SELECT count(*) FROM loom_runs WHERE thread = ? AND status IN ('pending', 'running')`), t.ID).Scan(&n); err != nil {
			return false, fmt.Errorf("prune thread %s: %w", publicID(t.ID), err)
		}
		if n > 0 {
			return false, nil
		}
		if err := s.removeThread(ctx, t.ID); err != nil {
			return false, err
		}
		return true, nil
	}
	if _, err := s.trimHistory(ctx, t.ID, t.Agent, 1); err != nil {
		return false, err
	}
	return true, nil
}

// historyTrimmer is a saver that deletes the checkpoints of a thread
// older than its newest keep, the oldest kept made whole (the savers of
// checkpoint/sqlite, postgres and redis, and checkpoint.Memory, are;
// checkpoint.Sealed passes it on to the saver it seals for).
type historyTrimmer interface {
	TrimHistory(ctx context.Context, thread string, keep int) (int, error)
}

// trimHistory deletes the checkpoints of thread id of agent before its
// last keep, and those of its subgraphs' threads before theirs (see
// checkpointThreads), and returns how many, through the saver (which
// alone knows how it stores them); a saver that cannot is an error.
func (s *Server) trimHistory(ctx context.Context, id, agent string, keep int) (int, error) {
	saver := s.db.Saver()
	t, ok := saver.(historyTrimmer)
	if !ok {
		return 0, fmt.Errorf("trim history of %s: the saver (%T) cannot delete checkpoints", publicID(id), saver)
	}
	total := 0
	for _, thread := range s.checkpointThreads(id, agent) {
		n, err := t.TrimHistory(ctx, thread, keep)
		if err != nil {
			return total, fmt.Errorf("trim history of %s: %w", publicID(id), err)
		}
		total += n
	}
	return total, nil
}

// sweep applies the thread TTLs and the history policy, and forgets
// webhook deliveries over a week old. since is when the last sweep of
// this process began (zero: none): only threads updated after it can
// have more checkpoints than KeepCheckpoints.
func (s *Server) sweep(ctx context.Context, since time.Time) error {
	now := time.Now()
	rows, err := s.db.SQL().QueryContext(ctx, s.records.q(`SELECT `+prefixed("t.", threadCols)+`, x.strategy FROM loom_thread_ttl x JOIN loom_threads t ON t.id = x.thread
WHERE t.updated + x.ttl_ms <= ? AND t.updated > x.done LIMIT 1000`), ms(now))
	if err != nil {
		return fmt.Errorf("sweep: read expired threads: %w", err)
	}
	type expired struct {
		t        *Thread
		strategy string
	}
	var all []expired
	for rows.Next() {
		var e expired
		var t Thread
		var meta string
		var created, updated int64
		if err := rows.Scan(&t.ID, &t.Owner, &t.Agent, &t.Status, &meta, &t.Error, &created, &updated, &e.strategy); err != nil {
			rows.Close()
			return fmt.Errorf("sweep: read expired threads: %w", err)
		}
		t.Metadata, t.Created, t.Updated = json.RawMessage(meta), fromMS(created), fromMS(updated)
		e.t = &t
		all = append(all, e)
	}
	rows.Close()
	var errs []error
	for _, e := range all {
		done, err := s.pruneThread(ctx, e.t, e.strategy)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if done && e.strategy == ttlKeepLatest {
			if _, err := s.records.exec(ctx, `UPDATE loom_thread_ttl SET done = ? WHERE thread = ?`, ms(e.t.Updated), e.t.ID); err != nil {
				errs = append(errs, err)
			}
		}
		if done {
			s.log.Info("thread TTL applied", "thread", publicID(e.t.ID), "strategy", e.strategy)
		}
	}
	if keep := s.opts.Retention.KeepCheckpoints; keep > 0 {
		updated, err := s.updatedThreads(ctx, since)
		if err != nil {
			errs = append(errs, err)
		}
		for _, t := range updated {
			if _, err := s.trimHistory(ctx, t.id, t.agent, keep); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`DELETE FROM loom_thread_ttl WHERE thread NOT IN (SELECT id FROM loom_threads)`, nil},
		{`DELETE FROM loom_run_assistants WHERE NOT EXISTS (SELECT 1 FROM loom_runs r WHERE r.id = loom_run_assistants.run)`, nil},
		{`DELETE FROM loom_webhooks WHERE state IN ('delivered', 'failed') AND updated < ?`, []any{ms(now.Add(-webhookHistory))}},
	} {
		if _, err := s.records.exec(ctx, q.sql, q.args...); err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, fmt.Errorf("sweep: %w", err))
		}
	}
	return errors.Join(errs...)
}

// updatedThreads returns the threads updated since (all for zero), with
// their agents.
func (s *Server) updatedThreads(ctx context.Context, since time.Time) ([]threadAgent, error) {
	rows, err := s.db.SQL().QueryContext(ctx, s.records.q(`SELECT id, agent FROM loom_threads WHERE updated >= ?`), ms(since.Add(-time.Minute)))
	if err != nil {
		return nil, fmt.Errorf("sweep: read updated threads: %w", err)
	}
	defer rows.Close()
	var out []threadAgent
	for rows.Next() {
		var t threadAgent
		if err := rows.Scan(&t.id, &t.agent); err != nil {
			return nil, fmt.Errorf("sweep: read updated threads: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// threadAgent is a thread's id and its agent's name.
type threadAgent struct{ id, agent string }

// prefixed is cols ("a, b") with each column prefixed.
func prefixed(p, cols string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}

// keptHistory is the server's saver under a history policy: a
// checkpoint the policy deleted is refused with 410 and why.
type keptHistory struct {
	checkpoint.Saver
	keep int
}

// withHistoryPolicy wraps saver when KeepCheckpoints is set.
func withHistoryPolicy(saver checkpoint.Saver, r Retention) checkpoint.Saver {
	if r.KeepCheckpoints <= 0 {
		return saver
	}
	return keptHistory{Saver: saver, keep: r.KeepCheckpoints}
}

// Get implements checkpoint.Saver.
func (k keptHistory) Get(ctx context.Context, thread, id string) (*checkpoint.Checkpoint, error) {
	cp, err := k.Saver.Get(ctx, thread, id)
	if id != "" && errors.Is(err, checkpoint.ErrNotFound) {
		if _, herr := k.Saver.Get(ctx, thread, ""); herr == nil {
			return nil, errorf(http.StatusGone, "checkpoint_pruned", "checkpoint %s is not among the last %d checkpoints of thread %s, which are all this server keeps of a thread's history", id, k.keep, publicID(thread))
		}
	}
	return cp, err
}

// backgroundComponent names the tables of crons, webhooks and thread
// TTLs among the database's migrations.
const backgroundComponent = "server/background"

var backgroundMigrations = []store.Migration{{
	Version: 1, Name: "crons, webhook deliveries and thread TTLs",
	SQL: cronTables + `
CREATE TABLE loom_webhooks (
	run_id   text    NOT NULL PRIMARY KEY,
	thread   text    NOT NULL,
	owner    text    NOT NULL,
	url      text    NOT NULL,
	state    text    NOT NULL,
	body     text    NOT NULL,
	tries    integer NOT NULL,
	attempts text    NOT NULL,
	next_at  bigint  NOT NULL,
	created  bigint  NOT NULL,
	updated  bigint  NOT NULL
);
CREATE INDEX loom_webhooks_due ON loom_webhooks (next_at) WHERE state = 'due';
CREATE TABLE loom_webhook_secrets (
	owner   text   NOT NULL PRIMARY KEY,
	secret  text   NOT NULL,
	created bigint NOT NULL
);
CREATE TABLE loom_thread_ttl (
	thread   text   NOT NULL PRIMARY KEY,
	strategy text   NOT NULL,
	ttl_ms   bigint NOT NULL,
	done     bigint NOT NULL
);
`,
}}

// migrateBackground creates or upgrades the tables of crons, webhooks
// and thread TTLs.
func migrateBackground(ctx context.Context, db *store.DB) error {
	if err := db.Migrate(ctx, backgroundComponent, backgroundMigrations); err != nil {
		return fmt.Errorf("cron and retention tables: %w", err)
	}
	return nil
}
