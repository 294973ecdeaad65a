// Package openai is an llm.Model over any OpenAI-compatible chat
// completions endpoint, built on the official openai-go client: OpenAI,
// DeepSeek, Qwen on DashScope, Doubao on Volcengine Ark, Ollama and vLLM.
//
// Providers differ in how thinking is switched on and off and where
// reasoning comes back; Config.Provider names the dialect (it is guessed
// from the base URL when empty). Reasoning is read from reasoning_content
// or reasoning, in whole messages and stream deltas alike, and streamed as
// reasoning chunks separate from content.
//
// Calls are retried with exponential backoff and jitter on HTTP 408, 409,
// 429 and 5xx, on timeouts of one attempt and on dropped connections,
// honouring Retry-After. A stream is retried only until its first chunk has
// been handed to the caller. A stream that ends without [DONE], or breaks,
// ends with an error wrapping llm.ErrTruncated.
//
// See README.md in this directory for each provider's settings.
package openai

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/loomkit/loom/llm"
)

// Defaults used where Config leaves a field zero.
const (
	DefaultBaseURL      = "https://api.openai.com/v1"
	DefaultTimeout      = 10 * time.Minute
	DefaultMaxRetries   = 2
	DefaultMaxRetryWait = time.Minute
)

// Provider is the dialect of an endpoint: how thinking is switched and how
// the token limit is named.
type Provider string

// The providers this package knows. See README.md for what each sends.
const (
	// ProviderAuto guesses the provider from the base URL's host, falling
	// back to ProviderGeneric.
	ProviderAuto Provider = ""
	// ProviderOpenAI sends max_completion_tokens and ignores the thinking
	// switch (use llm.WithExtra("reasoning_effort", ...) instead).
	ProviderOpenAI Provider = "openai"
	// ProviderDeepSeek sends thinking: {type: enabled|disabled}.
	ProviderDeepSeek Provider = "deepseek"
	// ProviderQwen (DashScope) sends enable_thinking: true|false.
	ProviderQwen Provider = "qwen"
	// ProviderDoubao (Volcengine Ark) sends thinking: {type: enabled|disabled}.
	ProviderDoubao Provider = "doubao"
	// ProviderOllama sends reasoning_effort: "none" to switch thinking off
	// and "medium" to switch it on.
	ProviderOllama Provider = "ollama"
	// ProviderVLLM sends chat_template_kwargs: {enable_thinking, thinking}.
	ProviderVLLM Provider = "vllm"
	// ProviderGeneric is any other OpenAI-compatible endpoint; the thinking
	// switch is not sent.
	ProviderGeneric Provider = "generic"
)

// ErrConfig is wrapped by New when the Config cannot work.
var ErrConfig = errors.New("openai: bad config")

// Config says which endpoint and model to use and how to call it.
type Config struct {
	// BaseURL is the API root, ending in /v1 for most providers;
	// DefaultBaseURL when empty.
	BaseURL string
	// APIKey is sent as a bearer token; may be empty for local servers.
	APIKey string
	// Model is the model name, e.g. "deepseek-chat". Required.
	Model string
	// Provider names the dialect; guessed from BaseURL when empty.
	Provider Provider
	// Timeout bounds one attempt: the whole response of Generate, and for
	// Stream the wait for the first event and between two events.
	// DefaultTimeout when zero. The context bounds the call as a whole.
	Timeout time.Duration
	// MaxRetries is how many times a failed call is tried again;
	// DefaultMaxRetries when zero, none when negative.
	MaxRetries int
	// MaxRetryWait is the longest Retry-After the client waits for; a
	// longer one fails the call at once. DefaultMaxRetryWait when zero.
	MaxRetryWait time.Duration
	// SendReasoning sends the Reasoning of assistant messages back as
	// reasoning_content. DeepSeek's thinking mode needs it when tools are
	// called; other providers may reject it.
	SendReasoning bool
	// Headers are added to every request.
	Headers map[string]string
	// HTTPClient makes the requests; a plain http.Client when nil. Its
	// Timeout, if any, also bounds streams.
	HTTPClient *http.Client
	// Logger receives retry and diagnostic logs; slog.Default() when nil.
	Logger *slog.Logger
}

// FromEnv returns a Config read from the environment: OPENAI_BASE_URL,
// OPENAI_API_KEY, LOOM_MODEL and, optionally, LOOM_PROVIDER.
func FromEnv() Config {
	return Config{
		BaseURL:  os.Getenv("OPENAI_BASE_URL"),
		APIKey:   os.Getenv("OPENAI_API_KEY"),
		Model:    os.Getenv("LOOM_MODEL"),
		Provider: Provider(os.Getenv("LOOM_PROVIDER")),
	}
}

