package cabin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"
)

// Call is one request to a plugin: an intent's action with its slots.
type Call struct {
	// Plugin is the plugin_id called.
	Plugin string `json:"plugin_id"`
	// Intent and Action name what the user asked for.
	Intent string `json:"intent"`
	Action string `json:"action"`
	// Slots are the action's arguments.
	Slots map[string]string `json:"slots"`
	// Session, User and Vehicle say on whose behalf.
	Session string `json:"session_id"`
	User    string `json:"user_id"`
	Vehicle string `json:"vehicle_id"`
}

// Result is what a plugin returns. Data fields feed reply
// templates and workflow conditions; a failed result's data may carry a
// "reason" that names the reply in responses.yml errors.
type Result struct {
	Success bool           `json:"success"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data,omitempty"`
}

// Plugin carries out an action. An error means the plugin could not be
// reached or broke; a refusal (an order that cannot be cancelled) is a
// Result with Success false.
type Plugin interface {
	Call(ctx context.Context, c Call) (Result, error)
}

// PluginFunc is a function that is a Plugin.
type PluginFunc func(ctx context.Context, c Call) (Result, error)

// Call implements Plugin.
func (f PluginFunc) Call(ctx context.Context, c Call) (Result, error) { return f(ctx, c) }

// ErrNoPlugin is returned for a plugin_id nobody registered.
var ErrNoPlugin = errors.New("cabin: no such plugin")

// Registry holds plugins by plugin_id. It is safe for concurrent use.
type Registry struct {
	mu      sync.RWMutex
	plugins map[string]Plugin
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{plugins: map[string]Plugin{}} }

// Register makes p the plugin for id, replacing any other.
func (r *Registry) Register(id string, p Plugin) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.plugins[id] = p
}

// Has reports whether id has a plugin.
func (r *Registry) Has(id string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.plugins[id]
	return ok
}

// IDs returns the registered plugin_ids, sorted.
func (r *Registry) IDs() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.plugins))
}

// Call calls the plugin registered for c.Plugin.
func (r *Registry) Call(ctx context.Context, c Call) (Result, error) {
	r.mu.RLock()
	p, ok := r.plugins[c.Plugin]
	r.mu.RUnlock()
	if !ok {
		return Result{}, fmt.Errorf("call %s: %w", c.Plugin, ErrNoPlugin)
	}
	res, err := p.Call(ctx, c)
	if err != nil {
		return Result{}, fmt.Errorf("call %s: %w", c.Plugin, err)
	}
	return res, nil
}

// Webhook is a plugin that is an HTTP endpoint of a real backend: each
// call is a POST of the Call as JSON, answered by a Result as JSON.
type Webhook struct {
	// URL receives the calls.
	URL string
	// Header is sent with every call.
	Header http.Header
	// Timeout bounds a call (default 5s).
	Timeout time.Duration
	// Client makes the requests (default http.DefaultClient).
	Client *http.Client
}

// NewWebhook returns the webhook a WebhookSpec describes, with $VAR and
// ${VAR} in its headers expanded from the environment.
func NewWebhook(spec WebhookSpec, client *http.Client) *Webhook {
	h := http.Header{}
	for k, v := range spec.Headers {
		h.Set(k, os.ExpandEnv(v))
	}
	return &Webhook{URL: spec.URL, Header: h, Timeout: spec.Timeout, Client: client}
}

// maxWebhookBody bounds a webhook's answer.
const maxWebhookBody = 1 << 20

// Call implements Plugin.
func (w *Webhook) Call(ctx context.Context, c Call) (Result, error) {
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	body, err := json.Marshal(c)
	if err != nil {
		return Result{}, fmt.Errorf("webhook %s: encode call: %w", w.URL, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return Result{}, fmt.Errorf("webhook %s: %w", w.URL, err)
	}
	for k, v := range w.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	client := w.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return Result{}, fmt.Errorf("webhook %s: %w", w.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxWebhookBody))
	if err != nil {
		return Result{}, fmt.Errorf("webhook %s: read answer: %w", w.URL, err)
	}
	if resp.StatusCode/100 != 2 {
		return Result{}, fmt.Errorf("webhook %s: HTTP %d: %.200s", w.URL, resp.StatusCode, b)
	}
	var res Result
	if err := json.Unmarshal(b, &res); err != nil {
		return Result{}, fmt.Errorf("webhook %s: decode answer: %w", w.URL, err)
	}
	return res, nil
}
