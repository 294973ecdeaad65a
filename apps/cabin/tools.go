package cabin

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/loomkit/loom/tool"
)

// Args are the arguments of every cabin tool: an intent's action with its
// slots, and on whose behalf it runs. Which plugin_id is called is the
// tool's name (ToolName).
type Args struct {
	// Intent and Action name what the user asked for.
	Intent string `json:"intent" jsonschema:"description=the intent the step carries out"`
	Action string `json:"action" jsonschema:"description=the action of actions.yml that runs it"`
	// Slots are the action's arguments.
	Slots map[string]string `json:"slots,omitempty" jsonschema:"description=the slots of the intent's form, by name"`
	// Session, User and Vehicle say on whose behalf.
	Session string `json:"session_id"`
	User    string `json:"user_id"`
	Vehicle string `json:"vehicle_id"`
}

// Result is what a cabin tool returns. Data fields feed reply templates
// and workflow conditions; a failed result's data may carry a "reason"
// that names the reply in responses.yml errors.
type Result struct {
	Success bool           `json:"success"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data,omitempty"`
}

// toolDomain is the domain of the cabin's tools in its registry
// (App.Tools). Its packs are vehicle (plugin.cabin.*), orders
// (plugin.order.*, plugin.logistics.query, plugin.service.*), webhooks
// (the webhooks of actions.yml) and options (Options.Tools that replace
// no other).
const toolDomain = "cabin"

// The packs of ToolDomain.
const (
	packVehicle  = "vehicle"
	packOrders   = "orders"
	packWebhooks = "webhooks"
	packOptions  = "options"
)

// toolName is the name of the tool that carries out a plugin_id of
// actions.yml. Tool names are letters, digits, '_' and '-', so every
// other character becomes '_': plugin.order.query is carried out by the
// tool plugin_order_query.
func toolName(plugin string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9') {
			return r
		}
		return '_'
	}, plugin)
}

// newTool makes the tool that carries out plugin: named ToolName(plugin),
// with Args for arguments and a Result for result. Read tools only look
// (an order's status); write tools change the car, an order or a queue,
// and ask for a yes first when rules.yml says so. A refusal (an order that
// cannot be cancelled) is a Result with Success false; an error means the
// backend could not be reached or broke. Like tool.New, NewTool panics on
// a name longer than 64 characters.
func newTool(plugin, description string, kind tool.Kind, fn func(ctx context.Context, args Args) (Result, error)) tool.Tool {
	return tool.New(toolName(plugin), description, kind, fn)
}

// json is args as a tool call's arguments.
func (args Args) json() json.RawMessage {
	b, _ := json.Marshal(args) // strings and a map of strings always encode
	return b
}

// callTool runs t with args and reads its Result.
func callTool(ctx context.Context, t tool.Tool, args Args) (Result, error) {
	out, err := t.Call(ctx, args.json())
	if err != nil {
		return Result{}, err
	}
	var res Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		return Result{}, fmt.Errorf("tool %s: answer is not a result: %w", t.Name(), err)
	}
	return res, nil
}

// unavailable is the result of a tool that could not be reached or
// broke: a failed step, with reason unavailable.
func unavailable(err error) Result {
	return Result{Success: false, Message: err.Error(), Data: map[string]any{"reason": "unavailable"}}
}

// newTools puts the built-in tools, the webhooks of actions.yml and the
// tools of Options in one registry. A webhook or an option's tool
// replaces a tool of the same name.
func newTools(cfg *Config, st Store, opts Options) (*tool.Registry, error) {
	packs := []struct {
		name  string
		tools []tool.Tool
	}{{packVehicle, vehicleTools(st)}, {packOrders, orderTools(st)}, {packWebhooks, nil}, {packOptions, nil}}
	put := func(pack int, t tool.Tool) {
		for i := range packs {
			for j := range packs[i].tools {
				if packs[i].tools[j].Name() == t.Name() {
					packs[i].tools[j] = t
					return
				}
			}
		}
		packs[pack].tools = append(packs[pack].tools, t)
	}
	for _, ac := range cfg.Actions.Actions {
		if ac.Webhook != nil {
			put(2, newWebhook(ac.Plugin, ac.Description, *ac.Webhook, opts.HTTPClient))
		}
	}
	for _, t := range opts.Tools {
		put(3, t)
	}
	r := tool.NewRegistry()
	for _, p := range packs {
		if len(p.tools) == 0 {
			continue
		}
		if err := r.Register(toolDomain, p.name, p.tools...); err != nil {
			return nil, fmt.Errorf("register the %s tools: %w", p.name, err)
		}
	}
	return r, nil
}

// allTools is the view that shows every tool of r.
func allTools(r *tool.Registry) tool.View {
	var v tool.View
	for _, d := range r.Domains() {
		v.Add(d.Name, d.Packs...)
	}
	return v
}

