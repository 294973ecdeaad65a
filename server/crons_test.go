package server_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loomkit/loom/apps/demo"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/store"
	"github.com/loomkit/loom/store/storetest"
)

// onBoth runs test on a SQLite server and on two Postgres replicas
// (skipped, naming the variable, when no Postgres is reachable). urls
// are the servers' URLs; on SQLite there is one.
func onBoth(t *testing.T, opts server.Options, test func(t *testing.T, urls []string)) {
	t.Run("sqlite", func(t *testing.T) {
		test(t, []string{startServer(t, opts).URL})
	})
	t.Run("postgres", func(t *testing.T) {
		rs := startReplicas(t, 2, opts)
		test(t, []string{rs[0].URL, rs[1].URL})
	})
}

// runsOf lists a thread's runs (newest first).
func runsOf(t *testing.T, url, key, thread string) []map[string]any {
	t.Helper()
	st, b := call(t, "GET", url+"/threads/"+thread+"/runs?limit=1000", key, nil)
	if st != 200 {
		t.Fatalf("list runs: %d %s", st, b)
	}
	var out []map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// A thread's cron fires once per tick, on one server or across two
// replicas on one Postgres: over a window of W seconds a cron due every
// second starts at most W+1 runs (a cron that two replicas fired would
// start about 2W), and it starts some. Search, count, update and delete
// work as the LangGraph API has them; a deleted cron fires no more.
func TestCronFiresOncePerTick(t *testing.T) {
	onBoth(t, server.Options{Keys: []string{"k1", "k2"}}, func(t *testing.T, urls []string) {
		thread := createThread(t, urls[0], "k1")
		began := time.Now()
		st, b := call(t, "POST", urls[0]+"/threads/"+thread+"/runs/crons", "k1", map[string]any{
			"assistant_id": "echo", "schedule": "@every 1s", "input": map[string]any{"text": "tick"},
			"multitask_strategy": "enqueue", "metadata": map[string]string{"purpose": "test"}})
		if st != 200 {
			t.Fatalf("create cron: %d %s", st, b)
		}
		c := mustJSON(t, b)
		id := c["cron_id"].(string)
		if c["thread_id"] != thread || c["schedule"] != "@every 1s" || c["next_run_date"] == nil || c["enabled"] != true {
			t.Fatalf("cron: %s", b)
		}
		waitFor(t, "three runs", func() bool { return len(runsOf(t, urls[len(urls)-1], "k1", thread)) >= 3 })

		// Another key sees none of it.
		if st, b := call(t, "POST", urls[0]+"/runs/crons/search", "k2", map[string]any{}); st != 200 || string(b) != "[]\n" {
			t.Fatalf("other key's search: %d %s", st, b)
		}
		if st, _ := call(t, "DELETE", urls[0]+"/runs/crons/"+id, "k2", nil); st != 404 {
			t.Fatalf("other key's delete: %d, want 404", st)
		}
		st, b = call(t, "POST", urls[len(urls)-1]+"/runs/crons/search", "k1", map[string]any{"thread_id": thread, "select": []string{"cron_id", "schedule"}})
		if st != 200 || string(b) != fmt.Sprintf(`[{"cron_id":%q,"schedule":"@every 1s"}]`+"\n", id) {
			t.Fatalf("search: %d %s", st, b)
		}
		if st, b := call(t, "POST", urls[0]+"/runs/crons/count", "k1", map[string]any{"assistant_id": "echo"}); st != 200 || string(b) != "1\n" {
			t.Fatalf("count: %d %s", st, b)
		}
		if st, b := call(t, "DELETE", urls[0]+"/runs/crons/"+id, "k1", nil); st != 204 {
			t.Fatalf("delete: %d %s", st, b)
		}
		window := time.Since(began)
		time.Sleep(1500 * time.Millisecond) // a tick that claimed the cron before the delete may still start its run
		runs := runsOf(t, urls[0], "k1", thread)
		if max := int(window/time.Second) + 2; len(runs) > max {
			t.Fatalf("%d runs in %v: more than one per tick (at most %d)", len(runs), window, max)
		}
		for _, r := range runs {
			if md, _ := r["metadata"].(map[string]any); md["cron_id"] != id || md["purpose"] != "test" {
				t.Fatalf("run metadata %v: want the cron's id and metadata", r["metadata"])
			}
		}
		n := len(runs)
		time.Sleep(2 * time.Second)
		if got := len(runsOf(t, urls[0], "k1", thread)); got != n {
			t.Fatalf("%d runs after the delete, then %d: a deleted cron fired", n, got)
		}
	})
}

// A stateless cron keeps the threads of its runs when asked to
// (on_run_completed keep); PATCH disables it and it fires no more.
func TestStatelessCron(t *testing.T) {
	ts := startServer(t, server.Options{})
	st, b := call(t, "POST", ts.URL+"/runs/crons", "", map[string]any{
		"assistant_id": "echo", "schedule": "@every 1s", "input": map[string]any{"text": "hi"}, "on_run_completed": "keep"})
	if st != 200 {
		t.Fatalf("create: %d %s", st, b)
	}
	c := mustJSON(t, b)
	if c["thread_id"] != nil || c["on_run_completed"] != "keep" {
		t.Fatalf("cron: %s", b)
	}
	threads := func() int {
		_, b := call(t, "POST", ts.URL+"/threads/count", "", map[string]any{})
		var n int
		json.Unmarshal(b, &n)
		return n
	}
	waitFor(t, "two threads", func() bool { return threads() >= 2 })
	st, b = call(t, "PATCH", ts.URL+"/runs/crons/"+c["cron_id"].(string), "", map[string]any{"enabled": false})
	if st != 200 || mustJSON(t, b)["enabled"] != false {
		t.Fatalf("disable: %d %s", st, b)
	}
	time.Sleep(1500 * time.Millisecond)
	n := threads()
	time.Sleep(2 * time.Second)
	if got := threads(); got != n {
		t.Fatalf("threads %d then %d: a disabled cron fired", n, got)
	}
}

// Cron, prune and TTL requests with what the server cannot act on are
// refused with a 4xx naming what is wrong, never a 5xx.
func TestCronBadInput(t *testing.T) {
	ts := startServer(t, server.Options{Quotas: server.Quotas{MaxInput: 1000}})
	thread := createThread(t, ts.URL, "")
	st, b := call(t, "POST", ts.URL+"/runs/crons", "", map[string]any{"assistant_id": "echo", "schedule": "0 9 * * 1-5"})
	if st != 200 {
		t.Fatalf("create: %d %s", st, b)
	}
	cron := mustJSON(t, b)["cron_id"].(string)
	if st, b := call(t, "POST", ts.URL+"/threads/"+thread+"/runs/wait", "", map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "x"}}); st != 200 {
		t.Fatalf("run: %d %s", st, b)
	}
	runs := runsOf(t, ts.URL, "", thread)
	many := make([]string, 1001)
	for i := range many {
		many[i] = fmt.Sprint("t", i)
	}
	for _, tc := range []struct {
		method, path string
		body         any
		want         string
	}{
		{"PATCH", "/runs/crons/" + cron, map[string]any{"schedule": "every day"}, "every day"},
		{"PATCH", "/runs/crons/" + cron, map[string]any{"input": map[string]any{"text": 1}}, "text"},
		{"PATCH", "/runs/crons/nocron", map[string]any{"enabled": false}, "nocron"},
		{"PATCH", "/runs/crons/" + cron, `{"enabled": tru`, "malformed"},
		{"DELETE", "/runs/crons/nocron", nil, "nocron"},
		{"POST", "/runs/crons/search", map[string]any{"select": []string{"secret"}}, "select"},
		{"POST", "/runs/crons/search", map[string]any{"limit": 5000}, "limit"},
		{"POST", "/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "* * * * *", "input": map[string]any{"text": strings.Repeat("x", 2000)}}, "--max-input"},
		{"POST", "/runs/crons", map[string]any{"assistant_id": "echo", "schedule": strings.Repeat("* ", 200)}, "longer than"},
		{"POST", "/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "* * * * *", "stream_mode": "values"}, "stream_mode"},
		{"POST", "/threads/prune", map[string]any{"thread_ids": many}, "thread_ids"},
		{"POST", "/threads/prune", map[string]any{"thread_ids": "t1"}, "malformed"},
		{"POST", "/threads/prune", map[string]any{}, "thread_ids"},
		{"POST", "/threads", map[string]any{"ttl": "soon"}, "ttl"},
		{"POST", "/threads", map[string]any{"ttl": map[string]any{"ttl": 5, "strategy": "archive"}}, "strategy"},
		{"POST", "/threads", map[string]any{"ttl": map[string]any{"minutes": 5}}, "ttl"},
		{"PATCH", "/threads/" + thread, map[string]any{"ttl": 1e12}, "ttl"},
		{"GET", "/threads/" + thread + "/runs/" + runs[0]["run_id"].(string) + "/webhook", nil, "no webhook"},
	} {
		st, b := call(t, tc.method, ts.URL+tc.path, "", tc.body)
		if st < 400 || st > 499 || !json.Valid(b) || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s %s %v: %d %s, want a 4xx naming %q", tc.method, tc.path, tc.body, st, b, tc.want)
		}
	}
	for _, tc := range []struct {
		path string
		body any
		want string
	}{
		{"/runs/crons", map[string]any{"assistant_id": "echo"}, "schedule is required"},
		{"/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "61 * * * *"}, `61 * * * *`},
		{"/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "0 0 30 2 *"}, "never fires"},
		{"/runs/crons", map[string]any{"assistant_id": "nobody", "schedule": "* * * * *"}, "nobody"},
		{"/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "* * * * *", "input": map[string]any{"text": 3}}, "text"},
		{"/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "* * * * *", "frequency": 3}, "frequency"},
		{"/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "* * * * *", "on_run_completed": "archive"}, "on_run_completed"},
		{"/threads/" + thread + "/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "* * * * *", "on_run_completed": "keep"}, "on_run_completed"},
		{"/threads/nothread/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "* * * * *"}, "not found"},
		{"/runs/crons/search", map[string]any{"sort_by": "colour"}, "sort_by"},
	} {
		st, b := call(t, "POST", ts.URL+tc.path, "", tc.body)
		if st < 400 || st > 499 || !json.Valid(b) || !strings.Contains(string(b), tc.want) {
			t.Errorf("POST %s %v: %d %s, want a 4xx naming %q", tc.path, tc.body, st, b, tc.want)
		}
	}
}

// A cron that was due several times while no server ran fires once when
// one starts, then follows its schedule from then.
func TestCronMissedTicksFireOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "loom.db")
	ts := startServer(t, server.Options{Database: path})
	thread := createThread(t, ts.URL, "")
	st, b := call(t, "POST", ts.URL+"/threads/"+thread+"/runs/crons", "", map[string]any{
		"assistant_id": "echo", "schedule": "* * * * *", "input": map[string]any{"text": "minute"}, "multitask_strategy": "enqueue"})
	if st != 200 {
		t.Fatalf("create: %d %s", st, b)
	}
	ts.shutdown()

	// Ten minutes of ticks were missed.
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SQL().Exec(`UPDATE loom_crons SET next_run = ?`, time.Now().Add(-10*time.Minute).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	db.Close()

	started := time.Now()
	ts = startServer(t, server.Options{Database: path})
	waitFor(t, "the missed tick's run", func() bool { return len(runsOf(t, ts.URL, "", thread)) >= 1 })
	time.Sleep(2500 * time.Millisecond) // two more ticks of the server
	// A minute that begins meanwhile is a tick of the schedule, not a missed one.
	begun := int(time.Now().Truncate(time.Minute).Sub(started.Truncate(time.Minute)) / time.Minute)
	if n := len(runsOf(t, ts.URL, "", thread)); n < 1 || n > 1+begun {
		t.Fatalf("%d runs after ten missed ticks (%d minutes began meanwhile), want 1", n, begun)
	}
	_, b = call(t, "POST", ts.URL+"/runs/crons/search", "", map[string]any{})
	var crons []map[string]any
	json.Unmarshal(b, &crons)
	next, _ := time.Parse(time.RFC3339, fmt.Sprint(crons[0]["next_run_date"]))
	// The catch-up run set the next run to the minute after it fired; the
	// server may already have fired that one too if a minute began.
	if !next.After(started) || next.After(time.Now().Add(time.Minute)) {
		t.Fatalf("next run %v (server started %v): want a minute of the schedule after the start", crons[0]["next_run_date"], started.Format(time.RFC3339))
	}
}

// receiver is a webhook receiver: it answers the first fail requests
// with 500, then 200, and keeps what it got.
type receiver struct {
	mu   sync.Mutex
	fail int
	got  []delivery
}

type delivery struct {
	body []byte
	sig  string
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.got = append(rc.got, delivery{b, r.Header.Get("X-Loom-Signature")})
	if len(rc.got) <= rc.fail {
		w.WriteHeader(http.StatusInternalServerError)
	}
}

func (rc *receiver) deliveries() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.got...)
}

// A run's webhook is delivered when the run ends, signed with the key's
// secret; a receiver that fails gets it again, and every attempt is
// shown. Loopback receivers are refused unless LOOM_WEBHOOK_ALLOW_PRIVATE
// allows them.
func TestWebhook(t *testing.T) {
	ts0 := startServer(t, server.Options{})
	st, b := call(t, "POST", ts0.URL+"/runs/wait", "", map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "x"}, "webhook": "http://127.0.0.1:9/hook"})
	if st != 422 || !strings.Contains(string(b), "private") {
		t.Fatalf("loopback webhook: %d %s, want 422", st, b)
	}
	for _, u := range []string{"ftp://example.com/x", "http://user:pw@example.com/x", "http://localhost/x", "http://10.1.2.3/x"} {
		if st, b := call(t, "POST", ts0.URL+"/runs", "", map[string]any{"assistant_id": "echo", "webhook": u}); st != 422 {
			t.Errorf("webhook %s: %d %s, want 422", u, st, b)
		}
	}
	ts0.shutdown()

	t.Setenv("LOOM_WEBHOOK_ALLOW_PRIVATE", "1")
	onBoth(t, server.Options{Keys: []string{"k1"}}, func(t *testing.T, urls []string) {
		rc := &receiver{fail: 1}
		hook := httptest.NewServer(rc)
		defer hook.Close()
		st, b := call(t, "GET", urls[0]+"/webhooks/secret", "k1", nil)
		if st != 200 {
			t.Fatalf("secret: %d %s", st, b)
		}
		secret := mustJSON(t, b)["secret"].(string)

		thread := createThread(t, urls[0], "k1")
		st, b = call(t, "POST", urls[0]+"/threads/"+thread+"/runs", "k1", map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "hello"}, "webhook": hook.URL + "/done?token=abc"})
		if st != 200 {
			t.Fatalf("run: %d %s", st, b)
		}
		run := mustJSON(t, b)["run_id"].(string)
		waitFor(t, "two deliveries", func() bool { return len(rc.deliveries()) >= 2 })
		for _, d := range rc.deliveries() {
			m := hmac.New(sha256.New, []byte(secret))
			m.Write(d.body)
			if want := "sha256=" + hex.EncodeToString(m.Sum(nil)); !hmac.Equal([]byte(d.sig), []byte(want)) {
				t.Fatalf("signature %q, want %q", d.sig, want)
			}
			var got map[string]any
			json.Unmarshal(d.body, &got)
			values, _ := got["values"].(map[string]any)
			if got["run_id"] != run || got["thread_id"] != thread || got["status"] != "success" || !strings.Contains(fmt.Sprint(values["reply"]), "hello") {
				t.Fatalf("delivery: %s", d.body)
			}
		}
		var w map[string]any
		waitFor(t, "the delivery recorded", func() bool {
			st, b := call(t, "GET", urls[len(urls)-1]+"/threads/"+thread+"/runs/"+run+"/webhook", "k1", nil)
			w = mustJSON(t, b)
			return st == 200 && w["status"] == "delivered"
		})
		attempts := w["attempts"].([]any)
		if len(attempts) != 2 || attempts[0].(map[string]any)["status_code"] != 500.0 || attempts[1].(map[string]any)["status_code"] != 200.0 {
			t.Fatalf("attempts: %v", w)
		}
		if strings.Contains(fmt.Sprint(attempts), "token=abc") {
			t.Fatalf("attempts show the URL's query: %v", attempts)
		}
		if n := len(rc.deliveries()); n != 2 {
			t.Fatalf("%d deliveries, want 2", n)
		}
	})
}

