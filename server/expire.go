package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/loomkit/loom/graph"
)

// Questions that expire: a node may ask with graph.Expires, giving its
// question a deadline and a default answer. The sweeper below finds the
// threads whose questions have passed their deadline and continues each,
// so the run takes the default answer's path (graph.KindExpired says so)
// even when nobody comes back to the thread, after a restart too.

const (
	// expirySweep is the longest wait between two sweeps; a sweep waits
	// less when it saw a deadline coming sooner.
	expirySweep = 30 * time.Second
	// expiryPage is how many interrupted threads one query reads.
	expiryPage = 500
)

// startSweeper sweeps at once (questions that expired while the server
// was down) and then until the server closes.
func (s *Server) startSweeper() {
	go func() {
		ctx := s.baseCtx
		for {
			next, err := s.sweepExpired(ctx)
			if err != nil && ctx.Err() == nil {
				s.log.Warn("server: sweep for expired questions", "err", err)
			}
			wait := expirySweep
			if !next.IsZero() {
				wait = min(max(time.Until(next), 10*time.Millisecond), expirySweep)
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}()
}

// sweepExpired continues every interrupted thread that has a question
// past its deadline, and returns the earliest deadline still to come
// (zero: none seen).
func (s *Server) sweepExpired(ctx context.Context) (next time.Time, err error) {
	after := ""
	for {
		threads, err := s.records.interruptedThreads(ctx, after, expiryPage)
		if err != nil {
			return next, err
		}
		now := time.Now()
		for _, t := range threads {
			after = t.ID
			if s.agents[t.Agent] == nil {
				continue
			}
			head, err := s.head(ctx, t.ID)
			if err != nil || head == nil {
				continue
			}
			expired := false
			for _, p := range head.Pending() {
				switch {
				case p.Deadline.IsZero():
				case p.Expired(now):
					expired = true
				case next.IsZero() || p.Deadline.Before(next):
					next = p.Deadline
				}
			}
			if expired {
				s.continueExpired(ctx, t)
			}
		}
		if len(threads) < expiryPage {
			return next, nil
		}
	}
}

// continueExpired starts a run that continues thread t, whose pending
// questions' defaults are then taken. A thread busy with a run is left to
// it (that run's resume or continue takes the defaults too).
func (s *Server) continueExpired(ctx context.Context, t *Thread) {
	r := s.newRun(t.ID, t.Agent, t.Owner, strategyReject, nil, graph.JSONInput{})
	err := s.exec.submit(ctx, r)
	switch {
	case err == nil:
		s.log.Info("server: a question expired; continuing its thread with the default answer", "thread", publicID(t.ID), "agent", t.Agent, "run", r.id)
	case errors.Is(err, ErrBusy), errors.Is(err, ErrClosing), ctx.Err() != nil:
	default:
		s.log.Warn("server: continue a thread whose question expired", "thread", publicID(t.ID), "err", err)
	}
}

// interruptedThreads returns up to limit threads waiting for an answer,
// by id, after the id after.
func (s *records) interruptedThreads(ctx context.Context, after string, limit int) ([]*Thread, error) {
	rows, err := s.db.SQL().QueryContext(ctx, s.q(`SELECT `+threadCols+` FROM loom_threads WHERE status = ? AND id > ? ORDER BY id LIMIT ?`), StatusInterrupted, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list interrupted threads: %w", err)
	}
	defer rows.Close()
	var out []*Thread
	for rows.Next() {
		t, err := scanThread(rows)
		if err != nil {
			return nil, fmt.Errorf("list interrupted threads: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}
