// Package server is Loom's HTTP server: every registered agent served
// over a LangGraph-compatible REST API (assistants, threads, runs,
// streaming, interrupts) and an OpenAI-compatible chat completions API,
// with threads, runs and checkpoints in one database (see store): a
// SQLite file for a single server, or PostgreSQL shared by replicas.
//
// On SQLite, runs execute in goroutines owned by the server, one at a
// time per thread; their events go to a per-run broadcaster that keeps
// the last events, so a client may join a run that is already going, and
// a client that disconnects neither stops nor corrupts the run.
//
// On PostgreSQL, runs are jobs in River, a job queue in the same
// database: any replica executes any run, one at a time per thread across
// all replicas, and when a replica dies mid-run another takes its job up
// and goes on from the last checkpoint. A run's events go to a table and
// a LISTEN/NOTIFY channel, so a client streaming from any replica gets
// them, and one that reconnects with Last-Event-ID resumes where it was.
//
// Streams are SSE or NDJSON, with a heartbeat on idle streams.
//
// With API keys, a thread belongs to the key that made it and is not
// found for any other key; without keys the server listens on loopback
// only and answers only loopback Host names. Timeouts bound every
// connection, and Quotas bound what one key may hold and do.
package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"mime"
	"net"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/memory"
	"github.com/loomkit/loom/schema"
	"github.com/loomkit/loom/seal"
	"github.com/loomkit/loom/store"
)

// Options configure a Server. Only Agents is required.
type Options struct {
	// Agents are the agents served.
	Agents *Registry
	// Database is the URL of the database that holds threads, runs and
	// checkpoints (see store.Resolve): a SQLite file ("" means ./loom.db)
	// or a postgres:// URL, which replicas share.
	Database string
	// Keys are the API keys clients present, as "Authorization: Bearer KEY"
	// or "x-api-key: KEY". Without keys the server listens on loopback
	// only, and all threads are everyone's.
	Keys []string
	// Heartbeat is how often an idle stream gets a comment line
	// (default 15s).
	Heartbeat time.Duration
	// MaxBody bounds a request body (default 1 MiB); larger gets 413.
	MaxBody int64
	// Replay is how many events a run keeps for clients that join late
	// (default 4096).
	Replay int
	// Grace bounds shutdown: running steps get this long to finish and
	// checkpoint before they are cancelled (default 8s, so that the whole
	// shutdown stays within 10s).
	Grace time.Duration
	// Logger receives the server's logs (default slog.Default()).
	Logger *slog.Logger
	// TracerProvider receives a span per run and per node step (default
	// the global provider, which drops them unless one is installed).
	TracerProvider trace.TracerProvider
	// UI, when set, serves the web page at "/" and every path no API route
	// takes. Until then those paths answer 404 in JSON.
	UI http.Handler

	// ReadTimeout bounds how long a request may take to arrive, its body
	// included (default 30s): a client that trickles its body is cut off.
	ReadTimeout time.Duration
	// WriteTimeout bounds how long one write of a response may wait for
	// the client to read (default 1m). API responses get it anew at each
	// write, so a stream or a long wait lasts as long as its run, while a
	// client that stops reading is cut off.
	WriteTimeout time.Duration
	// IdleTimeout is how long a keep-alive connection may wait for its
	// next request before it is closed (default 2m).
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's header (default 64 KiB); larger
	// gets 431.
	MaxHeaderBytes int
	// AllowedHosts are Host names (without port) the server answers
	// besides localhost, 127.0.0.1 and [::1]; "*.example.com" allows the
	// names under example.com and "*" every name. Without keys the server
	// answers only those, so that a web page cannot reach it through a DNS
	// name that points at this machine (DNS rebinding); with keys it
	// answers every Host unless AllowedHosts lists some. A request for
	// another Host gets 421.
	AllowedHosts []string
	// JWT, when set, accepts bearer tokens of an identity provider
	// besides API keys; the user a token names owns threads like a key
	// (see JWT and Identity).
	JWT JWT
	// Quotas bound what one API key may hold and do (see Quotas).
	Quotas Quotas
	// Retention bounds the checkpoints kept of each thread, and how
	// often the sweeper runs (see Retention).
	Retention Retention
	// Models are the names of the provider's models a run may choose with
	// the model setting every agent's configuration takes (configurable or
	// context "model", see RunModel), the default model among them; loom
	// serve lists LOOM_MODEL and LOOM_MODELS. Another name is a 422 that
	// lists these; with none, a run may not choose a model.
	Models []string
	// Embedder, when set, ranks the long-term store's searches by the
	// cosine of embeddings (see memory.Options); without one by BM25.
	Embedder llm.Embedder
	// Codec, when set, seals the checkpoints and the long-term store's
	// items at rest (see store.WithCodec); loom serve makes it from
	// LOOM_ENCRYPTION_KEYS. The server's own tables stay in the clear:
	// threads' and runs' records (metadata, errors, the input a run was
	// queued with), the chat endpoint's messages, assistants, crons,
	// webhooks and, on Postgres, runs' events.
	Codec seal.Codec

	// The options below apply on Postgres, where runs are River jobs.

	// Workers bounds the runs this replica executes at once (default 50).
	Workers int
	// Lease is how long a replica works a thread's runs before it hands
	// the thread back to the queue at the next step boundary, for any
	// replica to go on with (default 30s). Short leases spread long runs
	// over replicas and keep the queue's view of them fresh.
	Lease time.Duration
	// RescueAfter is how long a run's job may go without a heartbeat
	// before the queue takes its replica for dead and gives the job to
	// another, which goes on from the last checkpoint (default 20s). A
	// replica beats for its jobs every RescueAfter/5 while it works them,
	// however long a step takes; the queue looks for jobs without a beat
	// every 30 s, so a dead replica's runs go on within RescueAfter + 30 s.
	RescueAfter time.Duration
}

