package cabin

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/graph"
	"github.com/loomkit/loom/intent"
	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/tool"
)

// Options configure an App. The zero value runs the Chinese default
// configuration in memory, without a model.
type Options struct {
	// Locale is the first language: LocaleChinese (default) or
	// LocaleEnglish. Its embedded configuration, with ConfigDir's files
	// over it, sets the routing thresholds and the replies to a text that
	// does not tell its language ("35"). The other locale's embedded
	// configuration is loaded beside it, and each utterance is understood
	// in both and answered in its own language. A ConfigDir whose
	// intents the other locale lacks makes the assistant speak Locale
	// only.
	Locale string
	// ConfigDir, when set, holds YAML files that replace the defaults of
	// the same name.
	ConfigDir string
	// Config, when set, is used instead of loading Locale and ConfigDir;
	// the assistant then speaks its language only.
	Config *Config
	// Saver keeps the sessions, one thread each; nil keeps them in memory.
	Saver checkpoint.Saver
	// Store keeps the simulated vehicles and orders: ServerAgent keeps
	// them in the server's database; nil keeps them in memory.
	Store Store
	// Model, when set, plans what the local planners cannot and answers
	// open small talk.
	Model llm.Model
	// ModelTimeout bounds one model call (default 8s).
	ModelTimeout time.Duration
	// Tools add to or replace the built-in tools and webhooks, by name:
	// make them with NewTool, named for the plugin_id of actions.yml they
	// carry out (see ToolName).
	Tools []tool.Tool
	// HTTPClient makes the webhook calls (default http.DefaultClient).
	HTTPClient *http.Client
	// Vehicle is the vehicle a session drives when it names none
	// (default "car-1").
	Vehicle string
	// AckAfter is how long chat-stream waits for the answer before it
	// sends an ack (default 1s).
	AckAfter time.Duration
	// Logger receives the app's logs (default slog.Default()).
	Logger *slog.Logger
}

// App is the cabin assistant: the configuration, the intent engine, the
// tools and the graph its sessions run on. It is safe for concurrent
// use; turns of one session run one at a time.
type App struct {
	cfg          *Config
	cat          *catalog
	engine       *intent.Engine
	slots        *slotReader
	spell        *speller
	replies      *replies
	tools        *tool.Registry
	policy       tool.Policy // which write tools ask for a yes first
	store        Store
	model        llm.Model
	modelTimeout time.Duration
	saver        checkpoint.Saver
	graph        *graph.Compiled[State]
	vehicle      string
	ackAfter     time.Duration
	log          *slog.Logger
	locks        *sessionLocks
	threads      Threads // nil: sessions are not recorded as server threads
	// locale is the language of cfg; variants are the app per locale
	// (nil when it speaks one).
	locale   string
	variants map[string]*App
}

// agentName is the name the assistant has in Loom's server.
const agentName = "cabin"

// withThreads is a with the sessions recorded in threads; the two share
// everything else.
func (a *App) withThreads(threads Threads) *App {
	b := *a
	b.threads = threads
	return &b
}

