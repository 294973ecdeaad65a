package openai_test

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/loomkit/loom/llm"
	"github.com/loomkit/loom/llm/llmtest"
	"github.com/loomkit/loom/llm/openai"
)

func TestEmbed(t *testing.T) {
	srv := llmtest.New(t)
	e, err := openai.NewEmbedder(openai.Config{BaseURL: srv.BaseURL(), APIKey: "sk-test", Model: "embed-small", Provider: openai.ProviderQwen})
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, 23)
	for i := range texts {
		texts[i] = fmt.Sprintf("订单 %d order items", i)
	}
	texts[5] = ""
	vecs, err := e.Embed(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != len(texts) {
		t.Fatalf("%d vectors for %d texts", len(vecs), len(texts))
	}
	for i, text := range texts {
		if i == 5 {
			text = " "
		}
		if want := llmtest.Embedding(text, llmtest.EmbedDims); !reflect.DeepEqual(vecs[i], want) {
			t.Errorf("text %d: vector differs from the endpoint's", i)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 3 { // DashScope takes 10 texts a request: 10 + 10 + 3
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	var sent []string
	for _, r := range reqs {
		if !strings.HasSuffix(r.Path, "/v1/embeddings") || r.Model() != "embed-small" || r.Header.Get("Authorization") != "Bearer sk-test" {
			t.Errorf("request %s model %q auth %q", r.Path, r.Model(), r.Header.Get("Authorization"))
		}
		sent = append(sent, r.Inputs()...)
	}
	if len(sent) != 23 || sent[22] != texts[22] || sent[5] != " " {
		t.Errorf("inputs sent %q", sent)
	}
}

func TestEmbedRetriesAndRejectsMalformed(t *testing.T) {
	var calls atomic.Int32
	body := `{"object":"list","model":"m","data":[{"object":"embedding","index":0,"embedding":[0.5,0.25]}],"usage":{"prompt_tokens":1,"total_tokens":1}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch n := calls.Add(1); {
		case n == 1:
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":{"message":"busy","type":"server_error"}}`))
		default:
			_, _ = w.Write([]byte(body)) // one vector, whatever was asked

		}
	}))
	defer srv.Close()
	e, err := openai.NewEmbedder(openai.Config{BaseURL: srv.URL + "/v1", Model: "m", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	w := &waits{}
	openai.SetEmbedWait(e, w.wait)
	vecs, err := e.Embed(t.Context(), []string{"hello"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(vecs, [][]float32{{0.5, 0.25}}) || len(w.list()) != 1 {
		t.Errorf("vectors %v after waits %v, want one retry", vecs, w.list())
	}
	_, err = e.Embed(t.Context(), []string{"a", "b"})
	if !errors.Is(err, llm.ErrMalformed) || !strings.Contains(err.Error(), "no embedding for text 2 of 2") {
		t.Errorf("one vector for two texts: %v", err)
	}
}

func TestNewEmbedderFromEnv(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_API_KEY", "k")
	t.Setenv("LOOM_EMBED_MODEL", "")
	t.Setenv("LOOM_EMBED_BASE_URL", "")
	if e, err := openai.NewEmbedderFromEnv(); e != nil || err != nil {
		t.Errorf("without LOOM_EMBED_MODEL: %v, %v; want none", e, err)
	}
	t.Setenv("LOOM_EMBED_MODEL", "text-embedding-3-small")
	t.Setenv("LOOM_EMBED_BASE_URL", "http://127.0.0.1:2/v1")
	t.Setenv("LOOM_EMBED_API_KEY", "k2")
	cfg := openai.EmbedderFromEnv()
	if cfg.Model != "text-embedding-3-small" || cfg.BaseURL != "http://127.0.0.1:2/v1" || cfg.APIKey != "k2" {
		t.Errorf("config %+v", cfg)
	}
	if e, err := openai.NewEmbedderFromEnv(); e == nil || err != nil {
		t.Errorf("with LOOM_EMBED_MODEL: %v, %v", e, err)
	}
	if _, err := openai.NewEmbedder(openai.Config{BaseURL: "http://x/v1"}); !errors.Is(err, openai.ErrConfig) || !strings.Contains(err.Error(), "LOOM_EMBED_MODEL") {
		t.Errorf("no model: %v", err)
	}
}