// builtAgent is an agent with its compiled graph.
type builtAgent struct {
	Agent
	runner graph.Runner
	schema *schema.Schema // nil: any object
	models []string       // the models a run may choose (Options.Models)
}

// Server serves Loom's agents over HTTP. Make one with New, run it with
// Serve or ListenAndServe, and Close it when Serve has returned.
type Server struct {
	opts    Options
	log     *slog.Logger
	db      *store.DB
	saver   checkpoint.Saver
	records *records
	items   *memory.Items
	exec    executor // executes runs: in this process, or as jobs on Postgres
	agents  map[string]*builtAgent
	order   []string          // agent names, sorted
	keys    map[string]string // sha256(key) → owner id
	jwt     *verifier         // bearer tokens (jwt.go); nil for none
	quotas  *quotas
	// authFails throttles client addresses that present wrong keys.
	authFails *authThrottle
	mux       *http.ServeMux
	handler   http.Handler // mux behind the Host and Origin checks
	metrics   *metrics
	bg        background // crons, webhooks and the sweeper (crons_tick.go)

	baseCtx context.Context
	stopAll context.CancelFunc

	mu      sync.Mutex
	closing bool // shutting down (see closingNow)
}

// New opens the database, applies the migrations it lacks, and builds
// every agent on it. On Postgres it also starts working the run queue.
func New(ctx context.Context, opts Options) (*Server, error) {
	if opts.Agents == nil || len(opts.Agents.All()) == 0 {
		return nil, errors.New("server: no agents to serve")
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = 15 * time.Second
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = 1 << 20
	}
	if opts.Grace <= 0 {
		opts.Grace = 8 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Workers <= 0 {
		opts.Workers = 50
	}
	if opts.Lease <= 0 {
		opts.Lease = 30 * time.Second
	}
	if opts.RescueAfter <= 0 {
		opts.RescueAfter = 20 * time.Second
	}
	limitDefaults(&opts)
	s := &Server{opts: opts, log: opts.Logger, agents: map[string]*builtAgent{}, keys: map[string]string{},
		metrics: newMetrics()}
	s.authFails = newAuthThrottle(opts.Logger)
	s.baseCtx, s.stopAll = context.WithCancel(context.Background())
	for _, k := range opts.Keys {
		if k = strings.TrimSpace(k); k != "" {
			sum := sha256.Sum256([]byte(k))
			s.keys[hex.EncodeToString(sum[:])] = "key:" + hex.EncodeToString(sum[:8])
		}
	}
	s.quotas = newQuotas(opts.Quotas, slices.Collect(maps.Values(s.keys)))
	var err error
	if err = s.useJWT(ctx); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if s.db, err = store.Open(ctx, opts.Database, store.WithCodec(opts.Codec)); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s.saver = withHistoryPolicy(s.db.Saver(), opts.Retention)
	if s.records, err = openRecords(ctx, s.db); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("server: %w", err)
	}
	s.records.codec = opts.Codec
	s.items = memory.New(s.db, memory.Options{Embedder: opts.Embedder})
	for _, a := range opts.Agents.All() {
		ba := &builtAgent{Agent: a, models: opts.Models}
		if ba.ConfigSchema, err = withModelSettings(a.ConfigSchema, opts.Models); err != nil {
			s.Close()
			return nil, fmt.Errorf("server: agent %s: %w", a.Name, err)
		}
		if err := s.db.Migrate(ctx, a.Name, a.Migrations); err != nil {
			s.Close()
			return nil, fmt.Errorf("server: agent %s: %w", a.Name, err)
		}
		if ba.runner, err = a.Build(ctx, s.db); err != nil {
			s.Close()
			return nil, fmt.Errorf("server: build agent %s: %w", a.Name, err)
		}
		if a.InputSchema != nil {
			if ba.schema, err = schema.Parse(a.InputSchema); err != nil {
				s.Close()
				return nil, fmt.Errorf("server: agent %s input schema: %w", a.Name, err)
			}
		}
		s.agents[a.Name] = ba
		s.order = append(s.order, a.Name)
	}
	if s.exec, err = startExecutor(ctx, s); err != nil {
		s.Close()
		return nil, fmt.Errorf("server: %w", err)
	}
	s.startTicker() // crons, webhooks, the sweeper (crons_tick.go)
	s.routes()
	for _, name := range s.order {
		if err := s.mountRoutes(s.agents[name]); err != nil {
			s.Close()
			return nil, fmt.Errorf("server: agent %s: %w", name, err)
		}
	}
	s.startSweeper() // questions that expire (expire.go)
	return s, nil
}

