package server

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"strings"

	"github.com/loomkit/loom/llm"
)

// This file is the model settings every agent's configuration takes,
// besides its own: the model a run's calls go to and their temperature.
// The server adds them to each agent's ConfigSchema and checks them with
// the rest of a run's configuration; RunModel applies them to the calls
// made in the run.

// modelSettings are the model settings of a run's configuration.
type modelSettings struct {
	// Model names the provider's model, one of Options.Models.
	Model string `json:"model,omitempty"`
	// Temperature is the sampling temperature, from 0 to 2.
	Temperature *float64 `json:"temperature,omitempty"`
}

// maxTemperature is the highest temperature a run may set, as OpenAI's
// API and the providers compatible with it take.
const maxTemperature = 2

// RunModel returns m applying the model settings of the run each call is
// made in: the model (configurable or context "model") the call goes to
// instead of m's own, and the temperature ("temperature") that replaces
// the one the call asks for. The server checks both before the run starts
// (see Options.Models). Calls outside a run, or in one that sets neither,
// go to m as they are. RunModel(nil) is nil, so that an agent without a
// model still sees none.
func RunModel(m llm.Model) llm.Model {
	if m == nil {
		return nil
	}
	return runModel{m}
}

// runModel is RunModel's model.
type runModel struct{ m llm.Model }

// Generate is m's Generate with the run's model settings.
func (r runModel) Generate(ctx context.Context, msgs []llm.Message, opts ...llm.Option) (*llm.Response, error) {
	return r.m.Generate(ctx, msgs, runOptions(ctx, opts)...)
}

// Stream is m's Stream with the run's model settings.
func (r runModel) Stream(ctx context.Context, msgs []llm.Message, opts ...llm.Option) iter.Seq2[llm.Chunk, error] {
	return r.m.Stream(ctx, msgs, runOptions(ctx, opts)...)
}

// runOptions is opts followed by the options of the model settings of
// the run ctx belongs to, which win over what opts set.
func runOptions(ctx context.Context, opts []llm.Option) []llm.Option {
	var ms modelSettings
	if err := RunConfig(ctx, &ms); err != nil || (ms.Model == "" && ms.Temperature == nil) {
		return opts
	}
	opts = slices.Clip(opts) // the caller's slice is left as it is
	if ms.Model != "" {
		opts = append(opts, llm.WithModel(ms.Model))
	}
	if ms.Temperature != nil {
		opts = append(opts, llm.WithTemperature(*ms.Temperature))
	}
	return opts
}

// withModelSettings returns an agent's ConfigSchema (nil: none) with the
// model settings among its properties: "model", one of models, and
// "temperature". An agent may not declare either itself.
func withModelSettings(agent json.RawMessage, models []string) (json.RawMessage, error) {
	s := map[string]json.RawMessage{
		"type":                 json.RawMessage(`"object"`),
		"additionalProperties": json.RawMessage(`false`),
	}
	if agent != nil {
		if err := json.Unmarshal(agent, &s); err != nil {
			return nil, fmt.Errorf("config schema: %w", err)
		}
	}
	props := map[string]json.RawMessage{}
	if p, ok := s["properties"]; ok {
		if err := json.Unmarshal(p, &props); err != nil {
			return nil, fmt.Errorf("config schema: properties: %w", err)
		}
	}
	for _, name := range []string{"model", "temperature"} {
		if _, ok := props[name]; ok {
			return nil, fmt.Errorf("config schema: %q is the server's model setting, which every agent takes; an agent may not declare it", name)
		}
	}
	model := map[string]any{"type": "string", "description": "the model every call of the run goes to (default: the server's own)"}
	if len(models) > 0 {
		model["enum"] = models
	}
	props["model"], _ = json.Marshal(model)
	props["temperature"], _ = json.Marshal(map[string]any{"type": "number", "minimum": 0, "maximum": maxTemperature,
		"description": "the sampling temperature of every call of the run, from 0 to 2 (default: what each call asks for)"})
	s["properties"], _ = json.Marshal(props)
	return json.Marshal(s)
}

// checkModelSettings checks the model settings of cfg, a run's merged
// configuration, against models, the names a run may choose: a model
// not among them, or a temperature outside 0 to 2, is a 422 that says
// what would do.
func checkModelSettings(cfg json.RawMessage, models []string) error {
	var ms struct {
		Model       *string  `json:"model"`
		Temperature *float64 `json:"temperature"`
	}
	if json.Unmarshal(cfg, &ms) != nil {
		return nil // a wrong type: the schema says what is wrong
	}
	if ms.Model != nil && !slices.Contains(models, *ms.Model) {
		if len(models) == 0 {
			return errorf(http.StatusUnprocessableEntity, "invalid_config", "model %q cannot be chosen: this server has no model configured", *ms.Model)
		}
		return errorf(http.StatusUnprocessableEntity, "invalid_config", "model %q is not one of this server's models: %s", *ms.Model, strings.Join(models, ", "))
	}
	if t := ms.Temperature; t != nil && (*t < 0 || *t > maxTemperature) {
		return errorf(http.StatusUnprocessableEntity, "invalid_config", "temperature must be from 0 to %d, not %v", maxTemperature, *t)
	}
	return nil
}
