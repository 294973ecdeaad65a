package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Place says where a tool is registered: a domain ("schedule", "web") and
// optionally a pack inside it ("optimize"). The empty domain holds core
// tools, always visible.
type Place struct {
	Domain string `json:"domain,omitempty"`
	Pack   string `json:"pack,omitempty"`
}

// Domain describes a registered domain and its packs.
type Domain struct {
	Name  string   `json:"name"`
	Packs []string `json:"packs,omitempty"`
}

type entry struct {
	tool  Tool
	place Place
}

// Registry holds an application's tools by domain and pack. Register tools
// at start-up; reading is safe for concurrent use.
type Registry struct {
	mu       sync.RWMutex
	entries  []entry
	byName   map[string]int
	domains  []Domain
	ctxTools bool
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{byName: map[string]int{}}
}

// Register adds tools under a domain and pack. domain "" registers core
// tools (always visible, no pack); pack "" registers the domain's base
// tools, visible whenever the domain is. Names are unique across the
// registry (ErrDuplicate).
func (r *Registry) Register(domain, pack string, tools ...Tool) error {
	if strings.Contains(domain, "/") || strings.Contains(pack, "/") {
		return fmt.Errorf("register tools in %s/%s: names must not contain '/'", domain, pack)
	}
	if domain == "" && pack != "" {
		return fmt.Errorf("register tools in pack %s: a pack needs a domain", pack)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range tools {
		if t.schema == nil {
			return fmt.Errorf("register tool in %s: zero Tool (use tool.New)", domain)
		}
		if _, dup := r.byName[t.name]; dup {
			return fmt.Errorf("register tool %s: %w", t.name, ErrDuplicate)
		}
	}
	if domain != "" {
		i := slices.IndexFunc(r.domains, func(d Domain) bool { return d.Name == domain })
		if i < 0 {
			r.domains = append(r.domains, Domain{Name: domain})
			i = len(r.domains) - 1
		}
		if pack != "" && !slices.Contains(r.domains[i].Packs, pack) {
			r.domains[i].Packs = append(r.domains[i].Packs, pack)
		}
	}
	for _, t := range tools {
		r.byName[t.name] = len(r.entries)
		r.entries = append(r.entries, entry{tool: t, place: Place{domain, pack}})
	}
	return nil
}

// Lookup returns a tool by name, whatever the view.
func (r *Registry) Lookup(name string) (Tool, Place, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	i, ok := r.byName[name]
	if !ok {
		return Tool{}, Place{}, false
	}
	return r.entries[i].tool, r.entries[i].place, true
}

// Domains lists the registered domains and their packs, in registration
// order.
func (r *Registry) Domains() []Domain {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Domain, len(r.domains))
	for i, d := range r.domains {
		out[i] = Domain{Name: d.Name, Packs: slices.Clone(d.Packs)}
	}
	return out
}

// Visible returns the tools the view shows, in registration order.
func (r *Registry) Visible(v View) []Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []Tool
	for _, e := range r.entries {
		if v.Shows(e.place) {
			out = append(out, e.tool)
		}
	}
	return out
}

// Definitions returns the definitions of the tools the view shows, for a
// model request.
func (r *Registry) Definitions(v View) []Definition {
	tools := r.Visible(v)
	out := make([]Definition, len(tools))
	for i, t := range tools {
		out[i] = t.Definition()
	}
	return out
}

// Resolve returns the tool the model called, if the view shows it. The
// errors wrap ErrUnknown or ErrNotVisible and say what the model can do
// instead.
func (r *Registry) Resolve(v View, name string) (Tool, error) {
	t, place, ok := r.Lookup(name)
	if !ok {
		names := make([]string, 0, 16)
		for _, t := range r.Visible(v) {
			names = append(names, t.name)
		}
		return Tool{}, fmt.Errorf("%w %q; available tools: %s", ErrUnknown, name, strings.Join(names, ", "))
	}
	if !v.Shows(place) {
		hint := ""
		r.mu.RLock()
		ctxTools := r.ctxTools
		r.mu.RUnlock()
		if ctxTools {
			args := ContextArgs{Domain: place.Domain}
			if place.Pack != "" {
				args.Packs = []string{place.Pack}
			}
			b, _ := json.Marshal(args)
			hint = fmt.Sprintf("; call %s with %s first", AddToolName, b)
		}
		return Tool{}, fmt.Errorf("%w: %s is not available now%s", ErrNotVisible, name, hint)
	}
	return t, nil
}

