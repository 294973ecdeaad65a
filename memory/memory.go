// Package memory is Loom's long-term store: what an agent keeps across
// threads (a driver's preferences, an analyst's verified questions), as
// JSON objects under a namespace (a path of labels) and a key, for each
// API key apart. It is LangGraph's BaseStore: put, get, delete, search
// (a filter on values, and a query ranked by the cosine of embeddings
// when an llm.Embedder is configured, by BM25 when none is) and the list
// of namespaces, with a time to live per item that a read may refresh.
//
// Items live in the server's database (Items: store.DB, SQLite or
// PostgreSQL, one table versioned with store.Migrate) or on a Redis
// server (NewRedis); search scans the items under a namespace prefix, at
// most the 10,000 most recently updated of them.
// A graph's nodes reach the store of the key that runs them with From.
package memory

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Sentinel errors that callers branch on.
var (
	// ErrNotFound: no item under that namespace and key (or it expired).
	ErrNotFound = errors.New("store item not found")
	// ErrInvalid: a namespace, key, value or option is malformed or past
	// its limit; the error's text names which and why.
	ErrInvalid = errors.New("invalid store request")
	// ErrFull: the key holds as many items as it may.
	ErrFull = errors.New("store is full")
	// ErrEmbed: the embedder failed, so the item or the query could not be
	// embedded.
	ErrEmbed = errors.New("embedding failed")
)

// Item is a stored value. Its JSON is the LangGraph API's.
type Item struct {
	Namespace []string        `json:"namespace"`
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
	// Score is how well the item matched a search's query (nil without
	// one): a cosine with an embedder, BM25 against the query's own
	// score without.
	Score *float64 `json:"score,omitempty"`
}

// PutOptions are the options of a put.
type PutOptions struct {
	// TTL is how long the item lives after it is written or read with a
	// refresh; 0 keeps it until it is deleted.
	TTL time.Duration
	// Index says what a query searches: nil the whole value, an empty
	// non-nil slice nothing (the item is found by filters only), else the
	// fields named, as dotted paths ("title", "address.city").
	Index []string
}

// SearchOptions select and rank items under a namespace prefix.
type SearchOptions struct {
	// Filter keeps the items whose value has these fields equal to the
	// given JSON; a field's value may instead be an object of operators
	// ($eq, $ne, $gt, $gte, $lt, $lte). Fields are dotted paths.
	Filter map[string]json.RawMessage
	// Query ranks the items by how well they match it; "" orders them by
	// the time they were last updated, newest first.
	Query string
	// Limit (default 10) and Offset page the results.
	Limit, Offset int
	// NoRefresh leaves the time to live of the items found as it is.
	NoRefresh bool
}

// NamespaceOptions select namespaces. A label "*" in Prefix or Suffix
// matches any label.
type NamespaceOptions struct {
	Prefix, Suffix []string
	// MaxDepth, above 0, cuts longer namespaces to their first MaxDepth
	// labels (duplicates removed).
	MaxDepth int
	// Limit (default 100) and Offset page the results.
	Limit, Offset int
}

// Store is one API key's long-term store, as a graph's nodes and the
// server's API use it.
type Store interface {
	// Put writes value, a JSON object, under namespace and key.
	Put(ctx context.Context, namespace []string, key string, value json.RawMessage, opts PutOptions) error
	// Get returns the item, refreshing its time to live unless noRefresh;
	// ErrNotFound when there is none.
	Get(ctx context.Context, namespace []string, key string, noRefresh bool) (*Item, error)
	// Delete removes the item; deleting one that does not exist is no error.
	Delete(ctx context.Context, namespace []string, key string) error
	// Search returns the items under prefix that opts selects.
	Search(ctx context.Context, prefix []string, opts SearchOptions) ([]Item, error)
	// ListNamespaces returns the namespaces that hold items, sorted.
	ListNamespaces(ctx context.Context, opts NamespaceOptions) ([][]string, error)
}

type ctxKey struct{}

// With returns ctx carrying s, the store of the run's API key; the
// server gives it to every run and to an agent's own endpoints.
func With(ctx context.Context, s Store) context.Context {
	return context.WithValue(ctx, ctxKey{}, s)
}

// From returns the store ctx carries (see With), or nil when it carries
// none (a graph run outside the server).
func From(ctx context.Context) Store {
	s, _ := ctx.Value(ctxKey{}).(Store)
	return s
}
