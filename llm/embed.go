package llm

import "context"

// Embedder turns texts into embedding vectors, for semantic retrieval.
//
// Embed returns one vector per text, in order, all of the same length.
// Implementations must be safe for concurrent use.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}
