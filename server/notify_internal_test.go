package server

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/loomkit/loom/graph"
)

// TestNotifyWakesThisReplicaAtOnce: a run's end wakes the waits on the
// replica that announced it before any notification has gone through
// Postgres, and the other replicas get each payload of a batch once.
func TestNotifyWakesThisReplicaAtOnce(t *testing.T) {
	_, j, u := startPostgresJobs(t)
	ctx := t.Context()

	ended := j.hub.waitEnd("run-local")
	j.notify(ctx, "E run-local")
	select {
	case <-ended.done:
	default:
		t.Fatal("the wait for the run's end is still waiting after notify returned")
	}

	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{j.notes.channel}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	j.notify(ctx, "e run-a", "e run-b", "e run-a", "E run-a", "e run-b", "e run-a")
	// Once a notification of the batch is here, the batch has committed:
	// a notification sent now comes after all of it.
	const last = "after the batch"
	var got []string
	sent := false
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		n, err := conn.WaitForNotification(wctx)
		if err != nil {
			t.Fatalf("waiting for the notifications, got %q: %v", got, err)
		}
		if n.Payload == last {
			break
		}
		if !strings.HasSuffix(n.Payload, " run-a") && !strings.HasSuffix(n.Payload, " run-b") {
			continue
		}
		got = append(got, n.Payload)
		if !sent {
			if _, err := conn.Exec(ctx, "SELECT pg_notify($1, $2)", j.notes.channel, last); err != nil {
				t.Fatal(err)
			}
			sent = true
		}
	}
	slices.Sort(got)
	if want := []string{"E run-a", "e run-a", "e run-b"}; !slices.Equal(got, want) {
		t.Fatalf("another replica got %q, want each payload once: %q", got, want)
	}
}

// TestEndHandedOver: the replica that ended a run hands the terminal
// event to the waits for its end there, which return it without reading
// the table (this feed has no database: a read would fail the test); a
// wait woken by another replica's notification is left to read it.
func TestEndHandedOver(t *testing.T) {
	h := &hub{waiters: map[string]chan struct{}{}, enders: map[string]*ending{}}
	j := &jobs{hub: h}
	f := &pgFeed{j: j, run: "run-1", armed: h.waitEnd("run-1")}
	end := event{Kind: graph.KindRunEnd, Seq: 7, Time: time.Unix(1700000000, 0)}
	h.ended("run-1", end)
	h.dispatch("E run-1")
	got, err := f.end(t.Context())
	if err != nil || got.Seq != 7 || got.Kind != graph.KindRunEnd || !got.Time.Equal(end.Time) {
		t.Fatalf("end: %+v, %v; want the event handed over, seq 7", got, err)
	}
	if len(h.enders) != 0 || len(h.waiters) != 0 {
		t.Errorf("the hub still holds %d waits for ends and %d for events", len(h.enders), len(h.waiters))
	}

	// Ended elsewhere: the wait is woken with nothing handed over.
	w := h.waitEnd("run-2")
	h.dispatch("E run-2")
	<-w.done
	if w.end != nil {
		t.Errorf("a run ended by another replica came with an event: %+v", *w.end)
	}
	// No wait, nothing kept.
	h.ended("run-3", end)
	if len(h.enders) != 0 {
		t.Errorf("an end nobody waits for is kept: %d waits", len(h.enders))
	}
}