// confirmPolicy is the tool policy of rules.yml's confirmation rules: a
// write tool asks for a yes first when an action it carries out is at a
// risk level named there, or serves an intent named there; every other
// write tool runs at once, and read tools always do.
func (c *Config) confirmPolicy(r *tool.Registry) tool.Policy {
	rules := c.Rules.Confirmation
	ask := map[string]bool{}
	for _, ac := range c.Actions.Actions {
		if slices.Contains(rules.RiskLevels, ac.Risk) {
			ask[toolName(ac.Plugin)] = true
		}
	}
	for _, plugin := range c.intentPlugins(rules.Intents) {
		ask[toolName(plugin)] = true
	}
	var p tool.Policy
	for _, t := range r.Visible(allTools(r)) {
		if t.Kind() == tool.Write && !ask[t.Name()] {
			p.AutoApprove = append(p.AutoApprove, t.Name())
		}
	}
	return p
}

// intentPlugins are the plugin_ids of the actions of intents, by intent.
func (c *Config) intentPlugins(intents []string) map[string]string {
	plugins := map[string]string{}
	for _, in := range c.Domain.Intents {
		if !slices.Contains(intents, in.ID) {
			continue
		}
		for _, ac := range c.Actions.Actions {
			if ac.ID == in.Action {
				plugins[in.ID] = ac.Plugin
			}
		}
	}
	return plugins
}

// checkTools reports every plugin_id of actions.yml that no tool carries
// out, and every confirmation rule that names a read tool: only write
// tools ask first.
func (c *Config) checkTools(r *tool.Registry) error {
	p := &problems{c: c}
	kind := func(plugin string) (tool.Kind, bool) {
		t, _, ok := r.Lookup(toolName(plugin))
		return t.Kind(), ok
	}
	for i, ac := range c.Actions.Actions {
		k, ok := kind(ac.Plugin)
		switch {
		case !ok:
			p.add(fileActions, at("actions", i, "plugin"), "action %q: no plugin %q (no tool %s: give the action a webhook, or pass the tool in Options.Tools)", ac.ID, ac.Plugin, toolName(ac.Plugin))
		case k == tool.Read && slices.Contains(c.Rules.Confirmation.RiskLevels, ac.Risk):
			p.add(fileActions, at("actions", i, "risk"), "action %q: rules.yml asks for a yes at risk %q, but tool %s only reads; only write tools ask first", ac.ID, ac.Risk, toolName(ac.Plugin))
		}
		if _, ok := kind(ac.Check); ac.Check != "" && !ok {
			p.add(fileActions, at("actions", i, "check"), "action %q: no check plugin %q (no tool %s)", ac.ID, ac.Check, toolName(ac.Check))
		}
	}
	plugins := c.intentPlugins(c.Rules.Confirmation.Intents)
	for i, id := range c.Rules.Confirmation.Intents {
		if k, ok := kind(plugins[id]); ok && k == tool.Read {
			p.add(fileRules, at("confirmation", "intents", i), "confirmation: intent %q runs tool %s, which only reads; only write tools ask first", id, toolName(plugins[id]))
		}
	}
	return errors.Join(p.errs...)
}

// webhook is a tool that is an HTTP endpoint of a real backend.
type webhook struct {
	plugin  string
	url     string
	header  http.Header
	timeout time.Duration
	client  *http.Client
}

// webhookCall is the body of a webhook's request: the plugin_id called
// and the tool's arguments.
type webhookCall struct {
	Plugin string `json:"plugin_id"`
	Args
}

// newWebhook returns the tool that carries out plugin on an HTTP endpoint
// of a real backend, as spec describes it: each call is a POST of the
// plugin_id and the Args as one JSON object, answered by a Result as
// JSON. $VAR and ${VAR} in the headers are expanded from the environment;
// the kind is spec's (default write). client makes the requests (nil:
// http.DefaultClient).
func newWebhook(plugin, description string, spec webhookSpec, client *http.Client) tool.Tool {
	h := http.Header{}
	for k, v := range spec.Headers {
		h.Set(k, os.ExpandEnv(v))
	}
	w := &webhook{plugin: plugin, url: spec.URL, header: h, timeout: spec.Timeout, client: client}
	return newTool(plugin, cmp.Or(description, "call "+spec.URL), cmp.Or(spec.Kind, tool.Write), w.call)
}

// maxWebhookBody bounds a webhook's answer.
const maxWebhookBody = 1 << 20

// call posts one call and reads the answer.
func (w *webhook) call(ctx context.Context, args Args) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(w.timeout, 5*time.Second))
	defer cancel()
	body, err := json.Marshal(webhookCall{Plugin: w.plugin, Args: args})
	if err != nil {
		return Result{}, fmt.Errorf("webhook %s: encode call: %w", w.url, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return Result{}, fmt.Errorf("webhook %s: %w", w.url, err)
	}
	for k, v := range w.header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	client := w.client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return Result{}, fmt.Errorf("webhook %s: %w", w.url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxWebhookBody))
	if err != nil {
		return Result{}, fmt.Errorf("webhook %s: read answer: %w", w.url, err)
	}
	if resp.StatusCode/100 != 2 {
		return Result{}, fmt.Errorf("webhook %s: HTTP %d: %.200s", w.url, resp.StatusCode, b)
	}
	var res Result
	if err := json.Unmarshal(b, &res); err != nil {
		return Result{}, fmt.Errorf("webhook %s: decode answer: %w", w.url, err)
	}
	return res, nil
}
