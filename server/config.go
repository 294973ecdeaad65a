package server

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/loomkit/loom/schema"
)

// This file is an agent's configuration: what a run's config.configurable
// and context (LangGraph API) may set, over an assistant's, checked
// against the agent's ConfigSchema and handed to the graph's nodes
// through the run's context (RunConfig).

// runConfigKey is the context key of a run's configuration.
type runConfigKey struct{}

// withRunConfig is ctx carrying cfg, a run's configuration (a JSON
// object; nil for none).
func withRunConfig(ctx context.Context, cfg json.RawMessage) context.Context {
	if len(cfg) == 0 {
		return ctx
	}
	return context.WithValue(ctx, runConfigKey{}, cfg)
}

// RunConfig decodes into v the configuration of the run that ctx belongs
// to: the assistant's config.configurable and context, with the run's own
// over them, checked against the agent's ConfigSchema before the run
// started. Fields the run did not set keep what v holds (its defaults).
// Nodes call it; outside a run it leaves v as it is and returns nil.
func RunConfig(ctx context.Context, v any) error {
	cfg, _ := ctx.Value(runConfigKey{}).(json.RawMessage)
	if len(cfg) == 0 {
		return nil
	}
	if err := json.Unmarshal(cfg, v); err != nil {
		return fmt.Errorf("read the run's configuration: %w", err)
	}
	return nil
}

// ConfigSchemaFor returns the JSON schema of T, an agent's configuration
// type, for Agent.ConfigSchema: a struct's fields, none of them required
// when tagged omitempty, and no other (see InputSchemaFor). It panics if T
// has no JSON schema, a programming error.
func ConfigSchemaFor[T any]() json.RawMessage {
	s, err := schema.For[T]()
	if err != nil {
		panic(fmt.Sprintf("server: config schema: %v", err))
	}
	return s.JSON()
}

// configSchemas caches the agents' compiled ConfigSchemas, by their text:
// an agent's differs between servers with different Options.Models.
var configSchemas sync.Map // schema text → *schema.Schema

func (a *builtAgent) configSchema() (*schema.Schema, error) {
	if v, ok := configSchemas.Load(string(a.ConfigSchema)); ok {
		return v.(*schema.Schema), nil
	}
	s, err := schema.Parse(a.ConfigSchema)
	if err != nil {
		return nil, fmt.Errorf("agent %s: config schema: %w", a.Name, err)
	}
	configSchemas.Store(string(a.ConfigSchema), s)
	return s, nil
}

// configFields are LangGraph's run config's fields that Loom takes: only
// configurable (the agent's settings); tags, recursion_limit, run_name and
// the like are refused.
var configFields = []string{"configurable"}

// configurable reads config.configurable of a request's config (what
// names it in errors, e.g. "config"): nil when config is absent.
func configurable(what string, config json.RawMessage) (map[string]json.RawMessage, error) {
	if !present(config) {
		return nil, nil
	}
	var c map[string]json.RawMessage
	if err := json.Unmarshal(config, &c); err != nil {
		return nil, errorf(http.StatusUnprocessableEntity, "invalid_config", "%s must be a JSON object", what)
	}
	for _, k := range slices.Sorted(maps.Keys(c)) {
		if !slices.Contains(configFields, k) {
			return nil, errorf(http.StatusUnprocessableEntity, "unsupported_field", "%s.%s is not supported: Loom takes only %s.configurable", what, k, what)
		}
	}
	if !present(c["configurable"]) {
		return nil, nil
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(c["configurable"], &out); err != nil {
		return nil, errorf(http.StatusUnprocessableEntity, "invalid_config", "%s.configurable must be a JSON object", what)
	}
	return out, nil
}

// contextObject reads a request's context (an object; nil when absent).
func contextObject(what string, ctx json.RawMessage) (map[string]json.RawMessage, error) {
	if !present(ctx) {
		return nil, nil
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(ctx, &out); err != nil {
		return nil, errorf(http.StatusUnprocessableEntity, "invalid_config", "%s must be a JSON object", what)
	}
	return out, nil
}

// mergeConfig checks layers (config.configurable and context of an
// assistant, then of a run, each over the ones before) against agent a's
// ConfigSchema, the model settings included, and returns them merged into one JSON object: nil when
// none sets anything. A field the agent does not take, or a value that
// does not fit, is a 422 that names it.
func mergeConfig(a *builtAgent, layers ...map[string]json.RawMessage) (json.RawMessage, error) {
	merged := map[string]json.RawMessage{}
	for _, l := range layers {
		maps.Copy(merged, l)
	}
	if len(merged) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(merged)
	if err != nil {
		return nil, fmt.Errorf("merge the run's configuration: %w", err)
	}
	if field, known := unknownField(a.ConfigSchema, b); field != "" {
		return nil, errorf(http.StatusUnprocessableEntity, "invalid_config", "configuration field %q is not one of agent %s's: %s", field, a.Name, strings.Join(known, ", "))
	}
	if err := checkModelSettings(b, a.models); err != nil {
		return nil, err
	}
	s, err := a.configSchema()
	if err != nil {
		return nil, err
	}
	if err := s.Validate(b); err != nil {
		return nil, errorf(http.StatusUnprocessableEntity, "invalid_config", "configuration does not fit agent %s: %v", a.Name, err)
	}
	return b, nil
}

// configLocale is the locale a run's configuration sets ("" for none):
// the language an agent that takes one answers in.
func configLocale(cfg json.RawMessage) string {
	var c struct {
		Locale string `json:"locale"`
	}
	_ = json.Unmarshal(cfg, &c)
	return c.Locale
}
