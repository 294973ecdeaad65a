package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// benchAbout is what loom help bench says about a turn and the figures.
const benchAbout = `Each conversation is a thread of its own on the server, made before the
clock starts, and a closed loop of turns on it: a turn is one
POST /threads/{id}/runs/wait that runs the agent and checkpoints it. It
starts a run with --input, or, when the last turn ended waiting for a
person (__interrupt__), answers with --resume. On the demo agent (no model)
that is a run to its approval (10 checkpoints), then the approval (2).

It prints turns/s over the wall time and the latency of a turn (p50, p90,
p99, max), of all turns and of each kind (those that start a run, those
that answer), as text, or with --json as one object. A turn that fails — a
connection error, a status other than 2xx, a run that ended in an error or
an answer that is not a run's result — is counted by its kind, and any
makes loom bench exit 1. Against a server with API keys, its quotas apply
to the key (serve it with --rate -1 --max-running -1 to measure the
server rather than its limits).

Measure throughput with many conversations and latency with few: with
closed loops, latency is conversations / throughput (Little's law).`

// benchConfig is what loom bench was asked to do.
type benchConfig struct {
	urls           []string
	key, agent     string
	clients, turns int
	duration       time.Duration
	timeout        time.Duration
	input, resume  json.RawMessage
}

// BenchReport is what loom bench measured, as --json prints it.
type BenchReport struct {
	URL           string  `json:"url"`
	Agent         string  `json:"agent"`
	Conversations int     `json:"conversations"`
	Seconds       float64 `json:"seconds"`
	// Turns are the turns that succeeded; TurnsPerSecond is Turns over
	// Seconds, the wall time from the first turn to the last answer.
	Turns          int     `json:"turns"`
	TurnsPerSecond float64 `json:"turns_per_second"`
	// Latency is of the turns that succeeded, in milliseconds.
	Latency BenchLatency `json:"latency_ms"`
	// Starts and Resumes split them by kind: the turns that start a run
	// with the input, and those that answer a question the run asked (on
	// the demo agent a run to its approval, and the approval).
	Starts  BenchKind `json:"starts"`
	Resumes BenchKind `json:"resumes"`
	// Errors counts the turns (and thread creations) that failed, by
	// kind, such as "HTTP 500" or "connection".
	Errors     map[string]int `json:"errors"`
	ErrorCount int            `json:"error_count"`
	// FirstErrors are the messages of up to five of them.
	FirstErrors []string `json:"first_errors,omitempty"`
}

// BenchKind is the turns of one kind that succeeded, and their latency.
type BenchKind struct {
	Turns   int          `json:"turns"`
	Latency BenchLatency `json:"latency_ms"`
}

// BenchLatency are percentiles of a turn's latency in milliseconds.
type BenchLatency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// runBench is `loom bench`: concurrent conversations against a running
// server, from this process.
func runBench(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var c benchConfig
	urls := fs.String("url", "http://127.0.0.1:8080", "the Loom server's base `URL`; for replicas, several, comma separated: each request of a conversation goes to the next")
	fs.StringVar(&c.key, "key", "", "API `KEY` for a server with keys ($LOOM_API_KEY when not given)")
	fs.StringVar(&c.agent, "agent", "demo", "the `AGENT` the conversations talk to")
	fs.IntVar(&c.clients, "clients", 20, "concurrent conversations, each a closed loop of turns")
	fs.DurationVar(&c.duration, "duration", 20*time.Second, "how long the conversations go on, unless --turns")
	fs.IntVar(&c.turns, "turns", 0, "turns each conversation makes, instead of --duration")
	fs.DurationVar(&c.timeout, "timeout", time.Minute, "how long one turn may take before it counts as a timeout")
	input := fs.String("input", `{"title":"bench"}`, "the `JSON` input of a turn that starts a run")
	resume := fs.String("resume", `{"accept":true}`, "the `JSON` answer of a turn that resumes a run waiting for a person")
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	if err := parseFlags("bench", fs, args, out); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("bench: unexpected argument %q %s", fs.Arg(0), usage)
	}
	if c.key == "" {
		c.key = os.Getenv("LOOM_API_KEY")
	}
	c.input, c.resume = json.RawMessage(*input), json.RawMessage(*resume)
	for name, v := range map[string]json.RawMessage{"input": c.input, "resume": c.resume} {
		if !json.Valid(v) {
			return usageErrorf("bench: --%s is not valid JSON: %s", name, v)
		}
	}
	if c.clients < 1 || c.turns < 0 || (c.turns == 0 && c.duration <= 0) || c.timeout <= 0 {
		return usageErrorf("bench: --clients, and --turns or --duration, and --timeout must be positive")
	}
	for u := range strings.SplitSeq(*urls, ",") {
		if u = strings.TrimRight(strings.TrimSpace(u), "/"); u != "" {
			c.urls = append(c.urls, u)
		}
	}
	if len(c.urls) == 0 {
		return usageErrorf("bench: --url names no server")
	}
	r := bench(ctx, c)
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("bench: write the report: %w", err)
		}
	} else {
		r.print(out)
	}
	if r.ErrorCount > 0 {
		return &exitError{1, fmt.Sprintf("loom bench: %d turns failed", r.ErrorCount)}
	}
	return nil
}