// New builds the app: it loads and checks the configuration, trains the
// intent engine, registers the tools and compiles the graph on the
// saver. A configuration error is reported with file, line and reason
// and wraps ErrConfig.
func New(ctx context.Context, opts Options) (*App, error) {
	cfg, second := opts.Config, (*Config)(nil)
	if cfg == nil {
		var err error
		if cfg, err = loadConfig(opts.Locale, opts.ConfigDir); err != nil {
			return nil, fmt.Errorf("cabin: load config: %w", err)
		}
		other := otherLocale(cmp.Or(opts.Locale, localeChinese))
		if second, err = loadConfig(other, ""); err != nil {
			return nil, fmt.Errorf("cabin: load config %s: %w", other, err)
		}
	}
	a := &App{
		cfg: cfg, model: opts.Model, store: opts.Store, saver: opts.Saver,
		vehicle:  cmp.Or(opts.Vehicle, defaultVehicle),
		ackAfter: cmp.Or(opts.AckAfter, time.Second), modelTimeout: cmp.Or(opts.ModelTimeout, 8*time.Second),
		log: opts.Logger, locks: &sessionLocks{}, locale: cmp.Or(cfg.Domain.Locale, opts.Locale, localeChinese),
	}
	if a.log == nil {
		a.log = slog.Default()
	}
	if second != nil && !pairs(cfg, second) {
		a.log.Warn("cabin: the configuration has intents the other language lacks; the assistant speaks one language", "locale", a.locale, "other", second.Domain.Locale)
		second = nil
	}
	if a.saver == nil {
		a.saver = checkpoint.NewMemory()
	}
	if a.store == nil {
		a.store = newMemoryStore()
	}
	a.saver = timedSaver{a.saver}
	tools, err := newTools(cfg, a.store, opts)
	if err != nil {
		return nil, fmt.Errorf("cabin: %w", err)
	}
	if err := cfg.checkTools(tools); err != nil {
		return nil, fmt.Errorf("cabin: %w", err)
	}
	if second != nil {
		if err := second.checkTools(tools); err != nil {
			return nil, fmt.Errorf("cabin: %w", err)
		}
	}
	a.tools, a.policy = tools, cfg.confirmPolicy(tools)
	a.cat = newCatalog(cfg)
	a.replies = newReplies(cfg, a.cat)
	forms, ecfg := cfg.Forms, cfg.engineConfig()
	if second != nil {
		forms, ecfg = mergeForms(forms, second.Forms), mergeEngine(ecfg, second.engineConfig())
	}
	a.slots = newSlotReader(forms)
	a.spell = newSpeller(cfg, second)
	engOpts := []intent.Option{intent.WithLogger(a.log)}
	if rc := cfg.Rules.RemoteClassifier; rc != nil {
		remote := *rc
		remote.Client = opts.HTTPClient
		for _, in := range ecfg.Intents {
			remote.Labels = append(remote.Labels, in.ID)
		}
		engOpts = append(engOpts, intent.WithRemote(&remote))
	}
	eng, err := intent.New(ctx, ecfg, engOpts...)
	if err != nil {
		return nil, fmt.Errorf("cabin: build intent engine: %w", err)
	}
	a.engine = eng
	if second != nil {
		a.bilingual(second)
	}
	if a.graph, err = a.Graph().Compile(graph.WithSaver(a.saver)); err != nil {
		return nil, fmt.Errorf("cabin: %w", err)
	}
	return a, nil
}

// Runner is the app's compiled graph, for Loom's server and command line.
func (a *App) Runner() graph.Runner { return a.graph }

// Config returns the configuration the app runs.
func (a *App) Config() *Config { return a.cfg }

// Store returns the store of the simulated vehicles and orders.
func (a *App) Store() Store { return a.store }

// Tools returns the registry of the app's tools: the domain ToolDomain,
// with the built-in tools, the webhooks and Options.Tools.
func (a *App) Tools() *tool.Registry { return a.tools }

// ChatRequest is one user turn, as POST /api/v1/agent/chat takes it.
type ChatRequest struct {
	// SessionID names the session; empty starts a new one.
	SessionID string `json:"session_id"`
	UserID    string `json:"user_id"`
	Channel   string `json:"channel"`
	// VehicleID is the car the session drives (default Options.Vehicle).
	VehicleID string `json:"vehicle_id"`
	Text      string `json:"text"`
}

// fillRequest continues a session that waits for slots or a confirmation
// (POST /api/v1/agent/fill-slots): slot values, a text reply, or a direct
// yes or no.
type fillRequest struct {
	SessionID string            `json:"session_id"`
	Slots     map[string]string `json:"slots"`
	Text      string            `json:"text"`
	Confirm   *bool             `json:"confirm"`
}

// errBadRequest wraps the errors of requests that cannot be run.
var errBadRequest = errors.New("cabin: bad request")

