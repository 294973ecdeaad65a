package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/store"
)

// sseEvent is one parsed SSE event; comment lines are counted as
// heartbeats.
type sseEvent struct {
	id    int
	event string
	data  string
}

// readSSE reads events from r until it ends or stop says so.
func readSSE(t testing.TB, r io.Reader, stop func(sseEvent) bool) (events []sseEvent, beats int) {
	t.Helper()
	sc := bufio.NewScanner(r)
	var cur sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.event != "" || cur.data != "" {
				events = append(events, cur)
				if stop != nil && stop(cur) {
					return events, beats
				}
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, ":"):
			beats++
		case strings.HasPrefix(line, "id: "):
			cur.id, _ = strconv.Atoi(line[4:])
		case strings.HasPrefix(line, "event: "):
			cur.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[6:]
		}
	}
	return events, beats
}

func lastDone(t testing.TB, events []sseEvent) int {
	t.Helper()
	done := -1
	for _, e := range events {
		if e.event == "values" {
			var v struct{ Done int }
			json.Unmarshal([]byte(e.data), &v)
			done = v.Done
		}
	}
	return done
}

// Idle streams get heartbeats, as SSE comments and as NDJSON lines; the
// events are the same in both formats.
func TestStreamHeartbeatAndNDJSON(t *testing.T) {
	ts := startServer(t, server.Options{Heartbeat: 20 * time.Millisecond})
	body := map[string]any{"assistant_id": "slow", "input": map[string]int{"steps": 3, "ms": 120}, "stream_mode": []string{"values", "custom"}}

	resp := do(t, "POST", ts.URL+"/threads/"+createThread(t, ts.URL, "")+"/runs/stream", "", body)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	events, beats := readSSE(t, resp.Body, nil)
	resp.Body.Close()
	if beats < 3 {
		t.Errorf("SSE: %d heartbeats in 360ms of silence at a 20ms heartbeat", beats)
	}
	if events[0].event != "metadata" || lastDone(t, events) != 3 {
		t.Errorf("SSE events %+v", events)
	}

	for _, how := range []struct{ query, accept string }{{"?format=ndjson", ""}, {"", "application/x-ndjson"}} {
		resp = do(t, "POST", ts.URL+"/threads/"+createThread(t, ts.URL, "")+"/runs/stream"+how.query, "", body, "Accept", how.accept)
		if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
			t.Fatalf("content type %q", ct)
		}
		sc := bufio.NewScanner(resp.Body)
		counts := map[string]int{}
		done := 0
		for sc.Scan() {
			var line struct {
				Event string
				Data  struct{ Done int }
			}
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				t.Fatalf("NDJSON line %q: %v", sc.Text(), err)
			}
			counts[line.Event]++
			if line.Event == "values" {
				done = line.Data.Done
			}
		}
		resp.Body.Close()
		if counts["heartbeat"] < 3 || counts["metadata"] != 1 || counts["custom"] != 3 || done != 3 {
			t.Errorf("NDJSON %q: counts %v, done %d", how, counts, done)
		}
	}
}

// A client that disconnects mid-stream neither stops nor corrupts the
// run: it goes on, checkpointed, and the stream can be joined again from
// the last event seen.
func TestDisconnectedClient(t *testing.T) {
	ts := startServer(t, server.Options{})
	thread := createThread(t, ts.URL, "")
	resp := do(t, "POST", ts.URL+"/threads/"+thread+"/runs/stream", "",
		map[string]any{"assistant_id": "slow", "input": map[string]int{"steps": 6, "ms": 40}, "stream_mode": "values"})
	run := path.Base(resp.Header.Get("Content-Location"))
	seen, _ := readSSE(t, resp.Body, func(e sseEvent) bool { return e.event == "values" && strings.Contains(e.data, `"done":1`) })
	resp.Body.Close() // the client goes away after the first step
	last := seen[len(seen)-1].id

	joined := do(t, "GET", ts.URL+"/threads/"+thread+"/runs/"+run+"/stream", "", nil, "Last-Event-ID", strconv.Itoa(last))
	rest, _ := readSSE(t, joined.Body, nil)
	joined.Body.Close()
	for _, e := range rest {
		if e.id != 0 && e.id <= last {
			t.Errorf("joined stream repeats event %d (last seen %d)", e.id, last)
		}
	}
	if got := lastDone(t, rest); got != 6 {
		t.Fatalf("joined stream ended at done=%d, want 6: %+v", got, rest)
	}
	st, b := call(t, "GET", ts.URL+"/threads/"+thread+"/runs/"+run, "", nil)
	if st != 200 || mustJSON(t, b)["status"] != "success" {
		t.Fatalf("run: %d %s", st, b)
	}
	ts.shutdown()
	checkHistory(t, ts.Path, thread, 8) // input, begin, 6 work steps
}

// checkHistory asserts that thread's checkpoints in the database at dbURL
// (a SQLite file or a Postgres URL) form one unbroken line of n (any
// length when n < 0), each state readable, and returns them, newest first.
func checkHistory(t testing.TB, dbURL, thread string, n int) []*checkpoint.Checkpoint {
	t.Helper()
	db, err := store.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	hist, err := db.Saver().List(context.Background(), thread, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n >= 0 && len(hist) != n {
		t.Fatalf("%d checkpoints, want %d", len(hist), n)
	}
	for i, cp := range hist {
		if want := int64(len(hist) - 1 - i); cp.Seq != want {
			t.Fatalf("checkpoint %d has seq %d, want %d", i, cp.Seq, want)
		}
		if i+1 < len(hist) && cp.ParentID != hist[i+1].ID {
			t.Fatalf("checkpoint %s: parent %s, want %s", cp.ID, cp.ParentID, hist[i+1].ID)
		}
		var v map[string]any
		if err := json.Unmarshal(cp.State, &v); err != nil {
			t.Fatalf("checkpoint %s state: %v", cp.ID, err)
		}
	}
	return hist
}