// history returns how many checkpoints a thread's history has.
func history(t *testing.T, url, key, thread string) int {
	t.Helper()
	st, b := call(t, "POST", url+"/threads/"+thread+"/history", key, map[string]any{"limit": 1000})
	if st != 200 {
		t.Fatalf("history: %d %s", st, b)
	}
	var h []map[string]any
	json.Unmarshal(b, &h)
	return len(h)
}

// runOn runs the slow agent on a new thread to its end and returns the
// thread.
func runOn(t *testing.T, url, key string, extra map[string]any) string {
	t.Helper()
	thread := createThread(t, url, key)
	body := map[string]any{"assistant_id": "slow", "input": map[string]int{"steps": 4, "ms": 1}}
	st, b := call(t, "POST", url+"/threads/"+thread+"/runs/wait", key, body)
	if st != 200 {
		t.Fatalf("run: %d %s", st, b)
	}
	if extra != nil {
		st, b := call(t, "PATCH", url+"/threads/"+thread, key, extra)
		if st != 200 {
			t.Fatalf("patch: %d %s", st, b)
		}
	}
	return thread
}

// POST /threads/prune deletes the threads named, or cuts them to their
// latest checkpoint, and nothing else; thread TTLs do the same once the
// sweeper finds them expired; the history policy keeps the last N
// checkpoints of each thread, and a run from an older one is a 410.
func TestRetention(t *testing.T) {
	onBoth(t, server.Options{Keys: []string{"k1", "k2"}, Retention: server.Retention{SweepEvery: 100 * time.Millisecond}}, func(t *testing.T, urls []string) {
		u := urls[0]
		a, b, c := runOn(t, u, "k1", nil), runOn(t, u, "k1", nil), runOn(t, u, "k1", nil)
		other := runOn(t, u, "k2", nil)
		full := history(t, u, "k1", c)
		if full < 5 {
			t.Fatalf("history of %d checkpoints, want a run's steps", full)
		}
		st, body := call(t, "POST", u+"/threads/prune", "k1", map[string]any{"thread_ids": []string{a, other, "nothread"}})
		if st != 200 || string(body) != `{"pruned_count":1}`+"\n" {
			t.Fatalf("prune delete: %d %s", st, body)
		}
		if st, _ := call(t, "GET", u+"/threads/"+a, "k1", nil); st != 404 {
			t.Fatalf("pruned thread: %d, want 404", st)
		}
		if st, _ := call(t, "GET", u+"/threads/"+other, "k2", nil); st != 200 {
			t.Fatalf("another key's thread of that id: %d, want it kept", st)
		}
		st, body = call(t, "POST", u+"/threads/prune", "k1", map[string]any{"thread_ids": []string{b}, "strategy": "keep_latest"})
		if st != 200 || string(body) != `{"pruned_count":1}`+"\n" {
			t.Fatalf("prune keep_latest: %d %s", st, body)
		}
		if n := history(t, u, "k1", b); n != 1 {
			t.Fatalf("history after keep_latest: %d, want 1", n)
		}
		_, sb := call(t, "GET", u+"/threads/"+b+"/state", "k1", nil)
		if v := mustJSON(t, sb)["values"].(map[string]any); v["done"] != 4.0 {
			t.Fatalf("state after keep_latest: %s", sb)
		}
		if n := history(t, u, "k1", c); n != full {
			t.Fatalf("history of an untouched thread: %d, want %d", n, full)
		}
		if st, body := call(t, "POST", u+"/threads/prune", "k1", map[string]any{"thread_ids": []string{c}, "strategy": "archive"}); st != 422 {
			t.Fatalf("bad strategy: %d %s", st, body)
		}

		// TTLs: a few seconds (minutes as LangGraph takes them).
		gone := runOn(t, u, "k1", map[string]any{"ttl": map[string]any{"ttl": 0.02, "strategy": "delete"}})
		cut := runOn(t, u, "k1", map[string]any{"ttl": map[string]any{"ttl": 0.02, "strategy": "keep_latest"}})
		st, body = call(t, "POST", u+"/threads", "k1", map[string]any{"ttl": 0.02})
		if st != 200 {
			t.Fatalf("create with ttl: %d %s", st, body)
		}
		bare := mustJSON(t, body)["thread_id"].(string)
		keep := runOn(t, u, "k1", map[string]any{"ttl": 600})
		waitFor(t, "the TTLs applied", func() bool {
			st1, _ := call(t, "GET", u+"/threads/"+gone, "k1", nil)
			st2, _ := call(t, "GET", u+"/threads/"+bare, "k1", nil)
			return st1 == 404 && st2 == 404 && history(t, u, "k1", cut) == 1
		})
		if n := history(t, u, "k1", keep); n != full {
			t.Fatalf("history of a thread whose TTL is far: %d, want %d", n, full)
		}
		if n := history(t, u, "k1", c); n != full {
			t.Fatalf("history of a thread without TTL: %d, want %d", n, full)
		}
		if st, body := call(t, "POST", u+"/threads", "k1", map[string]any{"ttl": map[string]any{"ttl": -1}}); st != 422 {
			t.Fatalf("negative ttl: %d %s", st, body)
		}
	})
}

