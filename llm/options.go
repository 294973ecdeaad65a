package llm

import (
	"encoding/json"
	"maps"
)

// Tool describes a tool the model may call.
type Tool struct {
	// Name is how the model names the tool in a call.
	Name string `json:"name"`
	// Description tells the model what the tool does and when to use it.
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema of the arguments object. Empty means
	// the tool takes no arguments.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// Options are the settings of one call. Implementations read them with
// NewOptions; callers set them with the With... functions.
//
// The zero value of each field means "not set": the provider's default
// applies. Options round-trip through JSON so that exchanges can be
// recorded.
type Options struct {
	// Model names the provider's model for this call, in place of the one
	// the implementation was made with.
	Model string `json:"model,omitempty"`
	// Temperature is the sampling temperature.
	Temperature *float64 `json:"temperature,omitempty"`
	// MaxTokens caps the tokens of the answer.
	MaxTokens int `json:"max_tokens,omitempty"`
	// Thinking turns the model's thinking on or off, on providers that
	// have a switch for it.
	Thinking *bool `json:"thinking,omitempty"`
	// JSON asks for an answer that is a single JSON object.
	JSON bool `json:"json,omitempty"`
	// Tools are the tools the model may call.
	Tools []Tool `json:"tools,omitempty"`
	// ToolChoice is "auto", "none", "required", or the name of the one
	// tool the model must call. Empty leaves it to the provider.
	ToolChoice string `json:"tool_choice,omitempty"`
	// Stop lists sequences at which the model stops.
	Stop []string `json:"stop,omitempty"`
	// Extra holds fields added to the provider's request body as they are,
	// for settings this package has no name for. They override fields of
	// the same name that the implementation would send.
	Extra map[string]any `json:"extra,omitempty"`
}

// Option sets one setting of a call.
type Option func(*Options)

// NewOptions applies opts in order and returns the result.
func NewOptions(opts ...Option) Options {
	var o Options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// WithOptions replaces all settings with a copy of o, e.g. to replay
// settings that were recorded.
func WithOptions(o Options) Option {
	return func(dst *Options) {
		c := o
		c.Tools = append([]Tool(nil), o.Tools...)
		c.Stop = append([]string(nil), o.Stop...)
		c.Extra = maps.Clone(o.Extra)
		*dst = c
	}
}

// WithModel names the provider's model for the call (e.g. "deepseek-chat"),
// in place of the one the implementation was made with.
func WithModel(name string) Option { return func(o *Options) { o.Model = name } }

// WithTemperature sets the sampling temperature.
func WithTemperature(t float64) Option { return func(o *Options) { o.Temperature = &t } }

// WithMaxTokens caps the tokens of the answer.
func WithMaxTokens(n int) Option { return func(o *Options) { o.MaxTokens = n } }

// WithThinking turns the model's thinking on or off.
func WithThinking(on bool) Option { return func(o *Options) { o.Thinking = &on } }

// WithJSON asks for an answer that is a single JSON object (JSON mode).
func WithJSON() Option { return func(o *Options) { o.JSON = true } }

// WithTools offers tools to the model, after any offered before.
func WithTools(tools ...Tool) Option {
	return func(o *Options) { o.Tools = append(o.Tools, tools...) }
}

// WithToolChoice sets which tool the model must use: "auto", "none",
// "required", or a tool name.
func WithToolChoice(choice string) Option { return func(o *Options) { o.ToolChoice = choice } }

// WithStop sets the stop sequences.
func WithStop(seqs ...string) Option { return func(o *Options) { o.Stop = seqs } }

// WithExtra adds a field to the request body as it is, e.g.
// WithExtra("enable_thinking", false) or WithExtra("top_k", 20).
func WithExtra(key string, value any) Option {
	return func(o *Options) {
		if o.Extra == nil {
			o.Extra = map[string]any{}
		}
		o.Extra[key] = value
	}
}