// mountRoutes serves an agent's own endpoints (Agent.Routes) through
// HandleAPI; a prefix that is not a path ending in "/", or that another
// route holds already, is an error.
func (s *Server) mountRoutes(a *builtAgent) (err error) {
	if a.Routes == nil {
		return nil
	}
	prefix := a.RoutesPrefix
	if prefix == "" {
		prefix = "/api/v1/" + a.Name + "/"
	}
	if !strings.HasPrefix(prefix, "/") || !strings.HasSuffix(prefix, "/") {
		return fmt.Errorf("routes prefix %q: want a path that starts and ends with /", prefix)
	}
	defer func() {
		if r := recover(); r != nil { // http.ServeMux panics on a pattern it holds already
			err = fmt.Errorf("routes prefix %q: %v", prefix, r)
		}
	}()
	s.handleAPI(prefix, a.Routes(s, a.runner), a.UploadLimit, a.UploadTypes...)
	return nil
}

// Migrate applies the migrations that the database lacks: the checkpoint
// saver's (store.Open applies those), the server's, the agents' own (see
// Agent.Migrations), and on Postgres the job queue's (River). Servers do
// so when they start; Migrate is for running them ahead of time, as a
// deploy step (loom migrate). It returns the version of each component's
// tables now.
func Migrate(ctx context.Context, db *store.DB, agents *Registry) (map[string]int, error) {
	if _, err := openRecords(ctx, db); err != nil {
		return nil, err
	}
	for _, a := range agents.All() {
		if err := db.Migrate(ctx, a.Name, a.Migrations); err != nil {
			return nil, fmt.Errorf("agent %s: %w", a.Name, err)
		}
	}
	v, err := db.Versions(ctx)
	if err != nil || db.Dialect() != store.Postgres {
		return v, err
	}
	if v["river"], err = migrateQueue(ctx, db); err != nil {
		return nil, err
	}
	return v, nil
}

// Saver returns the checkpoint saver the server's agents run on.
func (s *Server) Saver() checkpoint.Saver { return s.saver }

// Handler returns the server's HTTP handler, with the Host and Origin
// checks.
func (s *Server) Handler() http.Handler { return s.handler }

// Handle serves pattern with h beside the API routes: the hook for the
// web page and anything else a binary adds. Call it before Serve.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// HandleAPI serves pattern with h behind the API's keys, rate limit,
// body limit, JSON Content-Type check, timeouts and metrics, like the
// server's own routes: for endpoints a binary adds beside the API, such
// as an agent's own, which take JSON bodies. h learns who called with
// Caller; an error it writes is its own.
func (s *Server) HandleAPI(pattern string, h http.Handler) { s.handleAPI(pattern, h, 0) }

