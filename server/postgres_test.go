package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/store"
	"github.com/loomkit/loom/store/storetest"
)

// startReplicas serves opts on n servers that share a new Postgres
// schema, as replicas of one service.
func startReplicas(t testing.TB, n int, opts server.Options) []*testServer {
	t.Helper()
	opts.Database = storetest.PostgresURL(t)
	out := make([]*testServer, n)
	for i := range out {
		out[i] = startServer(t, opts)
	}
	return out
}

// roundRobin serves a proxy that sends each request to the next replica
// in turn, as a load balancer would, and returns its URL.
func roundRobin(t testing.TB, replicas []*testServer) string {
	t.Helper()
	var next atomic.Int64
	targets := make([]*url.URL, len(replicas))
	for i, r := range replicas {
		targets[i], _ = url.Parse(r.URL)
	}
	p := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(targets[int(next.Add(1))%len(targets)])
			pr.Out.Host = pr.In.Host
		},
		FlushInterval: -1,
	}
	ps := httptest.NewServer(p)
	t.Cleanup(ps.Close)
	return ps.URL
}

// The LangGraph and OpenAI JS clients pass their tests against two
// replicas on Postgres behind a round-robin balancer: a run made on one
// replica is joined, streamed, cancelled and listed on the other.
func TestLangGraphSDKPostgres(t *testing.T) {
	const keyA, keyB = "sdk-key-a", "sdk-key-b"
	rs := startReplicas(t, 2, server.Options{Keys: []string{keyA, keyB}, Heartbeat: 200 * time.Millisecond})
	runSDK(t, roundRobin(t, rs), keyA, keyB)
}

// With a short lease a long run moves between replicas at step
// boundaries; a client streaming it from one replica and reconnecting to
// the other with Last-Event-ID gets every event once, in order.
func TestPostgresStreamAcrossReplicas(t *testing.T) {
	rs := startReplicas(t, 2, server.Options{Lease: 50 * time.Millisecond, RescueAfter: 5 * time.Second})
	a, b := rs[0], rs[1]
	thread := createThread(t, a.URL, "")
	st, body := call(t, "POST", a.URL+"/threads/"+thread+"/runs", "", map[string]any{"assistant_id": "slow",
		"input": map[string]int{"steps": 20, "ms": 15}, "stream_mode": []string{"values", "custom", "events"}})
	if st != 200 {
		t.Fatalf("start run: %d %s", st, body)
	}
	run := mustJSON(t, body)["run_id"].(string)
	path := "/threads/" + thread + "/runs/" + run + "/stream"

	resp := do(t, "GET", b.URL+path, "", nil)
	first, _ := readSSE(t, resp.Body, func(e sseEvent) bool { return e.id >= 15 })
	resp.Body.Close()
	last := first[len(first)-1].id
	resp = do(t, "GET", a.URL+path, "", nil, "Last-Event-ID", fmt.Sprint(last))
	rest, _ := readSSE(t, resp.Body, nil)
	resp.Body.Close()

	var ids []int
	for _, e := range append(first, rest...) {
		if e.id > 0 && (len(ids) == 0 || ids[len(ids)-1] != e.id) {
			ids = append(ids, e.id)
		}
	}
	for i, id := range ids {
		if id != i+1 {
			t.Fatalf("event ids %v: want 1, 2, 3 … with no gap or repeat", ids)
		}
	}
	if len(rest) == 0 || lastDone(t, rest) != 20 {
		t.Fatalf("after reconnecting: %+v", rest)
	}
	if !strings.Contains(rest[len(rest)-1].data, "on_chain_end") {
		t.Fatalf("stream does not end with the run's end: %+v", rest[len(rest)-1])
	}
	checkHistory(t, a.Path, thread, 22) // input, begin, 20 steps
	conn, err := pgx.Connect(context.Background(), a.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var snoozes int
	if err := conn.QueryRow(context.Background(), `SELECT coalesce(sum((metadata->>'snoozes')::int), 0) FROM river_job WHERE kind = 'loom_thread'`).Scan(&snoozes); err != nil {
		t.Fatal(err)
	}
	if snoozes == 0 {
		t.Errorf("a 20-step run of 15 ms steps was never handed back with a 50 ms lease")
	}
}

type listState struct {
	Add   string   `json:"add"`
	Items []string `json:"items"`
}

// listAgents serves "list": each run appends its input's "add" to the
// state's items, slowly.
func listAgents(t testing.TB) *server.Registry {
	var r server.Registry
	g := graph.New[listState]("list")
	g.Node("add", func(ctx context.Context, s listState) (listState, error) {
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return s, ctx.Err()
		}
		s.Items = append(s.Items, s.Add)
		return s, nil
	}).Edge(graph.Start, "add").Edge("add", graph.End)
	if err := r.Register(server.Agent{Name: "list",
		Migrations: []store.Migration{{Version: 1, Name: "list notes", SQL: `CREATE TABLE list_notes (id text PRIMARY KEY, note text NOT NULL)`}},
		Build:      server.Compile(g)}); err != nil {
		t.Fatal(err)
	}
	return &r
}