// Check reports whether domain and its packs are registered; the error
// lists what is.
func (r *Registry) Check(domain string, packs ...string) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	i := slices.IndexFunc(r.domains, func(d Domain) bool { return d.Name == domain })
	if i < 0 {
		names := make([]string, len(r.domains))
		for j, d := range r.domains {
			names[j] = d.Name
		}
		return fmt.Errorf("unknown domain %q; domains: %s", domain, strings.Join(names, ", "))
	}
	for _, p := range packs {
		if !slices.Contains(r.domains[i].Packs, p) {
			return fmt.Errorf("unknown pack %q in domain %s; packs: %s", p, domain, strings.Join(r.domains[i].Packs, ", "))
		}
	}
	return nil
}

// View is what one run's model sees of a registry: the active domains and
// packs. It lives in graph state and round-trips through JSON. Its lists
// stay sorted and free of duplicates. The zero View shows core tools only.
type View struct {
	Domains []string `json:"domains,omitempty"`
	// Packs are "domain/pack".
	Packs []string `json:"packs,omitempty"`
}

// Add shows a domain and the given packs of it.
func (v *View) Add(domain string, packs ...string) {
	v.Domains = insertSorted(v.Domains, domain)
	for _, p := range packs {
		v.Packs = insertSorted(v.Packs, domain+"/"+p)
	}
}

// Remove hides the given packs of a domain or, with no packs, the domain
// and all its packs.
func (v *View) Remove(domain string, packs ...string) {
	if len(packs) == 0 {
		v.Domains = slices.DeleteFunc(v.Domains, func(d string) bool { return d == domain })
		v.Packs = slices.DeleteFunc(v.Packs, func(p string) bool { return strings.HasPrefix(p, domain+"/") })
		return
	}
	for _, p := range packs {
		full := domain + "/" + p
		v.Packs = slices.DeleteFunc(v.Packs, func(x string) bool { return x == full })
	}
}

// Shows reports whether a tool at place p is visible.
func (v View) Shows(p Place) bool {
	if p.Domain == "" {
		return true
	}
	if _, ok := slices.BinarySearch(v.Domains, p.Domain); !ok {
		return false
	}
	if p.Pack == "" {
		return true
	}
	_, ok := slices.BinarySearch(v.Packs, p.Domain+"/"+p.Pack)
	return ok
}

func insertSorted(s []string, x string) []string {
	i, found := slices.BinarySearch(s, x)
	if found {
		return s
	}
	return slices.Insert(s, i, x)
}

type viewKey struct{}

// WithView returns a context carrying the run's view, for the context
// tools to change. The agent sets it before calling tools; context tools of
// one view must not run concurrently.
func WithView(ctx context.Context, v *View) context.Context {
	return context.WithValue(ctx, viewKey{}, v)
}

// ViewFrom returns the view set by WithView, or nil.
func ViewFrom(ctx context.Context) *View {
	v, _ := ctx.Value(viewKey{}).(*View)
	return v
}

// Names of the context tools.
const (
	AddToolName    = "context_tools_add"
	RemoveToolName = "context_tools_remove"
)

// ContextArgs are the arguments of the context tools.
type ContextArgs struct {
	Domain string   `json:"domain"`
	Packs  []string `json:"packs,omitempty"`
}