// handleAPI is HandleAPI, taking multipart/form-data bodies (and bodies
// of the media types in types) of up to uploads bytes (and 1 MiB for
// the form) when uploads is above zero.
func (s *Server) handleAPI(pattern string, h http.Handler, uploads int64, types ...string) {
	s.mux.Handle(pattern, s.apiUploads(uploads, types, func(w http.ResponseWriter, r *http.Request, owner string) error {
		ctx := memory.With(context.WithValue(r.Context(), callerKey{}, owner), s.items.For(owner))
		h.ServeHTTP(w, r.WithContext(ctx))
		return nil
	}))
}

type callerKey struct{}

// Caller is the owner id of the API key behind a request served through
// HandleAPI, or behind the run a graph node runs in: "" without keys. An
// agent that keeps data per user keys it by Caller.
func Caller(ctx context.Context) string {
	owner, _ := ctx.Value(callerKey{}).(string)
	return owner
}

// TrackThread records a turn that code outside the server's runs took on
// thread id for agent (an agent's own endpoints, mounted with HandleAPI):
// on first use it creates the thread for Caller(ctx), so the thread is in
// the API's lists and on the page; a thread another key owns is an error
// wrapping ErrNotFound, as in the API. A status other than "" (idle,
// interrupted, error) becomes the thread's when it differs.
func (s *Server) TrackThread(ctx context.Context, id, agent, status string) error {
	owner := Caller(ctx)
	key := threadKey(owner, id)
	t, err := s.records.thread(ctx, key)
	if errors.Is(err, ErrNotFound) {
		now := time.Now().UTC()
		t = &Thread{ID: key, Owner: owner, Agent: agent, Status: status, Metadata: agentMetadata(nil, agent), Created: now, Updated: now}
		if status == "" {
			t.Status = StatusIdle
		}
		if err = checkThreadID(id); err == nil {
			err = s.admitThread(ctx, owner, nil)
		}
		if err == nil {
			err = s.records.createThread(ctx, t)
		}
		if !errors.Is(err, ErrExists) {
			return err
		}
		t, err = s.records.thread(ctx, key) // created meanwhile by another turn
	}
	switch {
	case err != nil:
		return err
	case t.Owner != owner:
		return fmt.Errorf("thread %s: %w", id, ErrNotFound)
	case t.Agent != "" && t.Agent != agent:
		return errorf(http.StatusConflict, "wrong_agent", "thread %s holds runs of agent %s, not %s", id, t.Agent, agent)
	case status == "" || status == t.Status:
		return nil
	}
	return s.records.setThreadStatus(ctx, key, agent, status)
}

// ThreadKey is the id under which the server keeps thread id of
// Caller(ctx): the thread a graph runs on and its checkpoints. Each API
// key has its own thread ids, so an agent's own endpoints that run its
// graph, or keep data per thread, use the key and not the id the client
// gave. Without keys an id is its own key.
func (s *Server) ThreadKey(ctx context.Context, id string) string {
	return threadKey(Caller(ctx), id)
}

// CheckAddr reports whether a server may listen on addr (host:port): a
// server without keys listens on loopback only, because every thread is
// everyone's.
func CheckAddr(addr string, haveKeys bool) error {
	if haveKeys {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("listen on %s: %w; give API keys (--keys FILE, LOOM_API_KEYS_FILE or LOOM_API_KEYS) or listen on 127.0.0.1", addr, ErrInsecure)
}

// ListenAndServe listens on addr and serves until ctx is done (see Serve).
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	if err := CheckAddr(addr, s.locked()); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln until ctx is done, then shuts down gracefully: it
// stops accepting connections and runs, lets every running run finish its
// current step and checkpoint it (cancelling what is still running after
// Options.Grace), ends the streams and returns. A run stopped this way
// goes on where it stopped when it is continued, after a restart too.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if err := CheckAddr(ln.Addr().String(), s.locked()); err != nil {
		ln.Close()
		return err
	}
	hs := httpServer(s.opts, s.handler)
	hs.ErrorLog = slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)
	hs.BaseContext = func(net.Listener) context.Context { return s.baseCtx }
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	s.log.Info("serving", "addr", ln.Addr().String(), "agents", strings.Join(s.order, ","))
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	began := time.Now()
	s.log.Info("shutting down", "grace", s.opts.Grace)
	shut := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(context.Background(), s.opts.Grace+2*time.Second)
		defer cancel()
		shut <- hs.Shutdown(sctx) // closes the listener at once, then waits for requests
	}()
	s.setClosing()
	s.exec.drain(s.opts.Grace)
	s.stopAll() // ends streams and waits whose run is over
	err := <-shut
	if err != nil {
		hs.Close()
	}
	s.log.Info("stopped", "took", time.Since(began).Round(time.Millisecond))
	return nil
}

