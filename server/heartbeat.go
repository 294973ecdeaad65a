package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// This file is the heartbeat of the jobs a replica works (see work.go):
// River's rescuer takes a running job whose attempted_at is older than
// RescueAfter for one whose replica died, so a live replica moves
// attempted_at on for every job it works.

// errRescued ends an attempt whose job the queue gave to another attempt.
var errRescued = errors.New("the job queue rescued this run's job from this replica (its heartbeat was late); the run goes on in the new attempt")

// attempt is a job this replica works now: River's attempt number, and
// how to stop it.
type attempt struct {
	number int
	stop   context.CancelCauseFunc
}

// working registers a job's attempt for the heartbeat until the returned
// function is called.
func (j *jobs) working(id int64, number int, stop context.CancelCauseFunc) func() {
	j.mu.Lock()
	j.attempts[id] = attempt{number: number, stop: stop}
	j.mu.Unlock()
	return func() {
		j.mu.Lock()
		delete(j.attempts, id)
		j.mu.Unlock()
	}
}

// heartbeat beats, every RescueAfter/5 until ctx is done, for every
// attempt this replica works, in one statement on a connection of its
// own: a pool that every run's steps keep busy cannot make a beat late.
// An attempt whose job is no longer running under its attempt number was
// rescued (a beat came too late, or the database was away for longer
// than RescueAfter) and another attempt may be running it: the attempt
// here stops, so that one attempt at a time goes on with the run.
func (j *jobs) heartbeat(ctx context.Context, cfg *pgx.ConnConfig) {
	t := time.NewTicker(j.s.opts.RescueAfter / 5)
	defer t.Stop()
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.WithoutCancel(ctx))
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ids, numbers := j.beating()
		if len(ids) == 0 {
			continue
		}
		if conn == nil {
			var err error
			if conn, err = pgx.ConnectConfig(ctx, cfg.Copy()); err != nil {
				conn = nil
				j.s.log.Warn("job heartbeat: connect", "err", err)
				continue
			}
		}
		alive, err := beat(ctx, conn, ids, numbers)
		if err == nil && len(alive) < len(ids) {
			err = endedHere(ctx, conn, ids, numbers, alive)
		}
		if err != nil {
			if ctx.Err() == nil {
				j.s.log.Warn("job heartbeat", "jobs", len(ids), "err", err)
			}
			conn.Close(context.WithoutCancel(ctx))
			conn = nil
			continue
		}
		j.stopRescued(ids, numbers, alive)
	}
}

// beating returns the jobs this replica works, with their attempt
// numbers.
func (j *jobs) beating() (ids []int64, numbers []int32) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for id, a := range j.attempts {
		ids = append(ids, id)
		numbers = append(numbers, int32(a.number))
	}
	return ids, numbers
}

// beat moves attempted_at on for the jobs that still run under the
// given attempts, and returns those.
func beat(ctx context.Context, conn *pgx.Conn, ids []int64, numbers []int32) (map[int64]bool, error) {
	rows, err := conn.Query(ctx, `
UPDATE river_job j SET attempted_at = now()
FROM unnest($1::bigint[], $2::int[]) AS a(id, attempt)
WHERE j.id = a.id AND j.attempt = a.attempt AND j.state = 'running'
RETURNING j.id`, ids, numbers)
	if err != nil {
		return nil, fmt.Errorf("beat for %d jobs: %w", len(ids), err)
	}
	alive := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("beat for %d jobs: %w", len(ids), err)
		}
		alive[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("beat for %d jobs: %w", len(ids), err)
	}
	return alive, nil
}

// endedHere adds to alive the jobs that beat did not find running
// because their attempt here completed them (the run's last transaction
// marks its job completed before the attempt returns): those were not
// rescued. A job that the rescuer took back is retryable, or running
// again under a later attempt.
func endedHere(ctx context.Context, conn *pgx.Conn, ids []int64, numbers []int32, alive map[int64]bool) error {
	rows, err := conn.Query(ctx, `
SELECT j.id FROM river_job j JOIN unnest($1::bigint[], $2::int[]) AS a(id, attempt) ON j.id = a.id AND j.attempt = a.attempt
WHERE j.state = 'completed'`, ids, numbers)
	if err != nil {
		return fmt.Errorf("read the state of %d jobs: %w", len(ids)-len(alive), err)
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return fmt.Errorf("read the state of %d jobs: %w", len(ids)-len(alive), err)
		}
		alive[id] = true
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the state of %d jobs: %w", len(ids)-len(alive), err)
	}
	return nil
}

// stopRescued stops the attempts that beat found no longer running
// under their number, unless they ended meanwhile.
func (j *jobs) stopRescued(ids []int64, numbers []int32, alive map[int64]bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for i, id := range ids {
		if a, ok := j.attempts[id]; ok && !alive[id] && a.number == int(numbers[i]) {
			j.s.log.Warn("job rescued while this replica worked it; stopping here", "job", id, "attempt", a.number)
			a.stop(errRescued)
		}
	}
}