// Chat runs one turn. On a session that waits for an answer the turn
// answers it (resuming the graph's interrupt); otherwise it starts a new
// run on the session's thread.
func (a *App) Chat(ctx context.Context, req ChatRequest) (*Reply, error) {
	start := time.Now()
	if strings.TrimSpace(req.Text) == "" {
		return nil, fmt.Errorf("%w: text is empty", errBadRequest)
	}
	id := req.SessionID
	if id == "" {
		id = checkpoint.NewID()
	}
	return a.turn(ctx, id, start, Answer{Text: req.Text}, func(s *State) {
		s.Text, s.SessionID, s.UserID, s.VehicleID, s.Channel = req.Text, id, req.UserID, req.VehicleID, req.Channel
	}, false)
}

// FillSlots continues a session with slot values, a text or a direct
// confirmation. A session that does not exist, or has no current intent,
// gets a fallback reply.
func (a *App) FillSlots(ctx context.Context, req fillRequest) (*Reply, error) {
	start := time.Now()
	if req.SessionID == "" || (len(req.Slots) == 0 && strings.TrimSpace(req.Text) == "" && req.Confirm == nil) {
		return a.noSession(req.SessionID, start), nil
	}
	return a.turn(ctx, req.SessionID, start, Answer{Text: req.Text, Slots: req.Slots, Accept: req.Confirm}, func(s *State) {
		s.Text, s.FillSlots, s.Accept, s.SessionID = req.Text, req.Slots, req.Confirm, req.SessionID
	}, true)
}

// noSession is the fallback reply to a fill-slots with nothing to fill.
func (a *App) noSession(id string, start time.Time) *Reply {
	r := &Reply{SessionID: id, Type: typeFallback, Status: statusFallback, Message: a.replies.text("no_session", nil),
		Debug: Debug{Decision: "fallback", DecisionReason: "fill-slots without a session that has a current intent"}}
	r.Latency.Total = ms(time.Since(start))
	r.Latency.FirstResponse = r.Latency.Total
	return r
}

// turn runs one turn on session id: it resumes a pending interrupt with
// ans, or starts a new run with update. With fill set, a session that
// does not exist or has no current intent gets the fallback reply.
func (a *App) turn(ctx context.Context, id string, start time.Time, ans Answer, update func(*State), fill bool) (*Reply, error) {
	key := a.key(ctx, id)
	unlock := a.locks.lock(key)
	defer unlock()
	c := &clock{}
	ctx = withClock(ctx, c)
	head, err := a.saver.Get(ctx, key, "")
	switch {
	case errors.Is(err, checkpoint.ErrNotFound):
		head = nil
	case err != nil:
		return nil, fmt.Errorf("cabin: session %s: %w", id, err)
	}
	if fill {
		var s State
		if head != nil {
			if err := json.Unmarshal(head.State, &s); err != nil {
				return nil, fmt.Errorf("cabin: session %s: %w", id, err)
			}
		}
		if head == nil || (!s.Session.waiting() && s.Session.Intent == "") {
			return a.noSession(id, start), nil
		}
	}
	before := threadStatus(head != nil && head.Interrupt != nil)
	if a.threads != nil {
		if err := a.threads.TrackThread(ctx, id, agentName, before); err != nil {
			return nil, fmt.Errorf("cabin: session %s: %w", id, err)
		}
		release, err := a.threads.HoldThread(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("cabin: session %s: %w", id, err)
		}
		defer release()
	}
	var res *graph.Result[State]
	if head != nil && head.Interrupt != nil {
		res, err = a.graph.Resume(ctx, key, ans)
	} else {
		res, err = a.graph.Invoke(ctx, key, update)
	}
	if err != nil {
		return nil, fmt.Errorf("cabin: session %s: %w", id, err)
	}
	if after := threadStatus(res.Interrupt != nil); a.threads != nil && after != before {
		if err := a.threads.TrackThread(ctx, id, agentName, after); err != nil {
			return nil, fmt.Errorf("cabin: session %s: record the turn: %w", id, err)
		}
	}
	r := response(id, res.State)
	r.Latency.SessionGetOrCreate = ms(time.Duration(c.get.Load()))
	r.Latency.SessionSave = ms(time.Duration(c.put.Load()))
	r.Latency.Total = ms(time.Since(start))
	r.Latency.FirstResponse = r.Latency.Total
	return r, nil
}

