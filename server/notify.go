package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/store"
)

// hub listens on the server's notification channel and wakes who waits
// for it: "e RUN" says run RUN has new events, "E RUN" that it has its
// last, "c RUN" asks the replica executing RUN to cancel it.
type hub struct {
	cancel func(run string)

	mu      sync.Mutex
	waiters map[string]chan struct{} // by run: closed at its next notification
	enders  map[string]chan struct{} // by run: closed when it ends
}

// waitEnd returns a channel closed when run ends.
func (h *hub) waitEnd(run string) <-chan struct{} { return h.channel(h.enders, run) }

// wait returns a channel closed at the next notification of run's events.
func (h *hub) wait(run string) <-chan struct{} { return h.channel(h.waiters, run) }

// channel returns run's channel in m, made on first use.
func (h *hub) channel(m map[string]chan struct{}, run string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := m[run]
	if !ok {
		c = make(chan struct{})
		m[run] = c
	}
	return c
}

// forget drops the waits for run (it ended).
func (h *hub) forget(run string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.waiters, run)
	delete(h.enders, run)
}

// wakeAll wakes every waiter: after the connection was lost, notifications
// may have been missed, so everyone reads again.
func (h *hub) wakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range []map[string]chan struct{}{h.waiters, h.enders} {
		for run, c := range m {
			close(c)
			delete(m, run)
		}
	}
}

func (h *hub) dispatch(payload string) {
	kind, run, _ := strings.Cut(payload, " ")
	switch kind {
	case "e", "E":
		h.mu.Lock()
		if c, ok := h.waiters[run]; ok {
			close(c)
			delete(h.waiters, run)
		}
		if c, ok := h.enders[run]; ok && kind == "E" {
			close(c)
			delete(h.enders, run)
		}
		h.mu.Unlock()
	case "c":
		h.cancel(run)
	}
}

// listen holds a connection that LISTENs on channel, reconnecting after a
// failure, until ctx is done. ready is closed once it first listens.
func (h *hub) listen(ctx context.Context, cfg *pgx.ConnConfig, channel string, log *slog.Logger, ready chan<- struct{}) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := func() error {
			conn, err := pgx.ConnectConfig(ctx, cfg.Copy())
			if err != nil {
				return err
			}
			defer conn.Close(context.WithoutCancel(ctx))
			if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
				return err
			}
			if ready != nil {
				close(ready)
				ready = nil
			} else {
				log.Info("listening for run events again", "channel", channel)
			}
			h.wakeAll() // read what came while nobody listened
			backoff = 100 * time.Millisecond
			for {
				n, err := conn.WaitForNotification(ctx)
				if err != nil {
					return err
				}
				h.dispatch(n.Payload)
			}
		}()
		h.wakeAll()
		if ctx.Err() != nil {
			return
		}
		log.Warn("lost the connection for run events; reconnecting", "channel", channel, "err", err, "in", backoff)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// publisher writes the events of a run this replica executes to
// loom_run_events, numbering them after those already there (a run taken
// up again after its replica stopped goes on counting). It writes in the
// background, in batches of what came within a few milliseconds of the
// first, each batch followed by a NOTIFY; at the end of each step (the
// state event, which follows the step's checkpoint) it writes before the
// run goes on, so that the events of every checkpointed step are kept
// when the replica dies: what may be lost is the events of the step that
// was running, which runs again.
type publisher struct {
	j       *jobs
	run     string
	kick    chan struct{} // a batch is waiting
	closing chan struct{} // closed by close
	done    chan struct{} // closed when the writer has stopped
	wmu     sync.Mutex    // one write at a time, in order

	mu  sync.Mutex
	seq int
	buf []event
	err error // the first failed write; later events are dropped
}

const insertEventsSQL = `
INSERT INTO loom_run_events (run_id, seq, terminal, body)
SELECT $1, s, false, b FROM unnest($2::integer[], $3::bytea[]) AS t(s, b)`

// linger is how long the publisher lets events gather before it writes
// them: a little latency for streams, many fewer writes and wake-ups.
const linger = 10 * time.Millisecond

// publisher starts writing run's events after seq.
func (j *jobs) publisher(run string, seq int) *publisher {
	p := &publisher{j: j, run: run, seq: seq, kick: make(chan struct{}, 1), closing: make(chan struct{}), done: make(chan struct{})}
	go p.loop()
	return p
}

// publish numbers e and queues it for writing; it waits for the write
// at the end of a step only.
func (p *publisher) publish(e event) {
	p.mu.Lock()
	p.seq++
	e.Seq = p.seq
	p.buf = append(p.buf, e)
	p.mu.Unlock()
	if e.Kind == graph.KindState {
		p.flush()
		return
	}
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// close writes what is queued and stops the writer. It returns the error
// that made it drop events, if any.
func (p *publisher) close() error {
	close(p.closing)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

func (p *publisher) loop() {
	defer close(p.done)
	t := time.NewTimer(linger)
	defer t.Stop()
	for {
		select {
		case <-p.kick:
			t.Reset(linger)
			select {
			case <-t.C:
			case <-p.closing:
			}
			p.flush()
		case <-p.closing:
			p.flush()
			return
		}
	}
}

func (p *publisher) flush() {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	p.mu.Lock()
	batch, failed := p.buf, p.err != nil
	p.buf = nil
	p.mu.Unlock()
	if len(batch) == 0 || failed {
		return
	}
	seqs := make([]int32, len(batch))
	bodies := make([][]byte, len(batch))
	for i := range batch {
		seqs[i] = int32(batch[i].Seq)
		b, err := json.Marshal(&batch[i])
		if err != nil {
			b, _ = json.Marshal(event{Kind: batch[i].Kind, Node: batch[i].Node, Step: batch[i].Step, Err: "unencodable event: " + err.Error()})
		}
		bodies[i] = b
	}
	var err error
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err = p.j.pool.Exec(ctx, insertEventsSQL, p.run, seqs, bodies)
		cancel()
		if err == nil {
			p.j.notify(context.Background(), "e "+p.run)
			break
		}
		if try == 4 || !store.IsUnavailable(err) {
			break
		}
		time.Sleep(time.Duration(try) * 250 * time.Millisecond)
	}
	if err != nil {
		p.mu.Lock()
		p.err = fmt.Errorf("write events %d… of run %s: %w", seqs[0], p.run, err)
		p.mu.Unlock()
	}
}
