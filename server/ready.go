package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// This file is how the server says whether it can work: /healthz, the
// liveness check, and /readyz, the readiness check. Both are served
// without a key, as a load balancer or an orchestrator calls them.
//
// /healthz answers 200 {"status":"ok"} while the process serves and its
// database does not refuse writes, and 503 otherwise ({"status":"degraded"} with
// what is wrong, or the "closing" error during a shutdown): a server
// whose every write fails is not healthy, whatever its reads do.
// /readyz answers 200 {"status":"ready"} when the database takes writes
// and every agent's Ready says what it depends on can be used, else 503
// {"status":"not_ready"} naming what is not. Each check is done at most
// once per readyTTL, however often they are called.

// readyTTL is how long a readiness check's answer is reused.
const readyTTL = 2 * time.Second

// readyTimeout bounds one check: the write probe, or one agent's Ready.
const readyTimeout = 3 * time.Second

// retryAfterDatabase is the Retry-After, in seconds, of /healthz and
// /readyz when they say something is wrong: a checker asks again no
// sooner than the checks' answers change (readyTTL).
const retryAfterDatabase = 5

// readiness holds the last readiness checks and when they were made.
type readiness struct {
	dbMu  sync.Mutex
	dbAt  time.Time
	dbErr error // the write probe's; nil: the database takes writes

	agentsMu   sync.Mutex
	agentsAt   time.Time
	agentsDown map[string]error // agents whose Ready failed, by name
}

// writable returns nil when the database takes writes: the write
// probe's answer, probed at most once per readyTTL (callers meanwhile
// wait for the probe under way and share its answer). A change is
// logged, with what the database said.
func (s *Server) writable(ctx context.Context) error {
	rd := &s.records.ready
	rd.dbMu.Lock()
	defer rd.dbMu.Unlock()
	if !rd.dbAt.IsZero() && time.Since(rd.dbAt) < readyTTL {
		return rd.dbErr
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readyTimeout)
	err := s.records.probe(pctx)
	cancel()
	switch {
	case err != nil && (rd.dbErr == nil || rd.dbAt.IsZero()):
		s.log.Error("the database cannot be written: writes answer 503 and the server reports not ready", "database", s.db.String(), "err", err)
	case err == nil && rd.dbErr != nil:
		s.log.Info("the database takes writes again", "database", s.db.String())
	}
	rd.dbAt, rd.dbErr = time.Now(), err
	return err
}

// notReady returns the agents whose Ready fails now, checked at most
// once per readyTTL. A change is logged, with the reason.
func (s *Server) notReady(ctx context.Context) map[string]error {
	rd := &s.records.ready
	rd.agentsMu.Lock()
	defer rd.agentsMu.Unlock()
	if !rd.agentsAt.IsZero() && time.Since(rd.agentsAt) < readyTTL {
		return rd.agentsDown
	}
	down := s.agentsReady(ctx)
	for name, err := range down {
		if prev, ok := rd.agentsDown[name]; !ok || prev.Error() != err.Error() {
			s.log.Warn("agent not ready", "agent", name, "err", err)
		}
	}
	for name := range rd.agentsDown {
		if _, ok := down[name]; !ok {
			s.log.Info("agent ready again", "agent", name)
		}
	}
	rd.agentsAt, rd.agentsDown = time.Now(), down
	return down
}

// agentsReady calls every agent's Ready at once, each within
// readyTimeout, and returns those that failed; one that does not answer
// in time (a Ready that ignores its context) is not ready.
func (s *Server) agentsReady(ctx context.Context) map[string]error {
	type answer struct {
		name string
		err  error
	}
	answers := make(chan answer, len(s.order)) // never blocks a late Ready
	asked := map[string]bool{}
	for _, name := range s.order {
		a := s.agents[name]
		if a.Ready == nil {
			continue
		}
		asked[name] = true
		go func() {
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readyTimeout)
			defer cancel()
			err := func() (err error) {
				defer func() {
					if p := recover(); p != nil {
						err = errors.New("its readiness check failed")
					}
				}()
				return a.Ready(actx)
			}()
			answers <- answer{name, err}
		}()
	}
	down := map[string]error{}
	timeout := time.After(readyTimeout + 100*time.Millisecond)
	for len(asked) > 0 {
		select {
		case a := <-answers:
			delete(asked, a.name)
			if a.err != nil {
				down[a.name] = a.err
			}
		case <-timeout:
			for name := range asked {
				down[name] = errors.New("its readiness check did not answer in time")
			}
			return down
		}
	}
	return down
}

// closingNow reports whether the server is shutting down.
func (s *Server) closingNow() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// databaseProblem is what clients read about a database that refuses
// writes: what the database said names files and hosts, and goes to the
// log only.
const databaseProblem = "the database cannot be written"

// healthRoutes serves /healthz and /readyz on m.
func (s *Server) healthRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if s.closingNow() {
			writeError(w, ErrClosing)
			return
		}
		// A probe that timed out says the database is slow, not that it
		// refuses writes: readiness reports it, liveness does not, since
		// restarting the server would not help.
		if err := s.writable(r.Context()); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			w.Header().Set("Retry-After", strconv.Itoa(retryAfterDatabase))
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "degraded", "agents": s.order, "problems": []string{databaseProblem}})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "agents": s.order})
	})
	m.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if s.closingNow() {
			writeError(w, ErrClosing)
			return
		}
		dbErr, down := s.writable(r.Context()), s.notReady(r.Context())
		if dbErr == nil && len(down) == 0 {
			writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "database": "ok", "agents": s.readyAgents(nil)})
			return
		}
		database := "ok"
		if dbErr != nil {
			database = databaseProblem
		}
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterDatabase))
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "not_ready", "database": database, "agents": s.readyAgents(down)})
	})
}

// readyAgents says, for each agent, "ready" or why it is not. An
// agent's Ready speaks for a client (see Agent.Ready), but what is down
// behind it may be named by an internal host: a server with API keys,
// whose /readyz anyone who reaches it may call, says only "not ready"
// and leaves the reason to the log.
func (s *Server) readyAgents(down map[string]error) map[string]string {
	out := make(map[string]string, len(s.order))
	for _, name := range s.order {
		switch err, ok := down[name]; {
		case !ok:
			out[name] = "ready"
		case s.locked():
			out[name] = "not ready (the server's log says why)"
		default:
			out[name] = "not ready: " + err.Error()
		}
	}
	return out
}