// print writes r as text.
func (r *BenchReport) print(w io.Writer) {
	fmt.Fprintf(w, "loom bench: %d conversations with %s at %s\n", r.Conversations, r.Agent, r.URL)
	fmt.Fprintf(w, "turns    %d in %.1fs: %.0f turns/s\n", r.Turns, r.Seconds, r.TurnsPerSecond)
	for _, k := range []struct {
		name string
		BenchKind
	}{{"latency", BenchKind{r.Turns, r.Latency}}, {"  starts", r.Starts}, {"  resumes", r.Resumes}} {
		l := k.Latency
		fmt.Fprintf(w, "%-9s  p50 %.1fms  p90 %.1fms  p99 %.1fms  max %.1fms  mean %.1fms  (%d turns)\n", k.name, l.P50, l.P90, l.P99, l.Max, l.Mean, k.Turns)
	}
	fmt.Fprintf(w, "errors   %d\n", r.ErrorCount)
	for _, k := range slices.Sorted(maps.Keys(r.Errors)) {
		fmt.Fprintf(w, "  %-20s %d\n", k, r.Errors[k])
	}
	for _, e := range r.FirstErrors {
		fmt.Fprintf(w, "  e.g. %s\n", e)
	}
}

// benchError is a failed turn, with its kind.
type benchError struct {
	kind string
	err  error
}

func (e *benchError) Error() string { return e.err.Error() }

// tally gathers the conversations' latencies and errors.
type tally struct {
	mu              sync.Mutex
	starts, resumes []time.Duration
	errs            map[string]int
	samples         []string
}

// ok counts a turn that took d: one that answered a question (resume),
// or one that started a run.
func (t *tally) ok(d time.Duration, resume bool) {
	t.mu.Lock()
	if resume {
		t.resumes = append(t.resumes, d)
	} else {
		t.starts = append(t.starts, d)
	}
	t.mu.Unlock()
}

func (t *tally) fail(err error) {
	kind := "other"
	var be *benchError
	if errors.As(err, &be) {
		kind = be.kind
	}
	t.mu.Lock()
	t.errs[kind]++
	if len(t.samples) < 5 {
		t.samples = append(t.samples, err.Error())
	}
	t.mu.Unlock()
}