// Close stops working the run queue and closes the database. Call it
// after Serve returned.
func (s *Server) Close() error {
	s.stopAll()
	var errs []error
	if s.exec != nil {
		s.setClosing()
		errs = append(errs, s.exec.close())
	}
	if s.db != nil {
		errs = append(errs, s.db.Close())
	}
	return errors.Join(errs...)
}

// handler is an API handler: it gets the caller's owner id and returns an
// error for writeError.
type handler func(w http.ResponseWriter, r *http.Request, owner string) error

// api wraps h with the JSON Content-Type check, authentication, the rate
// limit, the body size limit, the write deadline, panic recovery and
// error responses.
func (s *Server) api(h handler) http.Handler { return s.apiUploads(0, nil, h) }

// apiUploads is api, taking multipart/form-data bodies, and bodies of
// the media types in types, of up to uploads bytes, and 1 MiB more for
// the form, when uploads is above zero.
func (s *Server) apiUploads(uploads int64, types []string, h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		began := time.Now()
		sw := &statusWriter{ResponseWriter: w, rc: http.NewResponseController(w), write: s.opts.WriteTimeout}
		defer func() {
			if p := recover(); p != nil {
				perr := fmt.Errorf("handler panic: %v", p)
				s.log.Error("handler panic", "method", r.Method, "path", r.URL.Path, "error_id", ErrorID(perr), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				if !sw.wrote {
					writeError(sw, perr) // a 500 with the id, not the text
				}
			}
			s.metrics.request(r.Pattern, sw.status, time.Since(began))
		}()
		r, owner, err := s.authorize(r) // r carries the user of a bearer token
		limit := s.opts.MaxBody
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); uploads > 0 && (mt == "multipart/form-data" || slices.Contains(types, mt)) {
			limit = uploads + 1<<20
		} else if err == nil {
			if err = checkJSON(r); err != nil && uploads > 0 {
				err = errorf(http.StatusUnsupportedMediaType, "unsupported_media_type", "request body must be application/json, multipart/form-data%s, not %q",
					strings.Join(append([]string{""}, types...), ", "), r.Header.Get("Content-Type"))
			}
		}
		if err == nil {
			err = s.quotas.allow(owner)
		}
		if err == nil {
			r.Body = http.MaxBytesReader(sw, r.Body, limit)
			err = h(sw, r, owner)
		}
		if err != nil {
			if !sw.wrote {
				setRetryAfter(sw, err)
				writeError(sw, err)
			}
			switch ae := toAPI(err); {
			case ae.status == http.StatusServiceUnavailable:
				s.log.Warn("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
			case ae.status >= 500:
				s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "error_id", ErrorID(err), "err", err)
			}
		}
	})
}

// statusWriter remembers whether and what a handler wrote, and gives
// each write the write timeout anew: a stream or a long wait is not cut
// for lasting, only a client that stops reading is.
type statusWriter struct {
	http.ResponseWriter
	rc     *http.ResponseController
	write  time.Duration // the write timeout
	status int
	wrote  bool
}

// extend moves the write deadline to a write timeout from now.
func (w *statusWriter) extend() {
	if w.write > 0 {
		_ = w.rc.SetWriteDeadline(time.Now().Add(w.write)) // not supported by test recorders: no deadline to move
	}
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.extend()
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.status, w.wrote = http.StatusOK, true
	}
	w.extend()
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush and deadlines.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush sends what was written so far, for handlers that stream and look
// for an http.Flusher.
func (w *statusWriter) Flush() {
	if !w.wrote {
		w.status, w.wrote = http.StatusOK, true
	}
	w.extend()
	_ = w.rc.Flush()
}

