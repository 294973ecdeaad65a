package server

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/seal"
)

// This file keeps runs on SQLite as safe as River keeps them on Postgres:
// a run is written to the database in the commit that accepts it, before
// the client hears of it, and a server that starts finds the runs that a
// stopped or killed process left pending or running and executes them
// again, each from its thread's last checkpoint.

// acceptRun records run r as pending, with spec, the input and options it
// runs with.
func (s *records) acceptRun(ctx context.Context, r *RunRecord, spec jobSpec) error {
	job, err := encodeSpec(s.codec, spec)
	if err != nil {
		return fmt.Errorf("encode run %s: %w", r.ID, err)
	}
	_, err = s.exec(ctx, `INSERT INTO loom_runs (`+runCols+`, job) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Thread, r.Agent, runPending, r.Strategy, string(orEmptyObject(r.Metadata)), "", ms(r.Created), ms(r.Created), job)
	if err != nil {
		return fmt.Errorf("record run %s: %w", r.ID, err)
	}
	return nil
}

// maxRecoveries is how many times in a row a run may be taken up again
// after its process died with the run at the same checkpoint: a run
// whose step kills the process (a node that exhausts its memory, a crash
// in a library) dies there each time, and is failed at the next start
// rather than run again, so the server comes back. A run that moved on
// between two deaths (the process was killed for some other reason)
// counts from one again.
const maxRecoveries = 2

// poisonWhy is why a run that died maxRecoveries times in a row after
// its first death is not run again.
const poisonWhy = "the server stopped while running it, then twice more at the same step while running it again after a restart; " +
	"it is not run again, since it may be what stops the server"

// stuck reports whether a run recovered recoveries times in a row, the
// last with its thread's head at recoveredFrom, may not go on from head
// (its thread's head now, "" for none): it died at the same step once
// more than maxRecoveries allows.
func stuck(recoveries int, recoveredFrom, head string) bool {
	return recoveries >= maxRecoveries && recoveredFrom == head
}

// unfinishedRun is a run recorded as pending or running, with its spec, or
// why it cannot be executed again.
type unfinishedRun struct {
	rec  RunRecord
	spec jobSpec
	why  string
	// recoveries is how many times in a row a restarted process took it
	// up with its thread's head at recoveredFrom (see maxRecoveries).
	recoveries    int
	recoveredFrom string
}

// unfinishedRuns returns the runs recorded as pending or running, oldest
// first.
func (s *records) unfinishedRuns(ctx context.Context) ([]unfinishedRun, error) {
	rows, err := s.db.SQL().QueryContext(ctx, `SELECT `+runCols+`, job, recoveries, recovered_from FROM loom_runs WHERE status IN ('pending', 'running') ORDER BY created, id`)
	if err != nil {
		return nil, fmt.Errorf("read unfinished runs: %w", err)
	}
	defer rows.Close()
	var out []unfinishedRun
	for rows.Next() {
		var u unfinishedRun
		var meta string
		var created, updated int64
		var job []byte
		if err := rows.Scan(&u.rec.ID, &u.rec.Thread, &u.rec.Agent, &u.rec.Status, &u.rec.Strategy, &meta, &u.rec.Error, &created, &updated, &job, &u.recoveries, &u.recoveredFrom); err != nil {
			return nil, fmt.Errorf("read unfinished runs: %w", err)
		}
		u.rec.Metadata, u.rec.Created, u.rec.Updated = json.RawMessage(meta), fromMS(created), fromMS(updated)
		switch err := decodeSpec(s.codec, job, &u.spec); {
		case len(job) == 0:
			u.why = "it was accepted by a version of Loom that did not record runs' inputs"
		case err != nil:
			u.why = fmt.Sprintf("its stored input is unreadable: %v", err)
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// recordRecovery records that run id goes on again after its process
// died, from its thread's head (its id, "" for none), before it does: if
// the process dies again, the next start knows. Recoveries in a row from
// the same head add up; one from a newer head counts from one.
func recordRecovery(ctx context.Context, exec func(ctx context.Context, q string, args ...any) error, id, head string) error {
	err := exec(ctx, `UPDATE loom_runs SET recoveries = CASE WHEN recoveries > 0 AND recovered_from = ? THEN recoveries + 1 ELSE 1 END, recovered_from = ? WHERE id = ?`,
		head, head, id)
	if err != nil {
		return fmt.Errorf("record recovery of run %s: %w", id, err)
	}
	return nil
}

// recordRecovery is recordRecovery on the server's records.
func (s *records) recordRecovery(ctx context.Context, id, head string) error {
	return recordRecovery(ctx, func(ctx context.Context, q string, args ...any) error {
		_, err := s.exec(ctx, q, args...)
		return err
	}, id, head)
}

// recoverRuns executes again the runs that a process which stopped left
// unfinished, in the order they were accepted: each goes on from its
// thread's last checkpoint (startPoint), so a step that was running when
// the process died runs again and none is applied twice. A run that
// cannot be executed (its agent is no longer served, its input cannot be
// read, or the process died each time it went on from the same step,
// maxRecoveries times in a row) is marked failed with the reason, so no run stays
// pending, no thread busy, and no run takes the server down for ever.
func (x *local) recoverRuns(ctx context.Context) error {
	s := x.s
	runs, err := s.records.unfinishedRuns(ctx)
	if err != nil {
		return err
	}
	for _, u := range runs {
		r := &run{id: u.rec.ID, thread: u.rec.Thread, agent: u.rec.Agent, owner: u.spec.Owner, strategy: u.rec.Strategy,
			metadata: u.rec.Metadata, created: u.rec.Created, input: u.spec.Input, status: runPending,
			from: u.spec.From, rollbackID: u.spec.Rollback, temp: u.spec.Temp, modes: u.spec.Modes, config: u.spec.Config, webhook: u.spec.Webhook, user: u.spec.User, assistant: u.spec.Assistant, recovered: true}
		r.input.Run = r.id
		x.prepare(r)
		if _, ok := s.agents[u.rec.Agent]; !ok && u.why == "" {
			u.why = fmt.Sprintf("agent %s is no longer served", u.rec.Agent)
		}
		if u.why == "" && u.recoveries >= maxRecoveries {
			head, err := s.head(ctx, u.rec.Thread)
			if err != nil {
				return fmt.Errorf("recover run %s: %w", u.rec.ID, err)
			}
			if stuck(u.recoveries, u.recoveredFrom, headID(head)) {
				u.why = poisonWhy
			}
		}
		if u.why != "" {
			s.log.Warn("a run left unfinished by a stopped process is failed, not run again", "run", r.id, "thread", r.thread, "agent", r.agent, "recoveries", u.recoveries, "why", u.why)
			x.endUnstarted(r, runError, "run_failed", "the server restarted and could not go on with this run: "+u.why, StatusError)
			continue
		}
		r.strategy = strategyEnqueue // accepted already: it only waits its turn
		x.enqueue(r)
	}
	if len(runs) > 0 {
		s.log.Info("runs recovered after a restart", "runs", len(runs))
	}
	return nil
}

// keyedLocks is a mutex per key, held only while in use.
type keyedLocks struct {
	mu sync.Mutex
	m  map[string]*keyedLock
}

type keyedLock struct {
	sync.Mutex
	users int
}

// lock locks key and returns its unlock.
func (k *keyedLocks) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyedLock{}
	}
	l := k.m[key]
	if l == nil {
		l = &keyedLock{}
		k.m[key] = l
	}
	l.users++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.users--; l.users == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}

// headID is the id of head, "" for none.
func headID(head *checkpoint.Checkpoint) string {
	if head == nil {
		return ""
	}
	return head.ID
}

// encodeSpec is what a run's record keeps of spec: its JSON, sealed by c
// when the server seals what it stores, since the input a person typed is
// as private as the state it becomes.
func encodeSpec(c seal.Codec, spec jobSpec) ([]byte, error) {
	b, err := json.Marshal(spec)
	if err != nil || c == nil {
		return b, err
	}
	return c.Seal(b)
}

// decodeSpec reads into spec what a run's record keeps, opening it with c
// when it was sealed (a record kept before sealing was turned on reads as
// it is).
func decodeSpec(c seal.Codec, raw []byte, spec *jobSpec) error {
	if c != nil && len(raw) > 0 {
		var err error
		if raw, err = c.Open(raw); err != nil {
			return err
		}
	}
	return json.Unmarshal(raw, spec)
}