// With KeepCheckpoints the sweeper keeps each thread's last N
// checkpoints; a run from an older one is refused with 410, saying why.
func TestHistoryPolicy(t *testing.T) {
	opts := server.Options{Retention: server.Retention{KeepCheckpoints: 3, SweepEvery: 100 * time.Millisecond}}
	t.Run("sqlite", func(t *testing.T) { historyPolicy(t, startServer(t, opts).URL) })
	t.Run("postgres", func(t *testing.T) {
		opts.Database = storetest.PostgresURL(t)
		historyPolicy(t, startServer(t, opts).URL)
	})
}

func historyPolicy(t *testing.T, u string) {
	thread := createThread(t, u, "")
	st, b := call(t, "POST", u+"/threads/"+thread+"/runs/wait", "", map[string]any{"assistant_id": "slow", "input": map[string]int{"steps": 6, "ms": 1}})
	if st != 200 {
		t.Fatalf("run: %d %s", st, b)
	}
	// The first checkpoint, before the sweeper gets to it.
	_, b = call(t, "POST", u+"/threads/"+thread+"/history", "", map[string]any{"limit": 1000})
	var h []map[string]any
	json.Unmarshal(b, &h)
	first := h[len(h)-1]["checkpoint"].(map[string]any)["checkpoint_id"]
	waitFor(t, "the history cut to 3", func() bool { return history(t, u, "", thread) == 3 })
	_, sb := call(t, "GET", u+"/threads/"+thread+"/state", "", nil)
	if v := mustJSON(t, sb)["values"].(map[string]any); v["done"] != 6.0 {
		t.Fatalf("state after the cut: %s", sb)
	}
	st, b = call(t, "POST", u+"/threads/"+thread+"/runs/wait", "", map[string]any{"assistant_id": "slow", "checkpoint_id": first, "input": map[string]int{"steps": 1, "ms": 1}})
	if st != 410 || !strings.Contains(string(b), "last 3 checkpoints") {
		t.Fatalf("run from a deleted checkpoint: %d %s, want 410", st, b)
	}
	// The thread goes on from its head.
	st, b = call(t, "POST", u+"/threads/"+thread+"/runs/wait", "", map[string]any{"assistant_id": "slow", "input": map[string]int{"steps": 2, "ms": 1}})
	if st != 200 || mustJSON(t, b)["done"] != 2.0 {
		t.Fatalf("run after the cut: %d %s", st, b)
	}
}

