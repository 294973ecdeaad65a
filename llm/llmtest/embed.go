package llmtest

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"

	"github.com/loomkit/loom/internal/bm25"
)

// EmbedDims is the length of the vectors the server's /embeddings
// endpoint returns when the request does not ask for "dimensions".
const EmbedDims = 256

// Embedding is the vector the server returns for text: a signed hashed
// bag of its words and character bigrams (see internal/bm25's tokenizer),
// L2-normalised, so texts that share words or Chinese characters have a
// positive cosine and the same text always gets the same vector. Text with
// no words gets the zero vector.
func Embedding(text string, dims int) []float32 {
	v := make([]float32, dims)
	an := bm25.Analyzer{WordNgrams: 1, CharMin: 2, CharMax: 2}
	for _, h := range an.Text(text) {
		sign := float32(1)
		if h>>63 == 1 {
			sign = -1
		}
		v[h%uint64(dims)] += sign
	}
	var norm float64
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	if norm > 0 {
		inv := float32(1 / math.Sqrt(norm))
		for i := range v {
			v[i] *= inv
		}
	}
	return v
}

// Inputs returns the texts an /embeddings request asked to embed: its
// "input", a string or a list of strings.
func (r Request) Inputs() []string {
	switch in := r.Body["input"].(type) {
	case string:
		return []string{in}
	case []any:
		out := make([]string, 0, len(in))
		for _, x := range in {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// embeddings answers an /embeddings request with Embedding of every input.
func (s *Server) embeddings(w http.ResponseWriter, req Request) {
	dims := EmbedDims
	if d, ok := req.Body["dimensions"].(float64); ok {
		if d < 1 || d > 4096 || d != math.Trunc(d) {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("llmtest: dimensions %v is not a whole number in 1..4096", d))
			return
		}
		dims = int(d)
	}
	inputs := req.Inputs()
	if len(inputs) == 0 {
		writeError(w, http.StatusBadRequest, `llmtest: "input" must be a non-empty string or list of strings`)
		return
	}
	data := make([]any, len(inputs))
	tokens := 0
	for i, text := range inputs {
		if text == "" {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("llmtest: input %d is empty", i))
			return
		}
		tokens += len(bm25.Tokens(bm25.Normalize(text)))
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": Embedding(text, dims)}
	}
	body, _ := json.Marshal(map[string]any{
		"object": "list",
		"data":   data,
		"model":  req.Model(),
		"usage":  map[string]any{"prompt_tokens": tokens, "total_tokens": tokens},
	})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}