// Runs enqueued on one thread through three replicas run one at a time,
// in the order they were submitted.
func TestPostgresThreadOrder(t *testing.T) {
	rs := startReplicas(t, 3, server.Options{Agents: listAgents(t)})
	thread := createThread(t, rs[0].URL, "")
	var want, runs []string
	for i := range 9 {
		item := fmt.Sprintf("r%d", i)
		st, b := call(t, "POST", rs[i%3].URL+"/threads/"+thread+"/runs", "", map[string]any{"assistant_id": "list",
			"input": map[string]string{"add": item}, "multitask_strategy": "enqueue"})
		if st != 200 {
			t.Fatalf("run %d: %d %s", i, st, b)
		}
		want = append(want, item)
		runs = append(runs, mustJSON(t, b)["run_id"].(string))
	}
	st, b := call(t, "GET", rs[1].URL+"/threads/"+thread+"/runs/"+runs[len(runs)-1]+"/join", "", nil)
	var got listState
	if st != 200 || json.Unmarshal(b, &got) != nil || !slices.Equal(got.Items, want) {
		t.Fatalf("join the last run: %d %s; want items %v", st, b, want)
	}
	// Each run's checkpoints follow the previous run's: no two ran at once.
	hist := checkHistory(t, rs[0].Path, thread, 2*len(runs))
	slices.Reverse(hist)
	for i, cp := range hist {
		if cp.Meta.Run != runs[i/2] {
			t.Fatalf("checkpoint %d belongs to run %s, want %s (run %d)", i, cp.Meta.Run, runs[i/2], i/2)
		}
	}
	st, b = call(t, "GET", rs[2].URL+"/threads/"+thread, "", nil)
	if st != 200 || mustJSON(t, b)["status"] != "idle" {
		t.Fatalf("thread after its runs: %d %s", st, b)
	}
}

