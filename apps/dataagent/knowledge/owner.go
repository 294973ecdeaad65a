package knowledge

import (
	"context"

	"github.com/loomkit/loom/server"
)

type ownerKey struct{}

// WithOwner returns ctx whose calls to a Store are about owner's
// knowledge, for code that works for an API key outside a request or run
// of Loom's server (which set the owner themselves: server.Caller).
func WithOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

// ownerOf is whose knowledge a call with ctx is about: WithOwner's, else
// the server's caller ("" without keys).
func ownerOf(ctx context.Context) string {
	if o, ok := ctx.Value(ownerKey{}).(string); ok {
		return o
	}
	return server.Caller(ctx)
}
