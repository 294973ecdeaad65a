package server

import (
	"context"
	"sync"
	"time"

	"github.com/riverqueue/river"

	"github.com/loomkit/loom/store"
)

// This file ticks the server's background work once a second: due
// crons fire, due webhook deliveries go out, and every
// Retention.SweepEvery the sweeper runs (see retention.go). On SQLite a
// goroutine of the server ticks; on Postgres the job queue's leader
// inserts a periodic River job each second, which one replica works, so
// replicas do not each tick (and a cron's claim in fireCrons keeps a
// tick from firing it twice all the same).

// tickEvery is how often the background work runs.
const tickEvery = time.Second

// background is the state of the background work in this process.
type background struct {
	delivering sync.Mutex // held while the due webhooks go out

	mu        sync.Mutex
	lastSweep time.Time
}

// tickJob is the River job of one tick.
type tickJob struct{}

// Kind implements river.JobArgs.
func (tickJob) Kind() string { return "loom_tick" }

// InsertOpts implements river.JobArgsWithInsertOpts: a tick that fails
// is not tried again; the next one comes a second later.
func (tickJob) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queueName, MaxAttempts: 1}
}

// tickPeriodic adds the tick's worker to workers and returns its
// periodic job, for the job queue's client.
func tickPeriodic(s *Server, workers *river.Workers) *river.PeriodicJob {
	river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, _ *river.Job[tickJob]) error {
		s.tick(ctx)
		return nil
	}))
	return river.NewPeriodicJob(river.PeriodicInterval(tickEvery),
		func() (river.JobArgs, *river.InsertOpts) { return tickJob{}, nil }, &river.PeriodicJobOpts{RunOnStart: true})
}

// startTicker ticks the background work in a goroutine of this process
// on SQLite, until the server closes; on Postgres the job queue ticks.
func (s *Server) startTicker() {
	if s.db.Dialect() == store.Postgres {
		return
	}
	go func() {
		t := time.NewTicker(tickEvery)
		defer t.Stop()
		for {
			select {
			case <-s.baseCtx.Done():
				return
			case <-t.C:
				s.tick(s.baseCtx)
			}
		}
	}()
}

// tick does one tick's background work.
func (s *Server) tick(ctx context.Context) {
	if err := s.fireCrons(ctx); err != nil && ctx.Err() == nil {
		s.log.Warn("fire crons", "err", err)
	}
	if s.bg.delivering.TryLock() {
		go func() {
			defer s.bg.delivering.Unlock()
			if err := s.deliverWebhooks(s.baseCtx, ""); err != nil && s.baseCtx.Err() == nil {
				s.log.Warn("deliver webhooks", "err", err)
			}
		}()
	}
	every := s.opts.Retention.SweepEvery
	if every <= 0 {
		every = time.Minute
	}
	s.bg.mu.Lock()
	last := s.bg.lastSweep
	due := time.Since(last) >= every
	if due {
		s.bg.lastSweep = time.Now()
	}
	s.bg.mu.Unlock()
	if due {
		if err := s.sweep(ctx, last); err != nil && ctx.Err() == nil {
			s.log.Warn("sweep", "err", err)
		}
	}
}