// authenticateKey returns the caller's owner id: "" without keys, else
// the id of the key presented. A client address that presented too many
// wrong keys gets 429 for a while, whatever key it presents (see
// authThrottle).
func (s *Server) authenticateKey(r *http.Request) (string, error) {
	if len(s.keys) == 0 {
		return "", nil
	}
	key := r.Header.Get("x-api-key")
	if key == "" {
		if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
			key = strings.TrimSpace(a[7:])
		}
	}
	if key == "" {
		return "", errorf(http.StatusUnauthorized, "unauthorized", "missing API key: send Authorization: Bearer KEY or x-api-key: KEY")
	}
	addr := clientAddr(r)
	if wait := s.authFails.wait(addr); wait > 0 {
		return "", throttled(wait) // before the key is looked at: see authThrottle
	}
	sum := sha256.Sum256([]byte(key))
	h := hex.EncodeToString(sum[:])
	for k, owner := range s.keys {
		if subtle.ConstantTimeCompare([]byte(k), []byte(h)) == 1 {
			return owner, nil
		}
	}
	s.authFails.failed(addr, r)
	return "", errorf(http.StatusUnauthorized, "unauthorized", "invalid API key")
}

// decode reads a JSON request body into v (api checked that it is
// JSON). An empty body leaves v as it is; malformed JSON gets 400, a body
// larger than the limit 413, one that did not arrive within the read
// timeout 408.
func decode(r *http.Request, v any) error { return decodeBody(r, v, "") }

// decodeBody is decode; with what set ("run"), a field v has no place for
// is a 422 that names it, not dropped (see decodeKnown).
func decodeBody(r *http.Request, v any, what string) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	dec := json.NewDecoder(&utf8Reader{r: r.Body}) // JSON is UTF-8; a body that is not is malformed
	if what != "" {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.As(err, &mbe):
			return err
		case isTimeout(err):
			return errorf(http.StatusRequestTimeout, "request_timeout", "the request body did not arrive in time; send it at once")
		}
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok && what != "" {
			return errorf(http.StatusUnprocessableEntity, "unsupported_field", "%s field %s is not supported by this server", what, f)
		}
		return errorf(http.StatusBadRequest, "malformed_json", "malformed JSON body: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return errorf(http.StatusBadRequest, "malformed_json", "malformed JSON body: data after the JSON value")
	}
	return nil
}

func (s *Server) routes() {
	m := http.NewServeMux()
	s.mux = m
	s.handler = s.guard(m)
	s.healthRoutes(m) // GET /healthz and /readyz
	m.Handle("GET /metrics", s.api(func(w http.ResponseWriter, r *http.Request, _ string) error {
		s.metrics.handler().ServeHTTP(w, r)
		return nil
	}))
	s.langGraphRoutes(m)
	s.panelRoutes(m) // GET /ui/panels/{agent}/{file}
	s.openAIRoutes(m)
	s.storeRoutes(m)
	s.cronRoutes(m)
	s.mcpRoutes() // /mcp: every agent as an MCP tool
	s.a2aRoutes() // /a2a/{assistant}: every assistant over A2A
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if s.opts.UI != nil {
			s.opts.UI.ServeHTTP(w, r)
			return
		}
		writeError(w, errorf(http.StatusNotFound, "not_found", "no route for %s %s", r.Method, r.URL.Path))
	})
}

// agent returns the agent called name, or a 404.
func (s *Server) agent(name string) (*builtAgent, error) {
	if a, ok := s.agents[name]; ok {
		return a, nil
	}
	return nil, errorf(http.StatusNotFound, "not_found", "agent %q not found (agents: %s)", name, strings.Join(s.order, ", "))
}

// thread returns owner's thread id, else a 404. The record's ID is the
// thread's key (see threadKey).
func (s *Server) thread(ctx context.Context, id, owner string) (*Thread, error) {
	t, err := s.records.thread(ctx, threadKey(owner, id))
	if errors.Is(err, ErrNotFound) || (err == nil && t.Owner != owner) {
		return nil, errorf(http.StatusNotFound, "not_found", "thread %s not found", id)
	}
	if err != nil {
		return nil, err
	}
	if s.busy(t.ID) {
		t.Status = StatusBusy
	}
	return t, nil
}
