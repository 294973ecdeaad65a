package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/loomkit/loom/llm"
)

// Limits on what one request may ask: they hold whatever the request says
// about itself.
const (
	maxLabel     = 256       // bytes in a namespace label
	maxDepth     = 16        // labels in a namespace
	maxKey       = 512       // bytes in a key
	maxValue     = 256 << 10 // bytes in a value's JSON
	maxFields    = 32        // index fields of a put
	maxQuery     = 4 << 10   // bytes in a search query
	maxLimit     = 1000      // results a search or a list returns
	maxOffset    = 100_000   // results a search or a list skips
	maxFilter    = 32        // fields a filter names
	maxScan      = 10_000    // items a search scans, the newest
	maxIndexText = 8 << 10   // bytes of an item's text that are searched
	maxTTL       = 3650 * 24 * time.Hour
	// DefaultMaxItems is how many items one API key may hold when
	// Options.MaxItems is 0.
	DefaultMaxItems = 100_000
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// checkLabels checks a namespace (or a prefix, which may be empty when
// empty is true) and returns its stored form: each label followed by ".".
func checkLabels(what string, ns []string, empty, wild bool) (string, error) {
	if len(ns) == 0 && !empty {
		return "", invalid("%s is empty: give at least one label", what)
	}
	if len(ns) > maxDepth {
		return "", invalid("%s has %d labels; at most %d", what, len(ns), maxDepth)
	}
	var b strings.Builder
	for i, l := range ns {
		switch {
		case l == "":
			return "", invalid("%s label %d is empty", what, i+1)
		case len(l) > maxLabel:
			return "", invalid("%s label %d is %d bytes long; at most %d", what, i+1, len(l), maxLabel)
		case strings.Contains(l, "."):
			return "", invalid("%s label %q contains a period, which separates labels", what, l)
		case !printable(l):
			return "", invalid("%s label %d is not printable UTF-8 text", what, i+1)
		case l == "*" && !wild:
			return "", invalid("%s label %d is *, which only namespace listings take as a wildcard", what, i+1)
		}
		b.WriteString(l)
		b.WriteByte('.')
	}
	return b.String(), nil
}

func checkKey(key string) error {
	switch {
	case key == "":
		return invalid("key is empty")
	case len(key) > maxKey:
		return invalid("key is %d bytes long; at most %d", len(key), maxKey)
	case !printable(key):
		return invalid("key is not printable UTF-8 text")
	}
	return nil
}

// printable reports whether s is valid UTF-8 with no control characters
// (NUL included, which PostgreSQL cannot store).
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

func checkValue(v json.RawMessage) error {
	if len(v) > maxValue {
		return invalid("value is %d bytes of JSON; at most %d", len(v), maxValue)
	}
	v = bytes.TrimSpace(v)
	if len(v) == 0 || v[0] != '{' || !json.Valid(v) {
		return invalid("value must be a JSON object")
	}
	if bytes.Contains(v, []byte(`\u0000`)) {
		return invalid("value contains the character NUL, which cannot be stored")
	}
	return nil
}

func checkPut(opts PutOptions) error {
	if opts.TTL < 0 || opts.TTL > maxTTL {
		return invalid("ttl must be above 0 and at most %d minutes", int(maxTTL/time.Minute))
	}
	if len(opts.Index) > maxFields {
		return invalid("index names %d fields; at most %d", len(opts.Index), maxFields)
	}
	for _, f := range opts.Index {
		if f == "" || len(f) > maxLabel || !printable(f) || strings.Contains(f, "[") {
			return invalid("index field %q: want a dotted path of field names (title, address.city)", f)
		}
	}
	return nil
}

// TTLMinutes converts a LangGraph ttl, in minutes, to a duration: 0 for
// none (nil); an error wrapping ErrInvalid when it is not above 0 or is
// longer than ten years.
func TTLMinutes(m *float64) (time.Duration, error) {
	if m == nil {
		return 0, nil
	}
	if math.IsNaN(*m) || *m <= 0 || *m > float64(maxTTL/time.Minute) {
		return 0, invalid("ttl is %v minutes; want a number above 0 and at most %d", *m, int(maxTTL/time.Minute))
	}
	return time.Duration(*m * float64(time.Minute)), nil
}

func checkPage(limit, offset, def int) (int, int, error) {
	if limit == 0 {
		limit = def
	}
	if limit < 0 || limit > maxLimit {
		return 0, 0, invalid("limit is %d; want 1 to %d", limit, maxLimit)
	}
	if offset < 0 || offset > maxOffset {
		return 0, 0, invalid("offset is %d; want 0 to %d", offset, maxOffset)
	}
	return limit, offset, nil
}

// split is the labels of a stored namespace.
func split(ns string) []string {
	return strings.Split(strings.TrimSuffix(ns, "."), ".")
}

// searchRequest is a search's request, checked: the namespace prefix as
// stored, the page, the filter, and the query with its embedding when an
// embedder is set.
type searchRequest struct {
	prefix        string
	limit, offset int
	filter        filter
	query         string
	qvec          []float32
}

// checkSearch checks a search's prefix and options the same way for every
// backend, and embeds the query through e (nil: none).
func checkSearch(ctx context.Context, e llm.Embedder, prefix []string, opts SearchOptions) (searchRequest, error) {
	var r searchRequest
	var err error
	if r.prefix, err = checkLabels("namespace_prefix", prefix, true, false); err != nil {
		return r, err
	}
	if r.limit, r.offset, err = checkPage(opts.Limit, opts.Offset, 10); err != nil {
		return r, err
	}
	if len(opts.Query) > maxQuery {
		return r, invalid("query is %d bytes long; at most %d", len(opts.Query), maxQuery)
	}
	if !printable(opts.Query) {
		return r, invalid("query is not printable UTF-8 text")
	}
	if r.filter, err = parseFilter(opts.Filter); err != nil {
		return r, err
	}
	r.query = strings.TrimSpace(opts.Query)
	if e != nil && r.query != "" {
		vs, err := e.Embed(ctx, []string{r.query})
		if err != nil || len(vs) != 1 {
			return r, fmt.Errorf("store search: %w: %v", ErrEmbed, err)
		}
		r.qvec = vs[0]
	}
	return r, nil
}

// checkNamespaces checks ListNamespaces' options the same way for every
// backend and returns its page.
func checkNamespaces(opts NamespaceOptions) (limit, offset int, err error) {
	if _, err := checkLabels("prefix", opts.Prefix, true, true); err != nil {
		return 0, 0, err
	}
	if _, err := checkLabels("suffix", opts.Suffix, true, true); err != nil {
		return 0, 0, err
	}
	if opts.MaxDepth < 0 || opts.MaxDepth > maxDepth {
		return 0, 0, invalid("max_depth is %d; want 1 to %d", opts.MaxDepth, maxDepth)
	}
	return checkPage(opts.Limit, opts.Offset, 100)
}