// Cutting a thread's history cuts its subgraphs' too: the review
// subgraph of demo.Composed keeps checkpoints on a thread of its own,
// which the history policy and keep_latest once left to grow for ever.
func TestHistoryPolicySubgraphs(t *testing.T) {
	agents := testAgents(t)
	g, err := demo.Composed()
	if err != nil {
		t.Fatal(err)
	}
	if err := agents.Register(server.Agent{Name: "composed", Description: "the demo, its review a subgraph", InputSchema: server.InputSchemaFor[demo.Input](), Build: server.Compile(g)}); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, server.Options{Agents: agents})
	u, ctx := ts.URL, t.Context()
	thread := createThread(t, u, "")
	review := thread + "|review" // graph.SubgraphThread
	count := func(th string) int {
		t.Helper()
		cps, err := ts.srv.Saver().List(ctx, th, 0)
		if err != nil {
			t.Fatalf("list %s: %v", th, err)
		}
		return len(cps)
	}
	turn := func(req map[string]any) {
		t.Helper()
		req["assistant_id"] = "composed"
		if st, b := call(t, "POST", u+"/threads/"+thread+"/runs/wait", "", req); st != 200 {
			t.Fatalf("run: %d %s", st, b)
		}
	}
	for range 2 {
		turn(map[string]any{"input": map[string]any{"title": "trip"}})
		turn(map[string]any{"command": map[string]any{"resume": map[string]any{"accept": true}}})
	}
	if n := count(review); n < 2 {
		t.Fatalf("the review subgraph kept %d checkpoints on %s, want several", n, review)
	}
	if st, b := call(t, "POST", u+"/threads/prune", "", map[string]any{"thread_ids": []string{thread}, "strategy": "keep_latest"}); st != 200 || mustJSON(t, b)["pruned_count"] != 1.0 {
		t.Fatalf("prune keep_latest: %d %s", st, b)
	}
	if n, m := count(thread), count(review); n != 1 || m != 1 {
		t.Fatalf("after keep_latest: the thread keeps %d checkpoints and its subgraph %d, want 1 and 1", n, m)
	}
	// The thread and its subgraph go on from what was kept.
	turn(map[string]any{"input": map[string]any{"title": "trip"}})
	turn(map[string]any{"command": map[string]any{"resume": map[string]any{"accept": true}}})
	if m := count(review); m < 2 {
		t.Fatalf("after another turn the subgraph has %d checkpoints, want it to have gone on", m)
	}
}

// TestCronsSDK runs sdktest/crons.mjs, the official LangGraph JS client
// making crons, receiving their runs' signed webhooks, and giving
// threads TTLs and pruning them, against one SQLite server and against
// two Postgres replicas behind a round-robin balancer.
func TestCronsSDK(t *testing.T) {
	const key = "crons-key"
	t.Setenv("LOOM_WEBHOOK_ALLOW_PRIVATE", "1")
	opts := server.Options{Keys: []string{key}, Retention: server.Retention{SweepEvery: 100 * time.Millisecond}}
	t.Run("sqlite", func(t *testing.T) {
		runSDK(t, startServer(t, opts).URL, key, "", "crons.mjs")
	})
	t.Run("postgres", func(t *testing.T) {
		runSDK(t, roundRobin(t, startReplicas(t, 2, opts)), key, "", "crons.mjs")
	})
}