// bench runs c's conversations and reports what they measured, failed
// turns included.
func bench(ctx context.Context, c benchConfig) *BenchReport {
	tr := &http.Transport{
		MaxIdleConns:        c.clients,
		MaxIdleConnsPerHost: c.clients,
		MaxConnsPerHost:     c.clients,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	defer tr.CloseIdleConnections()
	b := &bencher{c: c, client: &http.Client{Transport: tr, Timeout: c.timeout}}
	t := &tally{errs: map[string]int{}}

	// Every conversation makes its thread (and so its connection) before
	// the clock starts.
	threads := make([]string, c.clients)
	var wg sync.WaitGroup
	for i := range threads {
		wg.Go(func() {
			id, err := b.newThread(ctx, b.c.urls[i%len(b.c.urls)])
			if err != nil {
				t.fail(err)
			}
			threads[i] = id
		})
	}
	wg.Wait()

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	deadline := time.Time{}
	if c.turns == 0 {
		deadline = time.Now().Add(c.duration)
	}
	began := time.Now()
	for i, thread := range threads {
		wg.Go(func() { b.converse(runCtx, i, thread, deadline, t) })
	}
	wg.Wait()
	took := time.Since(began)

	r := &BenchReport{URL: strings.Join(c.urls, ","), Agent: c.agent, Conversations: c.clients, Seconds: took.Seconds(),
		Turns: len(t.starts) + len(t.resumes), Errors: t.errs, FirstErrors: t.samples}
	r.TurnsPerSecond = float64(r.Turns) / took.Seconds()
	for _, n := range t.errs {
		r.ErrorCount += n
	}
	r.Latency = percentiles(slices.Concat(t.starts, t.resumes))
	r.Starts = BenchKind{Turns: len(t.starts), Latency: percentiles(t.starts)}
	r.Resumes = BenchKind{Turns: len(t.resumes), Latency: percentiles(t.resumes)}
	return r
}

// percentiles are the latencies' p50, p90, p99, max and mean in
// milliseconds (nearest rank); zero for none.
func percentiles(lat []time.Duration) BenchLatency {
	if len(lat) == 0 {
		return BenchLatency{}
	}
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	rank := func(p float64) float64 {
		// Nearest rank: the smallest value with at least p of them at or
		// under it.
		return ms(lat[max(0, int(math.Ceil(p*float64(len(lat))))-1)])
	}
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	return BenchLatency{P50: rank(0.50), P90: rank(0.90), P99: rank(0.99), Max: ms(lat[len(lat)-1]), Mean: ms(sum / time.Duration(len(lat)))}
}

// bencher makes the requests of loom bench.
type bencher struct {
	c      benchConfig
	client *http.Client
}

// converse runs conversation i on thread ("" when making it failed: it
// tries again) until deadline, or for c.turns turns when deadline is zero,
// each request to the next of c.urls. After a failed turn it pauses
// briefly, so a server that is down is not spun against.
func (b *bencher) converse(ctx context.Context, i int, thread string, deadline time.Time, t *tally) {
	waiting := false // the last turn ended waiting for a person
	next := i + 1    // the setup's request went to urls[i]
	url := func() string { next++; return b.c.urls[(next-1)%len(b.c.urls)] }
	for n := 0; ; n++ {
		if deadline.IsZero() && n >= b.c.turns || !deadline.IsZero() && !time.Now().Before(deadline) || ctx.Err() != nil {
			return
		}
		var err error
		if thread == "" {
			thread, err = b.newThread(ctx, url())
		}
		if err == nil {
			began, resume := time.Now(), waiting
			waiting, err = b.turn(ctx, url(), thread, resume)
			if err == nil {
				t.ok(time.Since(began), resume)
				continue
			}
		}
		if ctx.Err() != nil {
			return // stopped (Ctrl-C): the turn did not fail
		}
		t.fail(err)
		waiting = false
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// newThread makes a conversation's thread on the server at base and
// returns its id.
func (b *bencher) newThread(ctx context.Context, base string) (string, error) {
	var th struct {
		ThreadID string `json:"thread_id"`
	}
	body, err := b.post(ctx, base+"/threads", map[string]any{"metadata": map[string]string{"loom_bench": b.c.agent}})
	if err == nil {
		err = json.Unmarshal(body, &th)
	}
	if err == nil && th.ThreadID == "" {
		err = errors.New("no thread_id")
	}
	if err != nil {
		return "", wrapBench("thread", fmt.Errorf("make a thread: %w", err))
	}
	return th.ThreadID, nil
}

// turn is one turn on thread, sent to the server at base: a run with the
// input, or, when the thread waits for a person, with the answer. It
// reports whether the run ended waiting for a person.
func (b *bencher) turn(ctx context.Context, base, thread string, resume bool) (waiting bool, err error) {
	req := map[string]any{"assistant_id": b.c.agent}
	if resume {
		req["command"] = map[string]json.RawMessage{"resume": b.c.resume}
	} else {
		req["input"] = b.c.input
	}
	body, err := b.post(ctx, base+"/threads/"+thread+"/runs/wait", req)
	if err != nil {
		return false, wrapBench("", fmt.Errorf("turn on thread %s: %w", thread, err))
	}
	var v map[string]json.RawMessage
	if err := json.Unmarshal(body, &v); err != nil {
		return false, &benchError{"bad answer", fmt.Errorf("turn on thread %s: not a JSON object: %.200s", thread, body)}
	}
	if e, ok := v["__error__"]; ok {
		var re struct {
			Error string `json:"error"`
		}
		json.Unmarshal(e, &re)
		return false, &benchError{"run error " + re.Error, fmt.Errorf("turn on thread %s: the run failed: %s", thread, e)}
	}
	_, waiting = v["__interrupt__"]
	return waiting, nil
}

// httpError is an answer other than 2xx.
type httpError struct {
	status int
	body   []byte
}

func (e *httpError) Error() string { return fmt.Sprintf("HTTP %d %.200s", e.status, e.body) }

// post sends v as JSON to url and returns a 2xx answer's body.
func (b *bencher) post(ctx context.Context, url string, v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if b.c.key != "" {
		req.Header.Set("Authorization", "Bearer "+b.c.key)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, &httpError{resp.StatusCode, out}
	}
	return out, nil
}

// wrapBench gives err its kind: "HTTP 500" for a status, "timeout",
// "connection" for a network error; prefix ("thread") names what failed
// when it was not a turn.
func wrapBench(prefix string, err error) error {
	var (
		he   *httpError
		ne   net.Error
		kind string
	)
	switch {
	case errors.As(err, &he):
		kind = fmt.Sprintf("HTTP %d", he.status)
	case errors.As(err, &ne) && ne.Timeout():
		kind = "timeout"
	case errors.As(err, &ne), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		kind = "connection"
	case errors.Is(err, context.Canceled):
		kind = "cancelled"
	default:
		kind = "bad answer"
	}
	if prefix != "" {
		kind = prefix + " " + kind
	}
	return &benchError{kind, err}
}
