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
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/loomkit/loom/checkpoint"
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
	enders  map[string]*ending       // by run: done when it ends
}

// ending is a wait for a run's end. done is closed when the run ends;
// end is then its terminal event, when this replica ended the run (see
// hub.ended), or nil, and the end is read from the table.
type ending struct {
	done chan struct{}
	end  *event
}

// waitEnd returns the wait for run's end.
func (h *hub) waitEnd(run string) *ending {
	h.mu.Lock()
	defer h.mu.Unlock()
	w, ok := h.enders[run]
	if !ok {
		w = &ending{done: make(chan struct{})}
		h.enders[run] = w
	}
	return w
}

// ended hands run's terminal event, committed by this replica, to the
// waits for its end, which its notification then wakes.
func (h *hub) ended(run string, end event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w, ok := h.enders[run]; ok {
		w.end = &end
	}
}

// wait returns a channel closed at the next notification of run's events.
func (h *hub) wait(run string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.waiters[run]
	if !ok {
		c = make(chan struct{})
		h.waiters[run] = c
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
	for run, c := range h.waiters {
		close(c)
		delete(h.waiters, run)
	}
	for run, w := range h.enders {
		close(w.done)
		delete(h.enders, run)
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
		if w, ok := h.enders[run]; ok && kind == "E" {
			close(w.done)
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

// notifier sends the server's notifications in the background, all
// that were asked for within notifyLinger of the first in one statement:
// a run's writes do not wait for them, many runs' take one round trip
// and one commit, and a listener gets each payload once (Postgres
// delivers a transaction's identical notifications once; a run's steps
// each ask for "e RUN").
type notifier struct {
	pool    *pgxpool.Pool
	channel string
	log     *slog.Logger
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once

	mu      sync.Mutex
	pending []string
}

// notifyLinger is how long the notifier lets notifications gather before
// it sends them. Only the other replicas wait for it (jobs.notify wakes
// this one's waiters at once): a stream or a wait on another replica
// learns of a run's events and of its end up to this much later. In
// exchange Postgres commits a notifying transaction, and wakes every
// listener, once every few milliseconds instead of once or twice a turn.
const notifyLinger = 5 * time.Millisecond

// startNotifier starts sending notifications on channel.
func startNotifier(pool *pgxpool.Pool, channel string, log *slog.Logger) *notifier {
	n := &notifier{pool: pool, channel: channel, log: log, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go n.loop()
	return n
}

// send queues payloads.
func (n *notifier) send(payloads ...string) {
	n.mu.Lock()
	n.pending = append(n.pending, payloads...)
	n.mu.Unlock()
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// close sends what is queued and stops; it may be called again.
func (n *notifier) close() {
	n.once.Do(func() { close(n.stop) })
	<-n.done
}

func (n *notifier) loop() {
	defer close(n.done)
	for {
		select {
		case <-n.kick:
			select {
			case <-time.After(notifyLinger):
			case <-n.stop:
			}
			n.flush()
		case <-n.stop:
			n.flush()
			return
		}
	}
}

func (n *notifier) flush() {
	n.mu.Lock()
	payloads := n.pending
	n.pending = nil
	n.mu.Unlock()
	if len(payloads) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := n.pool.Exec(ctx, `SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`, n.channel, payloads)
	if err != nil {
		n.log.Warn("notify", "channel", n.channel, "notifications", len(payloads), "err", err)
	}
}

// publisher writes the events of a run this replica executes to
// loom_run_events, numbering them after those already there (a run taken
// up again after its replica stopped goes on counting). Events go out with
// the run's next checkpoint, in its transaction (postgres.WithWrites: one
// round trip and one commit for a step and its events), or, when no
// checkpoint comes within a few milliseconds (a long step), in a batch of
// their own, in the background. Each write is followed by a notification.
// The events of every checkpointed step are kept when the replica dies:
// the step's own go with its checkpoint or before, and its end (the
// state event, which names the checkpoint) with the next checkpoint or
// before; if the replica died first, the attempt that takes the run up
// again writes the end of the head's step (restoreStepEnd). What may be
// lost is the events of the step that was running, which runs again.
// With a saver that does not take the events with its checkpoints, the
// run waits for the write of each step's end instead.
type publisher struct {
	j       *jobs
	run     string
	kick    chan struct{} // a batch is waiting
	closing chan struct{} // closed by close
	done    chan struct{} // closed when the writer has stopped
	wmu     sync.Mutex    // one write at a time, in order

	mu   sync.Mutex
	seq  int
	buf  []event
	err  error  // the first failed write; later events are dropped
	with string // the last checkpoint whose Put took the events with it
}

const insertEventsSQL = `
INSERT INTO loom_run_events (run_id, seq, terminal, body)
SELECT $1, s, false, b FROM unnest($2::integer[], $3::bytea[]) AS t(s, b)`

// insertStepEventsSQL writes events in the transaction of checkpoint $5
// of thread $4, when it went in.
const insertStepEventsSQL = insertEventsSQL + `
WHERE EXISTS (SELECT 1 FROM loom_checkpoints WHERE thread = $4 AND id = $5)`

// linger is how long the publisher lets events gather before it writes
// them: a little latency for streams, many fewer writes and wake-ups.
const linger = 10 * time.Millisecond

// publisher starts writing run's events after seq.
func (j *jobs) publisher(run string, seq int) *publisher {
	p := &publisher{j: j, run: run, seq: seq, kick: make(chan struct{}, 1), closing: make(chan struct{}), done: make(chan struct{})}
	go p.loop()
	return p
}

// publish numbers e and queues it for writing. At the end of a step
// whose checkpoint did not take the events with it, it waits for the
// write.
func (p *publisher) publish(e event) {
	p.mu.Lock()
	p.seq++
	e.Seq = p.seq
	p.buf = append(p.buf, e)
	wait := e.Kind == graph.KindState && (e.Checkpoint == "" || e.Checkpoint != p.with)
	p.mu.Unlock()
	if wait {
		p.flush()
		return
	}
	p.wake()
}

// withCheckpoint implements postgres.With: the events queued go with
// checkpoint cp, in its transaction. Writes stay in order: it waits for a
// write in flight, and the next waits for the checkpoint's.
func (p *publisher) withCheckpoint(b *pgx.Batch, cp *checkpoint.Checkpoint) func(error) {
	p.wmu.Lock()
	p.mu.Lock()
	batch, failed := p.buf, p.err != nil
	p.buf = nil
	p.mu.Unlock()
	if failed {
		p.wmu.Unlock()
		return nil
	}
	if len(batch) > 0 {
		seqs, bodies := encodeEvents(batch)
		b.Queue(insertStepEventsSQL, p.run, seqs, bodies, cp.Thread, cp.ID)
	}
	return func(err error) {
		defer p.wmu.Unlock()
		p.mu.Lock()
		if err != nil {
			p.buf = append(batch, p.buf...) // for the next write
		} else {
			p.with = cp.ID
		}
		p.mu.Unlock()
		switch {
		case err != nil:
			p.wake()
		case len(batch) > 0:
			p.j.notify(context.Background(), "e "+p.run)
		}
	}
}

// wake asks the writer for a batch.
func (p *publisher) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// close stops the writer and writes what is queued. It returns the
// error that made it drop events, if any.
func (p *publisher) close() error {
	p.stop()
	p.flush()
	return p.failed()
}

// stop stops the background writer; what is queued stays, for flush or
// rest.
func (p *publisher) stop() {
	close(p.closing)
	<-p.done
}

// failed returns the error that made the publisher drop events, if any.
func (p *publisher) failed() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// rest takes the events queued and not written, for the transaction of
// the run's end to write, once the writer has stopped.
func (p *publisher) rest() []event {
	p.mu.Lock()
	defer p.mu.Unlock()
	batch := p.buf
	p.buf = nil
	if p.err != nil {
		return nil
	}
	return batch
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
				return
			}
			p.flush()
		case <-p.closing:
			return
		}
	}
}

// encodeEvents returns the numbers and the JSON of events.
func encodeEvents(batch []event) ([]int32, [][]byte) {
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
	return seqs, bodies
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
	seqs, bodies := encodeEvents(batch)
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