// RegisterContextTools registers context_tools_add and context_tools_remove
// as core tools. The model calls them to show or hide a domain or some of
// its packs; they change the View found in the call's context (WithView).
// Call it after registering the domains: their names and packs go into the
// tools' schema and description.
func (r *Registry) RegisterContextTools() error {
	domains := r.Domains()
	var names, packs, lines []string
	for _, d := range domains {
		names = append(names, d.Name)
		line := d.Name
		if len(d.Packs) > 0 {
			line += " (packs: " + strings.Join(d.Packs, ", ") + ")"
		}
		lines = append(lines, line)
		for _, p := range d.Packs {
			if !slices.Contains(packs, p) {
				packs = append(packs, p)
			}
		}
	}
	domainSchema := map[string]any{"type": "string", "description": "the tool domain"}
	if len(names) > 0 {
		domainSchema["enum"] = names
	}
	packItems := map[string]any{"type": "string"}
	if len(packs) > 0 {
		packItems["enum"] = packs
	}
	schema, err := json.Marshal(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"domain": domainSchema,
			"packs":  map[string]any{"type": "array", "items": packItems, "description": "packs of the domain; omit for the domain's base tools"},
		},
		"required":             []string{"domain"},
		"additionalProperties": false,
	})
	if err != nil {
		return fmt.Errorf("register context tools: %w", err)
	}
	list := strings.Join(lines, "; ")
	add, err := NewRaw(AddToolName, "Make more tools available: a domain's base tools, plus the packs named. Domains: "+list+".",
		Read, schema, r.contextCall(true))
	if err != nil {
		return fmt.Errorf("register context tools: %w", err)
	}
	remove, err := NewRaw(RemoveToolName, "Hide tools you no longer need: the packs named, or the whole domain when no packs are given. Domains: "+list+".",
		Read, schema, r.contextCall(false))
	if err != nil {
		return fmt.Errorf("register context tools: %w", err)
	}
	if err := r.Register("", "", add, remove); err != nil {
		return err
	}
	r.mu.Lock()
	r.ctxTools = true
	r.mu.Unlock()
	return nil
}

func (r *Registry) contextCall(add bool) func(ctx context.Context, raw json.RawMessage) (any, error) {
	name := RemoveToolName
	if add {
		name = AddToolName
	}
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		v := ViewFrom(ctx)
		if v == nil {
			return nil, ErrNoView
		}
		var a ContextArgs
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, &ArgsError{Tool: name, Err: err}
		}
		if err := r.Check(a.Domain, a.Packs...); err != nil {
			return nil, &ArgsError{Tool: name, Err: err}
		}
		before := names(r.Visible(*v))
		if add {
			v.Add(a.Domain, a.Packs...)
		} else {
			v.Remove(a.Domain, a.Packs...)
		}
		after := names(r.Visible(*v))
		if add {
			return "Tools now available: " + orNone(diff(after, before)) + ".", nil
		}
		return "Tools no longer available: " + orNone(diff(before, after)) + ".", nil
	}
}

func names(tools []Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.name
	}
	return out
}

// diff returns the names in a but not in b.
func diff(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none (no change)"
	}
	return strings.Join(s, ", ")
}

// Policy says which write tools run without confirmation. The zero Policy
// asks for every write tool. It round-trips through JSON.
type Policy struct {
	// AutoApprove names the write tools that run without confirmation.
	AutoApprove []string `json:"auto_approve,omitempty"`
}

// NeedsConfirm reports whether a call of t must be confirmed by a person.
func (p Policy) NeedsConfirm(t Tool) bool {
	return t.kind == Write && !slices.Contains(p.AutoApprove, t.name)
}

// ConfirmRequest is what a person is asked before a write tool runs. It is
// the payload of the agent's confirm interrupt and round-trips through
// JSON.
type ConfirmRequest struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
	// Summary says in words what the call will do.
	Summary string `json:"summary"`
}

// ConfirmAnswer is the person's answer. Reject is a value, not an error.
// Its form is the one every consent in Loom takes: the page's confirm
// card and the server's reading of a typed reply both send
// {"accept": …, "note": …}.
type ConfirmAnswer struct {
	Accept bool `json:"accept"`
	// Note is what the person added: on a refusal, the reason the model
	// is told.
	Note string `json:"note,omitempty"`
}

// ConfirmRequest checks the arguments and builds the request to confirm a
// call of t. The error is an *ArgsError: bad calls are sent back to the
// model, never shown to the person.
func (t Tool) ConfirmRequest(ctx context.Context, args json.RawMessage) (ConfirmRequest, error) {
	clean, err := t.CheckArgs(args)
	if err != nil {
		return ConfirmRequest{}, err
	}
	return ConfirmRequest{Tool: t.name, Args: clean, Summary: t.Summary(ctx, clean)}, nil
}

// Rejected returns the tool message content that tells the model the
// person rejected the call, so the assistant's tool call still gets its
// result.
func (r ConfirmRequest) Rejected(reason string) string {
	msg := "The user rejected " + r.Summary + "; it did not run."
	if reason = strings.TrimSpace(reason); reason != "" {
		msg += " Reason: " + reason
	}
	return msg
}
