// Package server is Loom's HTTP server: every registered agent served
// over a LangGraph-compatible REST API (assistants, threads, runs,
// streaming, interrupts) and an OpenAI-compatible chat completions API,
// with threads, runs and checkpoints in one SQLite file.
//
// Runs execute in goroutines owned by the server, one at a time per
// thread; their events go to a per-run broadcaster that keeps the last
// events, so a client may join a run that is already going, and a client
// that disconnects neither stops nor corrupts the run. Streams are SSE or
// NDJSON, with a heartbeat on idle streams.
//
// With API keys, a thread belongs to the key that made it and is not
// found for any other key; without keys the server serves loopback only.
package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"go.opentelemetry.io/otel/trace"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/checkpoint/sqlite"
	"github.com/loomkit/loom/contract"
	"github.com/loomkit/loom/graph"
)

// Options configure a Server. Only Agents is required.
type Options struct {
	// Agents are the agents served.
	Agents *Registry
	// Database names the SQLite file that holds threads, runs and
	// checkpoints (see SQLitePath); "" means ./loom.db.
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
}

// builtAgent is an agent with its compiled graph.
type builtAgent struct {
	Agent
	runner graph.Runner
	schema *contract.Schema // nil: any object
}

// Server serves Loom's agents over HTTP. Make one with New, run it with
// Serve or ListenAndServe, and Close it when Serve has returned.
type Server struct {
	opts    Options
	log     *slog.Logger
	saver   *sqlite.Saver
	store   *store
	agents  map[string]*builtAgent
	order   []string          // agent names, sorted
	keys    map[string]string // sha256(key) → owner id
	mux     *http.ServeMux
	metrics *metrics

	baseCtx context.Context
	stopAll context.CancelFunc

	mu      sync.Mutex
	lanes   map[string]*lane // busy threads
	runs    map[string]*run  // running and queued runs
	closing bool
	wg      sync.WaitGroup // executing runs
}

// New opens the database and builds every agent on it.
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
	path, err := SQLitePath(opts.Database)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s := &Server{opts: opts, log: opts.Logger, agents: map[string]*builtAgent{}, keys: map[string]string{},
		lanes: map[string]*lane{}, runs: map[string]*run{}, metrics: newMetrics()}
	s.baseCtx, s.stopAll = context.WithCancel(context.Background())
	for _, k := range opts.Keys {
		if k = strings.TrimSpace(k); k != "" {
			sum := sha256.Sum256([]byte(k))
			s.keys[hex.EncodeToString(sum[:])] = "key:" + hex.EncodeToString(sum[:8])
		}
	}
	if s.saver, err = sqlite.Open(ctx, path); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if s.store, err = openStore(ctx, s.saver); err != nil {
		s.saver.Close()
		return nil, fmt.Errorf("server: %w", err)
	}
	for _, a := range opts.Agents.All() {
		ba := &builtAgent{Agent: a}
		if ba.runner, err = a.Build(s.saver); err != nil {
			s.Close()
			return nil, fmt.Errorf("server: build agent %s: %w", a.Name, err)
		}
		if a.InputSchema != nil {
			if ba.schema, err = contract.ParseSchema(a.InputSchema); err != nil {
				s.Close()
				return nil, fmt.Errorf("server: agent %s input schema: %w", a.Name, err)
			}
		}
		s.agents[a.Name] = ba
		s.order = append(s.order, a.Name)
	}
	s.routes()
	return s, nil
}

// Saver returns the checkpoint saver the server's agents run on.
func (s *Server) Saver() checkpoint.Saver { return s.saver }

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.mux }

// Handle serves pattern with h beside the API routes: the hook for the
// web page and anything else a binary adds. Call it before Serve.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

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
	if err := CheckAddr(addr, len(s.keys) > 0); err != nil {
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
	if err := CheckAddr(ln.Addr().String(), len(s.keys) > 0); err != nil {
		ln.Close()
		return err
	}
	hs := &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext: func(net.Listener) context.Context { return s.baseCtx }}
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
	s.drain(s.opts.Grace)
	s.stopAll() // ends streams and waits whose run is over
	err := <-shut
	if err != nil {
		hs.Close()
	}
	s.log.Info("stopped", "took", time.Since(began).Round(time.Millisecond))
	return nil
}

// Close closes the database. Call it after Serve returned.
func (s *Server) Close() error {
	s.stopAll()
	var errs []error
	if s.saver != nil {
		errs = append(errs, s.saver.Close())
	}
	return errors.Join(errs...)
}

// handler is an API handler: it gets the caller's owner id and returns an
// error for writeError.
type handler func(w http.ResponseWriter, r *http.Request, owner string) error

// api wraps h with authentication, the body size limit, panic recovery
// and error responses.
func (s *Server) api(h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		began := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("handler panic", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(p))
				if !sw.wrote {
					writeError(sw, fmt.Errorf("internal error"))
				}
			}
			s.metrics.request(r.Pattern, sw.status, time.Since(began))
		}()
		owner, err := s.authenticate(r)
		if err == nil {
			r.Body = http.MaxBytesReader(sw, r.Body, s.opts.MaxBody)
			err = h(sw, r, owner)
		}
		if err != nil {
			if !sw.wrote {
				writeError(sw, err)
			}
			if ae := toAPI(err); ae.status >= 500 {
				s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
			}
		}
	})
}

// statusWriter remembers whether and what a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.status, w.wrote = http.StatusOK, true
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush and deadlines.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// authenticate returns the caller's owner id: "" without keys, else the
// id of the key presented.
func (s *Server) authenticate(r *http.Request) (string, error) {
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
	sum := sha256.Sum256([]byte(key))
	h := hex.EncodeToString(sum[:])
	for k, owner := range s.keys {
		if subtle.ConstantTimeCompare([]byte(k), []byte(h)) == 1 {
			return owner, nil
		}
	}
	return "", errorf(http.StatusUnauthorized, "unauthorized", "invalid API key")
}

// decode reads a JSON request body into v. An empty body leaves v as it
// is; a body that is not application/json gets 415, malformed JSON 400,
// one larger than the limit 413.
func decode(r *http.Request, v any) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	if ct := r.Header.Get("Content-Type"); r.ContentLength != 0 {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return errorf(http.StatusUnsupportedMediaType, "unsupported_media_type", "request body must be application/json, not %q", ct)
		}
	}
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.As(err, &mbe):
			return err
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
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		closing := s.closing
		s.mu.Unlock()
		if closing {
			writeError(w, ErrClosing)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "agents": s.order})
	})
	m.Handle("GET /metrics", s.api(func(w http.ResponseWriter, r *http.Request, _ string) error {
		s.metrics.handler().ServeHTTP(w, r)
		return nil
	}))
	s.langGraphRoutes(m)
	s.openAIRoutes(m)
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

// thread returns thread id if owner may see it, else a 404.
func (s *Server) thread(ctx context.Context, id, owner string) (*Thread, error) {
	t, err := s.store.thread(ctx, id)
	if errors.Is(err, ErrNotFound) || (err == nil && t.Owner != owner) {
		return nil, errorf(http.StatusNotFound, "not_found", "thread %s not found", id)
	}
	if err != nil {
		return nil, err
	}
	if s.busy(id) {
		t.Status = StatusBusy
	}
	return t, nil
}
