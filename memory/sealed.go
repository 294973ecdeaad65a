package memory

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/loomkit/loom/seal"
)

// An item's value, the text a query searches and the text's embedding
// (which can be turned back into words) are stored sealed when the store
// has a Codec (Options.Codec; Items takes its database's, see
// store.WithCodec). The owner, namespace, key and times stay in the
// clear: they are what the database pages and orders by.
//
// Search works on sealed items as on clear ones, because it already
// filters and ranks in this process (the newest maxScan items under the
// prefix): each item read is opened first, which costs one decryption
// per field per item. Items stored before sealing was turned on read as
// they are and are sealed when next written.

// stored returns what a put keeps of value: the value, the text a query
// searches and its embedding (see indexed), sealed by opts.Codec when it
// is set.
func (o *Options) stored(ctx context.Context, value json.RawMessage, opts PutOptions) (string, string, []byte, error) {
	body, vec, err := indexed(ctx, o.Embedder, value, opts)
	if err != nil || o.Codec == nil {
		return string(value), body, vec, err
	}
	v, err := o.Codec.Seal(value)
	if err != nil {
		return "", "", nil, fmt.Errorf("seal value: %w", err)
	}
	if body != "" {
		b, err := o.Codec.Seal([]byte(body))
		if err != nil {
			return "", "", nil, fmt.Errorf("seal index text: %w", err)
		}
		body = string(b)
	}
	if len(vec) > 0 {
		if vec, err = o.Codec.Seal(vec); err != nil {
			return "", "", nil, fmt.Errorf("seal embedding: %w", err)
		}
	}
	return string(v), body, vec, nil
}

// open opens the sealed fields of r in place (see stored).
func (r *row) open(c seal.Codec) error {
	if c == nil {
		return nil
	}
	v, err := c.Open([]byte(r.value))
	if err != nil {
		return fmt.Errorf("item %s in %s: %w", r.key, r.ns, err)
	}
	b, err := c.Open([]byte(r.body))
	if err != nil {
		return fmt.Errorf("item %s in %s: index text: %w", r.key, r.ns, err)
	}
	if r.vec, err = c.Open(r.vec); err != nil {
		return fmt.Errorf("item %s in %s: embedding: %w", r.key, r.ns, err)
	}
	r.value, r.body = string(v), string(b)
	return nil
}