// NewFromEnv returns the model the environment configures (see FromEnv),
// or nil and no error when it configures none — no LOOM_MODEL, or neither
// a key nor a base URL — so that an agent can run without a model.
func NewFromEnv() (llm.Model, error) {
	cfg := FromEnv()
	if cfg.Model == "" || (cfg.APIKey == "" && cfg.BaseURL == "") {
		return nil, nil
	}
	m, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Model is an llm.Model over an OpenAI-compatible endpoint. It is safe for
// concurrent use.
type Model struct {
	cfg      Config
	provider Provider
	svc      oa.ChatCompletionService
	reqOpts  []option.RequestOption // the client configuration, for the embeddings service
	log      *slog.Logger
	// wait sleeps between attempts; tests replace it.
	wait func(ctx context.Context, d time.Duration) error
	// jitter returns a random number in [0, 1); tests replace it.
	jitter func() float64
}

var _ llm.Model = (*Model)(nil)

// New returns a Model for cfg.
func New(cfg Config) (*Model, error) {
	if cfg.Model == "" {
		return nil, fmt.Errorf("%w: Model is empty (set LOOM_MODEL)", ErrConfig)
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: BaseURL %q is not an http(s) URL", ErrConfig, cfg.BaseURL)
	}
	switch cfg.Provider {
	case ProviderAuto:
		cfg.Provider = DetectProvider(cfg.BaseURL)
	case ProviderOpenAI, ProviderDeepSeek, ProviderQwen, ProviderDoubao, ProviderOllama, ProviderVLLM, ProviderGeneric:
	default:
		return nil, fmt.Errorf("%w: unknown Provider %q", ErrConfig, cfg.Provider)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	switch {
	case cfg.MaxRetries == 0:
		cfg.MaxRetries = DefaultMaxRetries
	case cfg.MaxRetries < 0:
		cfg.MaxRetries = 0
	}
	if cfg.MaxRetryWait <= 0 {
		cfg.MaxRetryWait = DefaultMaxRetryWait
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	// The environment is not read here (FromEnv does that): the options
	// below are the whole client configuration. Retries are this package's.
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	for k, v := range cfg.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	return &Model{
		cfg:      cfg,
		provider: cfg.Provider,
		svc:      oa.NewChatCompletionService(opts...),
		reqOpts:  opts,
		log:      log.With("model", cfg.Model, "provider", string(cfg.Provider)),
		wait:     sleep,
		jitter:   randFloat,
	}, nil
}

// DetectProvider guesses the provider from a base URL's host.
func DetectProvider(baseURL string) Provider {
	u, err := url.Parse(baseURL)
	if err != nil {
		return ProviderGeneric
	}
	host := strings.ToLower(u.Hostname())
	switch {
	case host == "api.openai.com":
		return ProviderOpenAI
	case strings.HasSuffix(host, "deepseek.com"):
		return ProviderDeepSeek
	case strings.HasPrefix(host, "dashscope") && strings.HasSuffix(host, ".aliyuncs.com"):
		return ProviderQwen
	case strings.HasSuffix(host, ".volces.com"):
		return ProviderDoubao
	case u.Port() == "11434":
		return ProviderOllama
	}
	return ProviderGeneric
}

// Provider returns the dialect in use, after any guess from the base URL.
func (m *Model) Provider() Provider { return m.provider }

// Generate returns the whole answer to msgs.
func (m *Model) Generate(ctx context.Context, msgs []llm.Message, opts ...llm.Option) (*llm.Response, error) {
	params, err := m.params(msgs, llm.NewOptions(opts...), false)
	if err != nil {
		return nil, fmt.Errorf("openai generate: %w", err)
	}
	for attempt := 0; ; attempt++ {
		resp, err := m.generateOnce(ctx, params)
		if err == nil {
			return resp, nil
		}
		if err = m.retry(ctx, "generate", attempt, err); err != nil {
			return nil, fmt.Errorf("openai generate: %w", err)
		}
	}
}

func (m *Model) generateOnce(ctx context.Context, params oa.ChatCompletionNewParams) (*llm.Response, error) {
	actx, cancel := context.WithTimeoutCause(ctx, m.cfg.Timeout, errAttemptTimeout)
	defer cancel()
	var raw *http.Response
	completion, err := m.svc.New(actx, params, option.WithResponseInto(&raw))
	if err != nil {
		return nil, m.attemptError(ctx, actx, raw, err)
	}
	resp, err := fromCompletion(completion)
	if err != nil {
		return nil, &failure{err: fmt.Errorf("%w: %w", llm.ErrMalformed, err)}
	}
	return resp, nil
}

// Stream returns the answer to msgs as it is produced; see llm.Model.
func (m *Model) Stream(ctx context.Context, msgs []llm.Message, opts ...llm.Option) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		params, err := m.params(msgs, llm.NewOptions(opts...), true)
		if err != nil {
			yield(llm.Chunk{}, fmt.Errorf("openai stream: %w", err))
			return
		}
		for attempt := 0; ; attempt++ {
			yielded, stopped, err := m.streamOnce(ctx, params, yield)
			if err == nil || stopped {
				return
			}
			if yielded {
				// Part of the answer is with the caller: a retry would repeat it.
				yield(llm.Chunk{}, fmt.Errorf("openai stream: %w", finalError(err)))
				return
			}
			if err = m.retry(ctx, "stream", attempt, err); err != nil {
				yield(llm.Chunk{}, fmt.Errorf("openai stream: %w", err))
				return
			}
		}
	}
}