// Migrations are recorded per component and apply once: opening an
// up-to-date database again changes nothing.
func TestPostgresMigrate(t *testing.T) {
	dbURL := storetest.PostgresURL(t)
	ctx := context.Background()
	for range 2 {
		db, err := store.Open(ctx, dbURL)
		if err != nil {
			t.Fatal(err)
		}
		v, err := server.Migrate(ctx, db, listAgents(t))
		db.Close()
		if err != nil || v["server"] != 6 || v["checkpoint"] != 1 || v["river"] < 6 || v["list"] != 1 {
			t.Fatalf("versions %v, %v", v, err)
		}
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var river int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM river_migration`).Scan(&river); err != nil || river == 0 {
		t.Fatalf("river migrations: %d, %v", river, err)
	}
}

// A replica that shuts down hands its runs back to the queue at their
// next step boundary; another replica goes on with them from there, and
// the run ends as if nothing happened.
func TestPostgresShutdownHandsRunsOver(t *testing.T) {
	dbURL := storetest.PostgresURL(t)
	a := startServer(t, server.Options{Database: dbURL, Grace: 5 * time.Second})
	thread := createThread(t, a.URL, "")
	st, body := call(t, "POST", a.URL+"/threads/"+thread+"/runs", "", map[string]any{"assistant_id": "slow", "input": map[string]int{"steps": 40, "ms": 25}})
	if st != 200 {
		t.Fatalf("start run: %d %s", st, body)
	}
	run := mustJSON(t, body)["run_id"].(string)
	waitFor(t, "three steps", func() bool {
		_, body := call(t, "GET", a.URL+"/threads/"+thread+"/state", "", nil)
		var s struct{ Values struct{ Done int } }
		json.Unmarshal(body, &s)
		return s.Values.Done >= 3
	})
	b := startServer(t, server.Options{Database: dbURL})
	a.shutdown()
	_, body = call(t, "GET", b.URL+"/threads/"+thread+"/state", "", nil)
	var s struct{ Values struct{ Done int } }
	json.Unmarshal(body, &s)
	if s.Values.Done >= 40 {
		t.Fatalf("the run was over before the shutdown: %s", body)
	}
	st, body = call(t, "GET", b.URL+"/threads/"+thread+"/runs/"+run+"/join", "", nil)
	if st != 200 || mustJSON(t, body)["done"] != float64(40) {
		t.Fatalf("join on the other replica: %d %s", st, body)
	}
	st, body = call(t, "GET", b.URL+"/threads/"+thread+"/runs/"+run, "", nil)
	if st != 200 || mustJSON(t, body)["status"] != "success" {
		t.Fatalf("run after the handover: %d %s", st, body)
	}
	checkHistory(t, dbURL, thread, 42) // input, begin, 40 steps: none twice
}

// A run whose replica died after a checkpoint, before the step's events
// were written, is taken up where it stopped: its input is not applied
// again, the lost end of its last step is published, and it runs on to
// its end, before the thread's next run.
func TestPostgresContinuesOrphanedRun(t *testing.T) {
	dbURL := storetest.PostgresURL(t)
	ts := startServer(t, server.Options{Database: dbURL})
	thread := createThread(t, ts.URL, "")
	ctx := context.Background()
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	// The dead replica's part: the input, begin and one work step.
	const orphan = "01900000-0000-7000-8000-000000000001"
	g, err := slowGraph().Compile(graph.WithSaver(db.Saver()))
	if err != nil {
		t.Fatal(err)
	}
	in := graph.JSONInput{Update: json.RawMessage(`{"steps":5,"ms":1}`), Run: orphan}
	states := 0
	for e := range g.StreamJSON(ctx, thread, in) {
		if e.Kind == graph.KindState {
			if states++; states == 2 {
				break
			}
		}
	}
	spec, _ := json.Marshal(map[string]any{"input": in})
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `INSERT INTO loom_runs (id, thread, agent, status, strategy, metadata, error, created, updated, job)
		VALUES ($1, $2, 'slow', 'running', 'reject', '{}', '', 1, 1, $3)`, orphan, thread, spec)
	if err == nil {
		_, err = conn.Exec(ctx, `UPDATE loom_threads SET status = 'busy', agent = 'slow' WHERE id = $1`, thread)
	}
	if err != nil {
		t.Fatal(err)
	}

	// The thread's next run brings its job back; the orphan goes first.
	st, b := call(t, "POST", ts.URL+"/threads/"+thread+"/runs/wait", "", map[string]any{"assistant_id": "slow",
		"input": map[string]int{"steps": 1, "ms": 1}, "multitask_strategy": "enqueue"})
	if st != 200 || mustJSON(t, b)["done"] != float64(1) {
		t.Fatalf("next run: %d %s", st, b)
	}
	st, b = call(t, "GET", ts.URL+"/threads/"+thread+"/runs/"+orphan, "", nil)
	if st != 200 || mustJSON(t, b)["status"] != "success" {
		t.Fatalf("orphaned run: %d %s", st, b)
	}
	hist := checkHistory(t, dbURL, thread, 7+3) // the orphan: input, begin, 5 steps; the next run: input, begin, 1 step
	inputs := 0
	for _, cp := range hist {
		if cp.Meta.Run == orphan && cp.Meta.Source == checkpoint.SourceInput {
			inputs++
		}
	}
	if inputs != 1 || !strings.Contains(string(hist[3].State), `"done":5`) {
		t.Fatalf("orphan's history: %d inputs; its last state %s", inputs, hist[3].State)
	}
	resp := do(t, "GET", ts.URL+"/threads/"+thread+"/runs/"+orphan+"/stream?stream_mode=values", "", nil)
	events, _ := readSSE(t, resp.Body, nil)
	resp.Body.Close()
	var done []int
	for _, e := range events {
		if e.event == "values" {
			var v struct{ Done int }
			json.Unmarshal([]byte(e.data), &v)
			done = append(done, v.Done)
		}
	}
	if !slices.Equal(done, []int{1, 2, 3, 4, 5}) || events[1].id != 2 {
		t.Fatalf("the orphan's values %v (first id %d); want its lost step 1, then 2 … 5", done, events[1].id)
	}
}