// threadStatus is a session's status as a thread of Loom's server.
func threadStatus(waiting bool) string {
	if waiting {
		return server.StatusInterrupted
	}
	return server.StatusIdle
}

// response is the reply of a state, with the session's intent, slots and
// workflow; small talk with no task waiting has none of them (the last
// task is over and the chat is not part of it), nor has a refusal, a
// clarify question or a fallback (the turn ran nothing).
func response(id string, s State) *Reply {
	r := s.Reply
	r.SessionID = id
	if r.Status == statusSocial && !s.Session.waiting() {
		return &r
	}
	switch r.Type {
	case typeReject, typeClarify, typeFallback:
		return &r // a refused or unclear turn did nothing: no intent of an earlier one
	}
	r.Intent, r.Slots, r.PendingSlots, r.Workflow = s.Session.Intent, s.Session.Slots, s.Session.PendingSlots, s.Session.Workflow
	return &r
}

// key is the id session id's checkpoints are kept under: the caller's
// thread key on Loom's server, else id.
func (a *App) key(ctx context.Context, id string) string {
	if a.threads == nil {
		return id
	}
	return a.threads.ThreadKey(ctx, id)
}

// sessionInfo is a session as the API shows it.
type sessionInfo struct {
	Session Session `json:"session"`
	// Pending is the question the session waits on, if any.
	Pending *checkpoint.Interrupt `json:"pending,omitempty"`
	// Reply is the answer to the last turn.
	Reply Reply `json:"last_reply"`
}

// Session returns session id, or an error wrapping checkpoint.ErrNotFound.
func (a *App) Session(ctx context.Context, id string) (*sessionInfo, error) {
	head, err := a.saver.Get(ctx, a.key(ctx, id), "")
	if err != nil {
		return nil, fmt.Errorf("cabin: session %s: %w", id, err)
	}
	var s State
	if err := json.Unmarshal(head.State, &s); err != nil {
		return nil, fmt.Errorf("cabin: session %s: %w", id, err)
	}
	return &sessionInfo{Session: s.Session, Pending: head.Interrupt, Reply: *response(id, s)}, nil
}

// sessionLocks serialise the turns of each session within the process;
// the saver's compare-and-set guards across processes.
type sessionLocks struct {
	mu sync.Mutex
	m  map[string]*sessionLock
}

type sessionLock struct {
	mu    sync.Mutex
	users int
}

func (l *sessionLocks) lock(id string) (unlock func()) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*sessionLock{}
	}
	e := l.m[id]
	if e == nil {
		e = &sessionLock{}
		l.m[id] = e
	}
	e.users++
	l.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		l.mu.Lock()
		if e.users--; e.users == 0 {
			delete(l.m, id)
		}
		l.mu.Unlock()
	}
}

// clock adds up the time a turn spends reading and writing checkpoints.
type clock struct{ get, put atomic.Int64 }

type clockKey struct{}

func withClock(ctx context.Context, c *clock) context.Context {
	return context.WithValue(ctx, clockKey{}, c)
}

func clockOf(ctx context.Context) *clock {
	c, _ := ctx.Value(clockKey{}).(*clock)
	return c
}

// timedSaver is a saver that times Get and Put on the turn's clock.
type timedSaver struct{ checkpoint.Saver }

// Put implements checkpoint.Saver.
func (t timedSaver) Put(ctx context.Context, cp *checkpoint.Checkpoint) error {
	start := time.Now()
	err := t.Saver.Put(ctx, cp)
	if c := clockOf(ctx); c != nil {
		c.put.Add(int64(time.Since(start)))
	}
	return err
}

// Get implements checkpoint.Saver.
func (t timedSaver) Get(ctx context.Context, thread, id string) (*checkpoint.Checkpoint, error) {
	start := time.Now()
	cp, err := t.Saver.Get(ctx, thread, id)
	if c := clockOf(ctx); c != nil {
		c.get.Add(int64(time.Since(start)))
	}
	return cp, err
}
