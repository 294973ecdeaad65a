package openai

import (
	"context"
	"fmt"
	"net/http"
	"os"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/loomkit/loom/llm"
)

// Embedder is an llm.Embedder over an OpenAI-compatible /embeddings
// endpoint. It shares Model's timeouts and retries. It is safe for
// concurrent use.
type Embedder struct {
	m     *Model
	svc   oa.EmbeddingService
	batch int
}

var _ llm.Embedder = (*Embedder)(nil)

// EmbedderFromEnv returns an embeddings Config read from the environment:
// the model LOOM_EMBED_MODEL, at LOOM_EMBED_BASE_URL with
// LOOM_EMBED_API_KEY when set (for a provider other than the chat
// model's), else at OPENAI_BASE_URL with OPENAI_API_KEY.
func EmbedderFromEnv() Config {
	cfg := FromEnv()
	cfg.Model = os.Getenv("LOOM_EMBED_MODEL")
	if u := os.Getenv("LOOM_EMBED_BASE_URL"); u != "" {
		cfg.BaseURL, cfg.APIKey, cfg.Provider = u, os.Getenv("LOOM_EMBED_API_KEY"), ProviderAuto
	}
	return cfg
}

// NewEmbedderFromEnv returns the embedder the environment configures (see
// EmbedderFromEnv), or nil and no error when it configures none — no
// LOOM_EMBED_MODEL, or neither a key nor a base URL — so that retrieval
// runs on words alone.
func NewEmbedderFromEnv() (llm.Embedder, error) {
	cfg := EmbedderFromEnv()
	if cfg.Model == "" || (cfg.APIKey == "" && cfg.BaseURL == "") {
		return nil, nil
	}
	e, err := NewEmbedder(cfg)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// NewEmbedder returns an Embedder for cfg, whose Model names the
// embedding model (e.g. "text-embedding-3-small").
func NewEmbedder(cfg Config) (*Embedder, error) {
	if cfg.Model == "" {
		return nil, fmt.Errorf("%w: the embedding model is empty (set LOOM_EMBED_MODEL)", ErrConfig)
	}
	m, err := New(cfg)
	if err != nil {
		return nil, err
	}
	batch := 64
	if m.provider == ProviderQwen {
		batch = 10 // DashScope takes at most 10 texts a request
	}
	return &Embedder{m: m, svc: oa.NewEmbeddingService(m.reqOpts...), batch: batch}, nil
}

// Embed returns one vector per text, in order, asking for as many texts
// a request as providers accept. An empty text is sent as one space,
// since providers reject empty input.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += e.batch {
		part := texts[start:min(len(texts), start+e.batch)]
		vecs, err := e.embed(ctx, part)
		if err != nil {
			return nil, fmt.Errorf("openai embed texts %d–%d of %d: %w", start+1, start+len(part), len(texts), err)
		}
		out = append(out, vecs...)
	}
	return out, nil
}

func (e *Embedder) embed(ctx context.Context, texts []string) ([][]float32, error) {
	input := make([]string, len(texts))
	for i, t := range texts {
		if input[i] = t; t == "" {
			input[i] = " "
		}
	}
	params := oa.EmbeddingNewParams{
		Model:          e.m.cfg.Model,
		Input:          oa.EmbeddingNewParamsInputUnion{OfArrayOfStrings: input},
		EncodingFormat: oa.EmbeddingNewParamsEncodingFormatFloat,
	}
	for attempt := 0; ; attempt++ {
		vecs, err := e.embedOnce(ctx, params, len(texts))
		if err == nil {
			return vecs, nil
		}
		if err = e.m.retry(ctx, "embed", attempt, err); err != nil {
			return nil, err
		}
	}
}

func (e *Embedder) embedOnce(ctx context.Context, params oa.EmbeddingNewParams, n int) ([][]float32, error) {
	actx, cancel := context.WithTimeoutCause(ctx, e.m.cfg.Timeout, errAttemptTimeout)
	defer cancel()
	var raw *http.Response
	resp, err := e.svc.New(actx, params, option.WithResponseInto(&raw))
	if err != nil {
		return nil, e.m.attemptError(ctx, actx, raw, err)
	}
	out := make([][]float32, n)
	for _, d := range resp.Data {
		if d.Index < 0 || int(d.Index) >= n || out[d.Index] != nil {
			return nil, &failure{err: fmt.Errorf("%w: embedding index %d for %d texts", llm.ErrMalformed, d.Index, n)}
		}
		v := make([]float32, len(d.Embedding))
		for i, x := range d.Embedding {
			v[i] = float32(x)
		}
		out[d.Index] = v
	}
	for i, v := range out {
		switch {
		case v == nil:
			return nil, &failure{err: fmt.Errorf("%w: no embedding for text %d of %d", llm.ErrMalformed, i+1, n)}
		case len(v) != len(out[0]):
			return nil, &failure{err: fmt.Errorf("%w: embeddings of %d and %d dimensions", llm.ErrMalformed, len(out[0]), len(v))}
		}
	}
	return out, nil
}
