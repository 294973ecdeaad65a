package server

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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
	case <-ended:
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
